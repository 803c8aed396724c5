"""Settings and where the app runs: the settings read from the environment, the hosting checks,
a Hugging Face Space (its generator and notices), and start-up.
"""
