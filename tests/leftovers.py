"""No process a test started outlives the test session: at its end (in each xdist worker, or
in the one pytest process) every process still running below this one is listed, given a
moment to exit, then killed, and the session fails naming them.

Loaded as a pytest plugin for every test run (``-p tests.leftovers`` in pyproject.toml). The
check is a session fixture's teardown, so it runs after every other fixture has stopped what
it started, and its failure is reported by xdist like any other. Helpers of this process that
live as long as it does are not leftovers: multiprocessing's resource tracker, fork server and
the workers of process pools (spawned, or forked from pytest itself: those carry its command
line), which a pool's owner shuts down when pytest exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

GRACE_S = 15.0  # for a process that was told to stop and is exiting on a loaded machine
# multiprocessing's helpers and the workers of process pools (shut down when pytest exits)
HELPERS = (
    "multiprocessing.resource_tracker",
    "multiprocessing.forkserver",
    "multiprocessing.spawn",
)


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state letter) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0]


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def descendants(root: int) -> list[int]:
    """Live (not zombie) processes below ``root``, parents before children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[1] != "Z":
                children.setdefault(stat[0], []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def leftovers(root: int | None = None) -> dict[int, str]:
    """Processes below ``root`` (this one) that are not its lifelong helpers: pid -> command."""
    root = root or os.getpid()
    own = command_line(root)
    found = {}
    for pid in descendants(root):
        command = command_line(pid)
        if command and command != own and not any(h in command for h in HELPERS):
            found[pid] = command
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True, scope="session")
def _no_process_outlives_the_session() -> Iterator[None]:
    if not Path("/proc/self/stat").exists():  # not Linux: nothing to look at
        yield
        return
    yield
    deadline = time.monotonic() + GRACE_S
    found = leftovers()
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = leftovers()
    if found:
        _kill(list(found))
        lines = "\n".join(f"  {pid}: {cmd[:300]}" for pid, cmd in found.items())
        pytest.fail(f"processes left running by the tests (now killed):\n{lines}", pytrace=False)
