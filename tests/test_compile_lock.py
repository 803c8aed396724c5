"""librosa's numba functions are compiled one process at a time (numba#10128)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent.local_models import compile_lock, librosa_warm_up, music, signal


def lock_is_held(path: Path) -> bool:
    """Whether someone (another process, or another open file here) holds the lock."""
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


@pytest.fixture()
def lock_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # read when locking, not by numba now
    return compile_lock.lock_path()


def test_another_process_waits_while_one_compiles(lock_in: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from agent.local_models.compile_lock import numba_compile_lock\n"
            "with numba_compile_lock():\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(lock_in.parent)},
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        assert lock_is_held(lock_in)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=30) == 0
        assert not lock_is_held(lock_in)
    finally:
        holder.kill()


def test_the_warm_ups_compile_under_the_lock(
    lock_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def record(name: str):
        def during_compile(samples: np.ndarray) -> None:
            seen.append(f"{name}:{'held' if lock_is_held(lock_in) else 'free'}")

        return during_compile

    monkeypatch.setattr(signal, "facts", record("pitch"))
    monkeypatch.setattr(music, "analyze", record("music"))
    librosa_warm_up.compile_librosa_paths()
    assert seen == ["pitch:held", "music:held"]
    assert not lock_is_held(lock_in)


def test_the_lock_is_released_when_a_compile_fails(lock_in: Path) -> None:
    with pytest.raises(RuntimeError), compile_lock.numba_compile_lock():
        raise RuntimeError("compile failed")
    assert not lock_is_held(lock_in)
