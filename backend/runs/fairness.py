"""Each client address's share of the run capacity, and a queue that takes turns.

A visitor who drops their cookie is a new owner on every request, so the per-owner limits of
``backend.runs.manager`` do not hold them; their address does not change. ``AddressShare`` counts
the runs each address has admitted, waiting or running in this process, and those it started in
the last minute: past ``max_running`` at once (by default a quarter of running + queue) or
``per_minute``, a new question from that address is refused, so one address never fills the
queue. ``queue_position`` makes the queue take turns between addresses: a new run goes after
the waiting runs of every address that has no more runs waiting than its own, so a backlog
from one address does not delay the first question of another.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from backend.access.clients import UNKNOWN, RateWindow


class AddressShare:
    """Runs per client address (``UNKNOWN``: runs started inside the server, not counted)."""

    def __init__(self, max_running: int, per_minute: int) -> None:
        self.max_running = max_running
        self.per_minute = per_minute
        self._live: dict[str, int] = {}
        self._recent = RateWindow(60)
        self._lock = threading.Lock()

    def refusal(self, address: str, count: int) -> tuple[str, float] | None:
        """Why ``count`` more runs from ``address`` are refused now, and how long to wait."""
        if address == UNKNOWN:
            return None
        live = self.live(address)
        if self.max_running and live + count > self.max_running:
            return (
                f"Your network address has {live} runs going or waiting; at most "
                f"{self.max_running} at once, so that everyone gets a turn. Wait for one to "
                "finish.",
                0.0,
            )
        wait = self._recent.wait_s(address, self.per_minute, count)
        if wait is not None:
            return (
                f"Too many questions from your network address: at most {self.per_minute} "
                "runs per minute.",
                float(wait),
            )
        return None

    def live(self, address: str) -> int:
        with self._lock:
            return self._live.get(address, 0)

    def add(self, address: str, count: int = 1, *, admitted: bool = False) -> None:
        """``count`` more runs of ``address``; ``admitted``: new ones (per minute)."""
        if address == UNKNOWN:
            return
        with self._lock:
            self._live[address] = self._live.get(address, 0) + count
        if admitted:
            self._recent.add(address, count)

    def done(self, address: str, count: int = 1) -> None:
        if address == UNKNOWN:
            return
        with self._lock:
            left = self._live.get(address, 0) - count
            if left > 0:
                self._live[address] = left
            else:
                self._live.pop(address, None)


class Waiting(Protocol):
    address: str
    rank: int


def queue_position(waiting: Sequence[Waiting], address: str) -> tuple[int, int]:
    """Where a new run of ``address`` joins the queue, and its rank there (how many runs of
    its address wait ahead of it)."""
    rank = 0 if address == UNKNOWN else sum(1 for w in waiting if w.address == address)
    index = next((i for i, w in enumerate(waiting) if w.rank > rank), len(waiting))
    return index, rank
