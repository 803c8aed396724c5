"""The local models' warm-up in the background, started once the server listens (the app's
lifespan), in one thread at a lower CPU priority: the page and the API answer first, the
models load in the time that is left. Its progress per tool is ``status()`` (``/api/health``
and the page's tool list)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any

from agent import warm_state

log = logging.getLogger("audio_agent")
NICENESS = 10  # added to the warm-up thread's (and the threads and processes it starts)
_STARTED = threading.Event()


def start() -> bool:
    """Start the warm-up thread (once per process); False when it was started before."""
    if _STARTED.is_set():
        return False
    _STARTED.set()
    warm_state.STATE.begin()  # shown as started at once, before the thread runs
    threading.Thread(target=run, daemon=True, name="warm-up").start()
    return True


def lower_priority(niceness: int = NICENESS) -> None:
    """Lower this thread's CPU priority (Linux: per thread; what it starts inherits it)."""
    with contextlib.suppress(AttributeError, OSError):  # elsewhere: normal priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)


def run() -> None:
    """Load the local models so the first question is not slow (in this thread)."""
    lower_priority()
    from agent.registry import warm_up

    timings = warm_up(log.warning)
    total = sum(timings.values())
    log.info("local models ready in %.1f s (%s)", total,
             ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))  # fmt: skip


def status() -> dict[str, Any]:
    """The warm-up's state per model and per local tool (``agent.warm_state``)."""
    return warm_state.snapshot()
