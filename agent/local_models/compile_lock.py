"""One process at a time compiles librosa's numba functions into the on-disk cache.

librosa asks numba to keep what it compiles next to its sources (``cache=True``). When two
processes compile the same ``guvectorize`` functions at once, they can tag them differently
and write cache files that do not match; every later process that loads them crashes with a
segmentation fault (numba issue #10128, https://github.com/numba/numba/issues/10128; fix
proposed in numba PR #10545, not released as of 2026-12-01). It happened here when the
research bench's worker processes started together. The warm-ups that compile those
functions therefore run under an exclusive file lock: the first process compiles and writes
the cache, the others wait and then load finished files.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; compiles there are not serialised
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = "audio-agent-numba-compile.lock"


def lock_path() -> Path:
    """Beside numba's cache when ``NUMBA_CACHE_DIR`` moves it, else in the temp folder
    (every process on this machine sees the same one)."""
    folder = os.environ.get("NUMBA_CACHE_DIR") or tempfile.gettempdir()
    return Path(folder) / LOCK_NAME


@contextlib.contextmanager
def numba_compile_lock() -> Iterator[None]:
    """Hold the machine-wide lock while compiling; released on exit, also on error."""
    if fcntl is None:
        yield
        return
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
