"""The run manager and what it owns: admission and the queue, per-owner limits and fairness,
leases on runs, the live run its followers read, the writer that stores a run's events, and the
test hooks that make it fail on purpose (faults).
"""
