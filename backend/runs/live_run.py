"""One run while this process runs it (``backend.runs.manager``): its record, its question's
group and its followers. Apart from the manager so that each part of it (writing, the queue,
following) can name the record it works on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from agent import events as ev
from agent.context import RunRequest
from storage.schemas import RunInfo


@dataclass(eq=False)
class Subscriber:
    """One follower (``RunManager.follow``): published batches go to its queue on its loop;
    None says the run has ended."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[str, list[ev.Event] | None]]

    def send(self, run_id: str, batch: list[ev.Event] | None) -> None:
        with contextlib.suppress(RuntimeError):  # the follower's loop is closed: it went away
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (run_id, batch))


@dataclass
class RunGroup:
    """The runs of one question (a compare question has several) and what runs once all
    of them have ended."""

    run_ids: list[str]
    on_end: Callable[[list[RunInfo]], None] | None
    left: int = 0
    finished: bool = False  # on_end has run (or is no longer to run)


class LiveRun:
    """One run in this process: its task, its unwritten events and its followers."""

    def __init__(self, request: RunRequest, owner: str, group: RunGroup, address: str) -> None:
        self.request = request
        self.owner = owner
        self.address = address
        self.group = group
        self.run_id = request.run_id
        self.last_seq = 0  # of the last event produced
        self.stored_seq = 0  # of the last event committed (and published)
        self.pending: list[ev.Event] = []
        # Every event of the run stored so far, in order: a follower that joins while the
        # run is live here reads them from memory instead of the database.
        self.stored: list[ev.Event] = []
        self.flusher: asyncio.Task[None] | None = None
        self.inner: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None  # "cancelled" (Stop) or "interrupted" (shutdown)
        self.closed_elsewhere = False
        self.write_error: BaseException | None = None
        self.ended_as: str | None = None  # the kind of the run_failed the manager added
        self.slot: asyncio.Future[None] | None = None  # set while waiting in the queue
        self.position = 0  # in the queue, as last announced
        self.rank = 0  # runs of its address waiting ahead of it when it joined the queue
        self.subscribers: set[Subscriber] = set()
        self.ending = asyncio.Event()  # set by the run's last event: stop gathering
        # set by any event but a text delta, and by the first delta after one: gather no longer
        self.urgent = asyncio.Event()
        self.last_type = ""  # of the last event produced

    @property
    def terminal(self) -> bool:
        """The run's last event has been added here (or read back from another process)."""
        return self.ending.is_set()
