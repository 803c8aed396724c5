"""Following runs (``RunManager.follow``, ``backend.runs.manager``): a run's stored events, then its
live ones as they are published, from any event loop; a run of another process is polled in
the store. Apart from writing: a follower only reads what the writer published or stored."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping, Sequence

from agent import events as ev
from backend.runs.db_threads import DbThreads
from backend.runs.live_run import LiveRun, Subscriber
from backend.runs.unstored_ends import UnstoredEnds
from storage import Store

FOLLOW_POLL_S = 0.25  # following a run of another process: how often to look for new events


class RunFollowing:
    """Following runs; a part of ``RunManager``. Reads the manager's live runs (``live``,
    under the manager's ``lock``), the ends kept by ``unstored``, and the store."""

    def __init__(
        self,
        store: Store,
        lock: threading.RLock,
        db: DbThreads,
        *,
        live: Mapping[str, LiveRun],
        unstored: UnstoredEnds,
    ) -> None:
        self.store = store
        self._lock = lock
        self._executor = db.executor  # on the follower's own loop
        self._live = live
        self._unstored = unstored

    async def follow(
        self, run_ids: Sequence[str], after: int | dict[str, int] = 0
    ) -> AsyncIterator[ev.Event]:
        """Stored events after ``after`` (a seq, or a seq per run), then live ones as they
        are stored, until every run has ended. Call from any event loop; leaving the loop
        early (the client went away) only stops following."""
        run_ids = list(dict.fromkeys(run_ids))
        last = {r: (after.get(r, 0) if isinstance(after, dict) else after) for r in run_ids}
        loop = asyncio.get_running_loop()
        sub = Subscriber(loop, asyncio.Queue())
        live_ids: set[str] = set()
        stored: dict[str, list[ev.Event]] = {}
        # Runs that ended here while storage failed: their end comes after what is stored
        # (``backend.runs.unstored_ends``); nobody runs them any more, so nothing is awaited.
        unstored: dict[str, ev.RunFailed] = {}
        with self._lock:
            for run_id in run_ids:
                live = self._live.get(run_id)
                if live is not None:
                    # What is stored so far comes from memory; later batches are published
                    # to this follower (the two are taken in one step under the lock).
                    live.subscribers.add(sub)
                    live_ids.add(run_id)
                    stored[run_id] = [e for e in live.stored if e.seq > last[run_id]]
                elif (end := self._unstored.unstored_end(run_id)) is not None:
                    unstored[run_id] = end
        try:
            ended: set[str] = set()
            elsewhere = [r for r in run_ids if r not in live_ids]
            if elsewhere:  # ended, or run by another process: from the database
                stored.update(
                    await loop.run_in_executor(
                        self._executor,
                        lambda: {
                            r: self.store.runs.run_events(r, after=last[r]) for r in elsewhere
                        },
                    )
                )
            for run_id in run_ids:
                for event in stored[run_id]:
                    last[run_id] = event.seq
                    yield event
                    if event.type in ev.TERMINAL_TYPES:
                        ended.add(run_id)
                end = unstored.get(run_id)
                if end is not None and run_id not in ended:  # (unless stored meanwhile)
                    ended.add(run_id)
                    if end.seq > last[run_id]:
                        last[run_id] = end.seq
                        yield end
            # Runs neither live here nor ended: another process runs them; poll the store.
            polled = [r for r in run_ids if r not in live_ids and r not in ended]
            while len(ended) < len(run_ids):
                try:
                    if polled:
                        item = await asyncio.wait_for(sub.queue.get(), FOLLOW_POLL_S)
                    else:
                        item = await sub.queue.get()
                except TimeoutError:
                    for run_id in list(polled):
                        # The status before the events: a run's end (its status and its
                        # terminal event) is stored in one transaction, so events read after
                        # a status that is no longer "running" hold that end.
                        running = await self._still_running(run_id)
                        events = await loop.run_in_executor(
                            self._executor, self.store.runs.run_events, run_id, last[run_id]
                        )
                        for event in events:
                            last[run_id] = event.seq
                            yield event
                        if not running or any(e.type in ev.TERMINAL_TYPES for e in events):
                            ended.add(run_id)
                            polled.remove(run_id)
                    continue
                run_id, batch = item
                if batch is None:
                    ended.add(run_id)
                    continue
                for event in batch:
                    if event.seq > last[run_id]:
                        last[run_id] = event.seq
                        yield event
        finally:
            with self._lock:
                for run_id in live_ids:
                    live = self._live.get(run_id)
                    if live is not None:
                        live.subscribers.discard(sub)

    async def _still_running(self, run_id: str) -> bool:
        info = await asyncio.get_running_loop().run_in_executor(
            self._executor, self.store.runs.get_run, run_id
        )
        return info is not None and info.status == "running"
