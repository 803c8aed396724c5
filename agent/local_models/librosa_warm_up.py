"""Compile librosa's numba code paths that the signal and music tools use, one process at a
time (``compile_lock``): for processes that start together, such as the model workers' fork
server and the research bench's workers."""

from __future__ import annotations

from agent.local_models import music, signal
from agent.local_models.compile_lock import numba_compile_lock


def compile_librosa_paths() -> None:
    """Compile (or load from numba's cache) pYIN and the music analysis under the lock."""
    signal.warm_up()  # takes the lock itself
    with numba_compile_lock():
        music.analyze(music.warm_up_tone())
