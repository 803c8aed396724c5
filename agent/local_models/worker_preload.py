"""Imported once by the fork server of the model worker processes (never by the app itself).

It loads what the GIL-bound model functions use and runs their warm-ups (numba compiles
pYIN's Viterbi pass; librosa loads its submodules lazily), so every worker forked from the
server starts warm and shares those pages with the server and the other workers instead of
holding its own copy (``agent.local_models.executor``).
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from agent.local_models.librosa_warm_up import compile_librosa_paths

    compile_librosa_paths()  # not music.warm_up(): notes run in the app's threads
