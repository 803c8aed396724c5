"""``RunManager``'s slots (``backend.runs.manager``): at most ``max_running`` runs hold one at once;
the others wait in a queue that takes turns between client addresses, and hear their place
in it as ``queued`` events. Apart from admission (which refuses before anything is stored)
and from the run task (which only takes and gives back its slot)."""

from __future__ import annotations

import asyncio
import threading

from agent import events as ev
from backend.runs.fairness import queue_position
from backend.runs.limits import RunLimits
from backend.runs.live_run import LiveRun
from backend.runs.writer import RunEventWriter


class RunQueue:
    """The slots and the queue for them; a part of ``RunManager``. Owns the counts that
    admission reads (``running``, ``waiting``, ``starting``); ``lock`` is the manager's."""

    def __init__(
        self,
        limits: RunLimits,
        lock: threading.RLock,
        loop: asyncio.AbstractEventLoop,
        writer: RunEventWriter,
    ) -> None:
        self._limits = limits
        self._lock = lock
        self._loop = loop
        self._writer = writer  # a ``queued`` event is written as any other
        self._waiting: list[LiveRun] = []  # in the order they get a slot
        self._running = 0
        self._starting = 0  # started, not yet holding a slot or waiting

    @property
    def running(self) -> int:
        """Runs holding a slot."""
        return self._running

    @property
    def waiting(self) -> int:
        """Runs waiting in the queue."""
        return len(self._waiting)

    @property
    def starting(self) -> int:
        """Runs started, not yet holding a slot or waiting."""
        return self._starting

    def starts(self) -> None:
        """A run was started (under the manager's lock): it asks for a slot soon."""
        self._starting += 1

    async def acquire_slot(self, live: LiveRun) -> None:
        most = self._limits.max_running
        with self._lock:
            self._starting -= 1
            if not most or (self._running < most and not self._waiting):
                self._running += 1
                return
            live.slot = self._loop.create_future()
            self._join_queue(live)
        self._announce_queue()
        try:
            await live.slot
        except asyncio.CancelledError:
            if live.slot.done() and not live.slot.cancelled():
                self.release_slot()  # granted as we were cancelled: give it back
            raise
        finally:
            live.slot = None

    def _join_queue(self, live: LiveRun) -> None:
        """Take turns between addresses (``backend.runs.fairness.queue_position``)."""
        index, live.rank = queue_position(self._waiting, live.address)
        self._waiting.insert(index, live)

    def leave_queue(self, live: LiveRun) -> None:
        if live in self._waiting:
            self._waiting.remove(live)
            self._announce_queue()

    def release_slot(self) -> None:
        self._running -= 1
        most = self._limits.max_running
        moved = False
        while self._waiting and (not most or self._running < most):
            nxt = self._waiting.pop(0)
            if nxt.slot is not None and not nxt.slot.done():
                self._running += 1
                nxt.slot.set_result(None)
                moved = True
        if moved:
            self._announce_queue()

    def _announce_queue(self) -> None:
        for index, live in enumerate(self._waiting):
            if live.position == index + 1:
                continue
            live.position = index + 1
            self._writer.add(
                live,
                ev.Queued(
                    run_id=live.run_id,
                    seq=live.last_seq + 1,
                    position=index + 1,
                    ahead=index,
                    running=self._running,
                ),
            )
