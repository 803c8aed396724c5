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


def main(argv: list[str] | None = None) -> int:
    """``python -m agent.local_models.librosa_warm_up``: compile into numba's cache now (the
    Dockerfile runs it at build time, so a container's first start does not)."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m agent.local_models.librosa_warm_up",
        description="Compile librosa's numba functions the local tools use into numba's cache "
        "(NUMBA_CACHE_DIR); later starts load them.",
    ).parse_args(argv)
    compile_librosa_paths()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
