"""A run whose events could not be stored (``backend.runs.manager``): the disk is full, the database
cannot be written. Nothing more of it is written or published; it ends as ``run_failed``
with the fault's kind (``storage_full``, ``storage_error``) right after its last stored
event, for every follower, never as the success that was not stored.

When even that end cannot be stored, the run's row still says "running" while no task runs
it any more. The manager keeps the end here (``UnstoredEnds``) and its process goes on
answering for the run: followers that come later get the stored events and this end (they
do not wait for a run nobody runs), the heartbeat keeps the run's lease (no other process
takes it over), every heartbeat tries to store the end again, and Stop stores it at once
(or answers with the fault: the disk is still full). A run of a process that can write is
thus never left "running".
"""

from __future__ import annotations

import contextlib
import logging
import threading

from agent import events as ev
from backend.runs import faults
from backend.runs.db_threads import DbThreads
from backend.runs.live_run import LiveRun
from backend.runs.writer import RunEventWriter
from storage import Store

log = logging.getLogger("audio_agent.runs")


class UnstoredEnds:
    """Ending runs whose storage failed; a part of ``RunManager``, which owns the ends kept
    (by run id) until they are stored."""

    def __init__(
        self,
        store: Store,
        lock: threading.RLock,
        db: DbThreads,
        writer: RunEventWriter,
        *,
        retry_every_s: float,
    ) -> None:
        self.store = store
        self._lock = lock
        self._db = db
        self._writer = writer  # an end is stored and published as any end
        self._retry_every_s = retry_every_s  # the heartbeat, which tries again
        self._ends: dict[str, ev.RunFailed] = {}  # ended here, their end not stored yet

    def __bool__(self) -> bool:
        """Whether any end is kept."""
        return bool(self._ends)

    async def end(self, live: LiveRun) -> None:
        """End a run after a failed write (``live.write_error``): its end, stored if
        storage works again already, else published and kept to be stored later."""
        assert live.write_error is not None
        fault = faults.describe(live.write_error)
        live.ended_as = fault.kind
        live.ending.set()
        end = ev.RunFailed(
            run_id=live.run_id, seq=live.stored_seq + 1, kind=fault.kind, message=fault.message
        )
        try:
            await self._db.run(self._writer.write, live, [end])  # stored and published as any end
            return
        except LookupError:  # closed by another process meanwhile: its end is the one
            live.closed_elsewhere = True
            await self._writer.publish_stored_end(live)
            return
        except Exception as exc:  # noqa: BLE001 - still failing: kept, and told as it is
            log.error(
                "run %s ended as %s, which cannot be stored either (%s); storing it is "
                "tried again every %.0f s",
                live.run_id,
                fault.kind,
                faults.first_line(exc),
                self._retry_every_s,
            )
        with self._lock:  # kept before it is published: a later follower finds one or other
            self._ends[live.run_id] = end
        self._writer.publish(live, [end])

    def unstored_end(self, run_id: str) -> ev.RunFailed | None:
        """The end of a run of this process that is not stored yet, if it is one."""
        with self._lock:
            return self._ends.get(run_id)

    def _store_end(self, end: ev.RunFailed) -> None:
        """Store a kept end (in a database thread); the storage's error when it fails."""
        with contextlib.suppress(LookupError):  # closed by another process, or deleted
            self.store.runs.append_events([end])
            log.info("run %s: its end (%s) is stored now", end.run_id, end.kind)
        with self._lock:
            self._ends.pop(end.run_id, None)

    def store_all(self) -> int:
        """Try to store every kept end (each heartbeat); how many are still kept."""
        with self._lock:
            ends = list(self._ends.values())
        for end in ends:
            try:
                self._store_end(end)
            except Exception:  # noqa: BLE001 - still failing; the next heartbeat tries again
                log.debug("storing the end of run %s failed again", end.run_id)
        return len(self._ends)

    def stop(self, run_id: str) -> bool:
        """Stop of a run whose end is kept: stored now (the storage's error if it still
        fails); False if the run is not one."""
        end = self.unstored_end(run_id)
        if end is None:
            return False
        self._store_end(end)
        return True
