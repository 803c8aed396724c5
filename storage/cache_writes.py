"""Tool-cache writes behind the run (write-behind), visible to readers at once.

A run used to wait for one database commit per tool call to store the result in the cache,
and for another to count each hit: with instant tools that was most of a run's cost. Now a
result goes into ``pending`` (a dict shared by every run of the process that uses the same
``Store``) and one background thread writes whatever has gathered in one transaction. Readers
look in ``pending`` first, so a result is never computed twice because its row is not
committed yet. Hits are counted the same way. The writer gathers for ``GATHER_S`` before it
writes: the results of a question's tools go in one transaction, after a fast run has ended
rather than while it is still going (its thread would take turns for the GIL with the run's).

Results read or written lately are also kept in memory (``RECENT`` of them, least recently
used out first), so a run asking for one again gets it without a thread hop or a database
read; deleting cache rows through the store forgets them here too. (Rows another process
deletes stay in this memory until they age out; a result only ever describes the same bytes.)

The cache is an optimisation: a write that fails is logged and dropped (the next identical
call computes the result again). ``flush()`` waits until everything handed over is written;
the store calls it before it reads hit counts or deletes cache rows, and at ``close()``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("audio_agent.cache")

Entry = tuple[str, str, Any]  # tool, audio id, ToolResult
RECENT = 256  # results kept in memory after they are written or read
GATHER_S = 0.05  # how long the writer waits for more before it writes (flush cuts it short)


class CacheWrites:
    """Pending cache rows and hit counts of one store, written by one background thread."""

    def __init__(
        self,
        write: Callable[[dict[str, Entry], dict[str, int]], None],
        gather_s: float = GATHER_S,
    ) -> None:
        self._write = write  # (rows by key, hit counts by key), one transaction
        self.gather_s = gather_s
        self._hurry = threading.Event()  # set by flush: write what has gathered now
        self._lock = threading.Lock()
        self._pending: dict[str, Entry] = {}
        self._recent: collections.OrderedDict[str, tuple[str, Any]] = collections.OrderedDict()
        self._hits: collections.Counter[str] = collections.Counter()
        self._idle = threading.Condition(self._lock)
        self._busy = False
        self._closed = False
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cache-write")

    def put(self, key: str, tool: str, audio_id: str, result: Any) -> None:
        with self._lock:
            self._remember(key, audio_id, result)
            if not self._closed:
                self._pending[key] = (tool, audio_id, result)
                self._schedule()
                return
        self._write({key: (tool, audio_id, result)}, {})  # after close: in this thread

    def hit(self, key: str) -> None:
        with self._lock:
            if not self._closed:
                self._hits[key] += 1
                self._schedule()
                return
        self._write({}, {key: 1})

    def get(self, key: str) -> Any | None:
        """The result for ``key`` if it is in memory (not written yet, or recent), or None."""
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        """The results among ``keys`` that are in memory."""
        found = {}
        with self._lock:
            for key in keys:
                if key in self._pending:
                    found[key] = self._pending[key][2]
                elif key in self._recent:
                    self._recent.move_to_end(key)
                    found[key] = self._recent[key][1]
        return found

    def remember(self, results: dict[str, tuple[str, Any]]) -> None:
        """Keep results read from the database in memory: {key: (audio id, result)}."""
        with self._lock:
            for key, (audio_id, result) in results.items():
                self._remember(key, audio_id, result)

    def forget(self, audio_ids: set[str] | None = None) -> None:
        """Drop remembered results of these recordings (None: all)."""
        with self._lock:
            if audio_ids is None:
                self._recent.clear()
                return
            for key in [k for k, (a, _) in self._recent.items() if a in audio_ids]:
                del self._recent[key]

    def _remember(self, key: str, audio_id: str, result: Any) -> None:  # with the lock held
        self._recent[key] = (audio_id, result)
        self._recent.move_to_end(key)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every row and hit handed over so far is written; False on timeout."""
        self._hurry.set()
        with self._idle:
            return self._idle.wait_for(
                lambda: not self._busy and not self._pending and not self._hits, timeout_s
            )

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=True)

    def _schedule(self) -> None:  # with the lock held
        if not self._busy:  # else the writer takes what gathered when it comes back
            self._busy = True
            self._executor.submit(self._drain)

    def _drain(self) -> None:
        self._hurry.wait(self.gather_s)
        self._hurry.clear()
        while True:
            with self._lock:
                rows = dict(self._pending)
                hits = dict(self._hits)
                self._hits.clear()
                if not rows and not hits:
                    self._busy = False
                    self._idle.notify_all()
                    return
            try:
                self._write(rows, hits)
            except Exception as exc:  # noqa: BLE001 - an optimisation: drop, log, go on
                log.warning("tool cache write failed (%d rows dropped): %s", len(rows), exc)
            with self._lock:
                for key, entry in rows.items():
                    if self._pending.get(key) is entry:  # not replaced meanwhile
                        del self._pending[key]
