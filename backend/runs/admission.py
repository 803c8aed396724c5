"""``RunManager``'s admission (``backend.runs.manager``): before a question is stored, the queue's
length and the per-owner and per-address limits decide whether it may run (``RunRefused``,
HTTP 429 with Retry-After, when not); while it runs, whether its owner's daily spend allows
its next paid call. Apart from the queue, which orders runs already admitted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from backend.access.clients import UNKNOWN
from backend.runs.db_threads import DbThreads
from backend.runs.fairness import AddressShare
from backend.runs.limits import RunLimits, RunRefused, Ticket
from backend.runs.live_run import LiveRun
from backend.runs.queue import RunQueue
from backend.runs.writer import RunEventWriter
from storage import Store


class RunAdmission:
    """Admitting questions and reserving their runs; a part of ``RunManager``. Owns the
    reservations and the recent runs' wall times (for Retry-After); reads the queue's counts
    and shares the manager's lock and per-address counts (``addresses``)."""

    def __init__(
        self,
        store: Store,
        limits: RunLimits,
        lock: threading.RLock,
        *,
        queue: RunQueue,
        addresses: AddressShare,
        db: DbThreads,
        writer: RunEventWriter,
        closing: Callable[[], bool],
    ) -> None:
        self.store = store
        self.limits = limits
        self._lock = lock
        self._queue = queue
        self._addresses = addresses
        self._db = db
        self._writer = writer  # a run's latest costs are written before its spend is read
        self._closing = closing
        self._reserved = 0  # admitted, not yet started
        self._owner_reserved: dict[str, int] = {}
        self._recent_walls: list[float] = []

    def ran(self, wall_s: float) -> None:
        """A run took ``wall_s`` seconds (the typical wait a refusal's Retry-After tells)."""
        self._recent_walls = [*self._recent_walls[-19:], wall_s]

    def admit(
        self, owner: str, count: int = 1, *, paid: bool = False, address: str = UNKNOWN
    ) -> Ticket:
        """Check the limits before a question is stored; reserve ``count`` runs.

        Raises ``RunRefused`` (429 + Retry-After) when the queue is full or the owner or
        the client ``address`` is over a limit. ``paid``: the runs use a priced remote
        planner (refused when the owner's daily spend is used up)."""
        limits = self.limits
        with self._lock:
            if self._closing():
                raise RunRefused("The server is shutting down; try again in a moment.", 5)
            running, waiting = self._queue.running, self._queue.waiting
            wanted = running + waiting + self._queue.starting + self._reserved + count
            if (
                limits.max_queued
                and limits.max_running
                and wanted - limits.max_running > limits.max_queued
            ):
                raise RunRefused(
                    f"The server is busy: {running} runs are running and {waiting} are "
                    "waiting. Try again shortly.",
                    self._retry_estimate(waiting),
                )
            refused = self._addresses.refusal(address, count)
            if refused is not None:
                raise RunRefused(refused[0], refused[1] or self._retry_estimate(0))
            now = datetime.now(UTC)
            day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
            activity = self.store.runs.owner_activity(owner, now - timedelta(minutes=1), day_start)
            reserved = self._owner_reserved.get(owner, 0)
            per_minute = limits.owner_runs_per_minute
            if per_minute and activity.runs_recent + reserved + count > per_minute:
                wait = 60.0
                if activity.oldest_recent is not None:
                    wait = 60 - (now - activity.oldest_recent).total_seconds()
                raise RunRefused(
                    f"Too many questions: at most {per_minute} runs per minute "
                    f"({activity.runs_recent} in the last minute).",
                    wait,
                )
            most = limits.owner_max_running
            if most and activity.running + reserved + count > most:
                raise RunRefused(
                    f"You have {activity.running} runs going; at most {most} at once. Wait for "
                    "one to finish or stop it.",
                    self._retry_estimate(0),
                )
            usd = limits.owner_daily_usd
            if paid and usd is not None and activity.spent_today_usd >= usd:
                raise RunRefused(
                    spend_message(usd, activity.spent_today_usd),
                    (day_start + timedelta(days=1) - now).total_seconds(),
                )
            self._reserved += count
            self._owner_reserved[owner] = reserved + count
            self._addresses.add(address, count, admitted=True)
        return Ticket(owner, count, address)

    def release(self, ticket: Ticket) -> None:
        """Give back what ``admit`` reserved (the question was not started after all)."""
        with self._lock:
            if ticket.used:
                return
            ticket.used = True
            self._reserved -= ticket.count
            self._addresses.done(ticket.address, ticket.count)
            left = self._owner_reserved.get(ticket.owner, 0) - ticket.count
            if left > 0:
                self._owner_reserved[ticket.owner] = left
            else:
                self._owner_reserved.pop(ticket.owner, None)

    def _retry_estimate(self, ahead: int) -> float:
        walls = self._recent_walls[-20:]
        typical = sum(walls) / len(walls) if walls else 5.0
        return min(300.0, max(1.0, typical * (1 + ahead / max(1, self.limits.max_running))))

    async def spend_refusal(self, live: LiveRun) -> str | None:
        usd = self.limits.owner_daily_usd
        if usd is None:
            return None
        await self._writer.drain(live)  # this run's own latest costs count too
        now = datetime.now(UTC)
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        activity = await self._db.run(self.store.runs.owner_activity, live.owner, now, day_start)
        if activity.spent_today_usd >= usd:
            return spend_message(usd, activity.spent_today_usd)
        return None


def spend_message(limit: float, spent: float) -> str:
    return (
        f"The daily limit of ${limit:.2f} for remote models is used up (${spent:.2f} spent "
        "today). Use the offline planner and tools, or come back after 00:00 UTC."
    )
