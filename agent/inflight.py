"""Identical tool calls in flight, joined: one computation, however many runs ask.

Two runs (or the four columns of compare mode) asking for the same tool on the same audio
with the same arguments and model (the cache key) while the first call is still running
wait for that call instead of starting their own. The computation is cancelled only when
every caller waiting for it has gone (a stopped run does not cancel its siblings' work).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    def __init__(self, task: asyncio.Task[T]) -> None:
        self.task = task
        self.waiters = 0
        self.starts = 1
        self.abandoned = False  # cancelled because nobody waits; may not be done yet


class InflightCalls(Generic[T]):
    """Calls now running, by key; ``run`` starts one or joins the one already running."""

    def __init__(self) -> None:
        self._entries: dict[tuple[int, str], _Entry[T]] = {}
        self.started = 0  # computations started (tests count these)
        self.joined = 0  # callers served by a computation someone else started

    def running(self, key: str) -> bool:
        return self._key(key) in self._entries

    @staticmethod
    def _key(key: str) -> tuple[int, str]:
        # Per event loop: a task of another (closed) loop can never be awaited here.
        return id(asyncio.get_running_loop()), key

    async def run(self, key: str, start: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """The result of the call under ``key``, and whether it was joined (not started)."""
        full = self._key(key)
        entry = self._entries.get(full)
        # A computation cancelled a moment ago is not done until the loop runs it once more:
        # a caller arriving in between starts its own instead of joining a cancellation.
        joined = entry is not None and not entry.task.done() and not entry.abandoned
        if not joined:
            task = asyncio.ensure_future(start())
            entry = _Entry(task)
            self._entries[full] = entry
            self.started += 1

            def forget(_: asyncio.Task[T], full: tuple[int, str] = full) -> None:
                if self._entries.get(full) is entry:
                    del self._entries[full]

            task.add_done_callback(forget)
        else:
            self.joined += 1
        assert entry is not None
        entry.waiters += 1
        try:
            return await asyncio.shield(entry.task), joined
        finally:
            entry.waiters -= 1
            if entry.waiters == 0 and not entry.task.done():
                entry.abandoned = True
                entry.task.cancel()  # nobody is waiting any more


# Process-wide: every run in this process joins here.
CALLS: InflightCalls = InflightCalls()
