"""Who may do what, and how much: identities and sign-in (cookies, passwords, API tokens,
Hugging Face OAuth), the users, the Gradio session and file guards, the security headers and
client addresses, and the limits on bodies, connections, logs and upload quota.
"""
