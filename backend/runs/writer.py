"""How ``RunManager`` (``backend.runs.manager``) stores a run's events and publishes them: in small
batches (group commit), each published to the run's followers only once it is committed, and
the question's ``on_end`` with its last batch. Apart from starting and following runs: this is
the one place that decides when an event is written and who hears it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from agent import events as ev
from backend.runs import faults
from backend.runs.db_threads import DbThreads
from backend.runs.live_run import LiveRun, RunGroup
from storage import Store
from storage.schemas import RunInfo

log = logging.getLogger("audio_agent.runs")

# How long a batch of events gathers before it is written: fewer transactions and thread
# trips per run (a fast model's whole run can be one batch), for at most this much later on
# the page. A run's last event does not wait.
GATHER_S = 0.02
# Text deltas alone gather longer: a model streaming from this machine's own cores sends a
# token every few tens of milliseconds, each of which would otherwise be a write of its own
# (about 2 ms of CPU taken from the model). Any other event cuts the wait short, and so does
# the first delta of a stretch of text: a reply's first words show as soon as they come.
DELTA_GATHER_S = 0.1


class RunEventWriter:
    """Writing and publishing a live run's events; a part of ``RunManager``.

    ``lock``: the manager's, under which a batch is kept and published in one step (see
    ``RunFollowing.follow``); ``closing``: whether the manager is shutting down (no
    ``on_end`` then)."""

    def __init__(
        self,
        store: Store,
        db: DbThreads,
        lock: threading.RLock,
        *,
        gather_s: float,
        delta_gather_s: float,
        closing: Callable[[], bool],
    ) -> None:
        self.store = store
        self.gather_s = gather_s
        self.delta_gather_s = delta_gather_s
        self._db = db
        self._lock = lock
        self._closing = closing

    def finish_group(self, group: RunGroup, known: dict[str, RunInfo] | None = None) -> None:
        """``on_end`` of a group whose runs have all ended (in a database thread), with the
        runs as stored (``known``: those just written). Its failure is logged: the runs
        themselves are stored."""
        group.finished = True
        if group.on_end is None:
            return
        known = known or {}
        try:
            infos = [known.get(r) or self.store.runs.get_run(r) for r in group.run_ids]
            group.on_end([i for i in infos if i is not None])
        except Exception:  # noqa: BLE001
            log.exception("after runs %s", ", ".join(group.run_ids))

    def add(self, live: LiveRun, event: ev.Event) -> None:
        """Queue an event for the next batch; a batch is written while the next gathers.
        After a failed write nothing more is: the run ends with the fault
        (``backend.runs.unstored_ends``)."""
        if live.write_error is not None:
            return
        live.last_seq = event.seq
        if event.type in ev.TERMINAL_TYPES:
            live.ending.set()
        if event.type != "planner_delta" or live.last_type != "planner_delta":
            live.urgent.set()
        live.last_type = event.type
        live.pending.append(event)
        if live.flusher is None or live.flusher.done():
            live.flusher = self._db.loop.create_task(self._flush(live))

    async def _flush(self, live: LiveRun) -> None:
        while live.pending and not live.closed_elsewhere and live.write_error is None:
            if self.gather_s and not live.terminal:
                await self._gather(live)
            live.urgent.clear()  # what comes next gathers afresh
            batch, live.pending = live.pending, []
            try:
                await self._db.run(self.write, live, batch)
            except LookupError as exc:  # RunClosedError, or its conversation was deleted
                # Another process closed it (its lease expired): stop, write nothing more,
                # and tell the followers how it ended (the other process stored that).
                log.warning("run %s stopped: %s", live.run_id, exc)
                live.closed_elsewhere = True
                live.pending.clear()
                if live.inner is not None:
                    live.inner.cancel()
                await self.publish_stored_end(live)
                return
            except Exception as exc:  # the database is gone or full: nothing is stored
                # Nor published: followers hear only what is stored, and then how the run
                # ended instead (``backend.runs.unstored_ends``), never a success not stored.
                log.error(
                    "storing events of run %s failed (%s): %s",
                    live.run_id,
                    faults.describe(exc).kind,
                    faults.first_line(exc),
                )
                live.write_error = exc
                live.pending.clear()
                if live.inner is not None:
                    live.inner.cancel()
                return

    async def _gather(self, live: LiveRun) -> None:
        """Let a batch gather: ``gather_s``, or until the run's last event; then, while it
        holds only text deltas, up to ``delta_gather_s`` in all, or until another event."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.gather_s):
                await live.ending.wait()
        longer = self.delta_gather_s - self.gather_s
        if longer > 0 and not live.urgent.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(longer):
                    await live.urgent.wait()

    def write(self, live: LiveRun, batch: list[ev.Event]) -> None:
        """Store a batch and publish it, in a database thread: followers hear it without a
        trip back through the manager's loop. The last batch of the last run of a question
        to end also runs its group's ``on_end`` first, and then tells the followers that
        the run has ended (they need not wait for ``_end``)."""
        info = self.store.runs.append_events(batch)
        live.stored_seq = batch[-1].seq
        group = live.group
        ended = batch[-1].type in ev.TERMINAL_TYPES
        if ended and group.left == 1 and not group.finished and not self._closing():
            self.finish_group(group, {live.run_id: info} if info is not None else {})
        self.publish(live, batch, ended=ended and group.finished)

    def publish(self, live: LiveRun, batch: list[ev.Event], ended: bool = False) -> None:
        with self._lock:  # kept and published in one step: see ``follow``
            live.stored.extend(batch)
            subscribers = list(live.subscribers)
        for sub in subscribers:
            sub.send(live.run_id, batch)
            if ended:
                sub.send(live.run_id, None)

    async def publish_stored_end(self, live: LiveRun) -> None:
        """The terminal event another process stored for this run, to its followers here."""
        try:
            stored = await self._db.run(self.store.runs.run_events, live.run_id, live.stored_seq)
        except Exception:  # noqa: BLE001 - followers still see the stream end
            log.exception("reading how run %s ended failed", live.run_id)
            return
        ends = [e for e in stored if e.type in ev.TERMINAL_TYPES]
        if ends:
            live.ending.set()
            self.publish(live, ends[-1:])

    async def drain(self, live: LiveRun) -> None:
        while live.flusher is not None and not live.flusher.done():
            await asyncio.shield(live.flusher)
        if live.pending and not live.closed_elsewhere and live.write_error is None:
            live.flusher = self._db.loop.create_task(self._flush(live))
            await asyncio.shield(live.flusher)
