"""The run manager's admission records (``backend.runs.manager``): the limits it is built with, the
refusal a question over them gets, and the ticket ``admit`` hands out. Apart so that the
settings and the manager's parts can name them without the manager itself."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from backend.access.clients import UNKNOWN


def default_max_running() -> int:
    """Concurrent runs per process: runs mostly wait on models and remote calls, and the
    model executor bounds the CPU work, so a few per core."""
    return max(4, 4 * (os.cpu_count() or 1))


@dataclass(frozen=True)
class RunLimits:
    """Admission limits; 0 or None turns a limit off."""

    max_running: int = field(default_factory=default_max_running)  # runs holding a slot
    max_queued: int = 64  # runs waiting for a slot before new ones get 429
    owner_runs_per_minute: int = 60
    owner_max_running: int = 8  # running or queued, per owner (a compare run counts each)
    owner_daily_usd: float | None = None  # remote spend per owner per UTC day
    address_runs_per_minute: int = 0  # per client address (limits that a cookie cannot dodge)
    address_max_running: int = 0  # running or queued per address: no address fills the queue


class RunRefused(Exception):
    """A question refused before anything was stored: HTTP 429 with Retry-After."""

    status = 429

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = max(1, math.ceil(retry_after_s))


@dataclass
class Ticket:
    """Slots reserved by ``admit`` until ``start`` (or ``release``) uses them."""

    owner: str
    count: int
    address: str = UNKNOWN
    used: bool = False
