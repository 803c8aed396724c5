"""What every part of ``RunManager`` (``backend.runs.manager``) stands on: the state its
``__init__`` sets, which its parts (``backend.runs.writer``, ``queue``, ``admission``,
``following``) share, and the trip to a database thread they all take."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from agent.answer import Similarity
from agent.audio import AudioStore
from agent.events import RunFailed
from agent.tools.base import ToolCache
from backend.runs.fairness import AddressShare
from backend.runs.limits import RunLimits
from backend.runs.live_run import LiveRun
from storage import Store


class RunManagerBase:
    """The attributes ``RunManager.__init__`` sets, which its parts share."""

    store: Store
    audio: AudioStore
    cache: ToolCache | None
    similarity: Similarity | None
    limits: RunLimits
    worker_id: str
    heartbeat_s: float
    lease_s: float
    stall_s: float
    gather_s: float
    delta_gather_s: float
    _lock: threading.RLock
    _live: dict[str, LiveRun]
    _unstored: dict[str, RunFailed]  # ended here, their end not stored yet (unstored_ends)
    _waiting: list[LiveRun]  # in the queue, in the order they get a slot
    _running: int
    _reserved: int  # admitted, not yet started
    _starting: int  # started, not yet holding a slot or waiting
    _owner_reserved: dict[str, int]
    _addresses: AddressShare
    _recent_walls: list[float]
    _closing: bool
    _db: concurrent.futures.ThreadPoolExecutor
    _loop: asyncio.AbstractEventLoop

    async def _in_db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._loop.run_in_executor(self._db, lambda: fn(*args, **kwargs))
