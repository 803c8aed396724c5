"""The run manager's database threads (``backend.runs.manager``): writes and reads of the
store get threads of their own, so they never wait behind model calls, and a trip to one
from the manager's event loop is one call. Given to each part of the manager that reads or
writes the store."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any


class DbThreads:
    """Two database threads, and the manager's loop that awaits them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.executor = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="runs-db")

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a database thread, awaited on the manager's loop."""
        return await self.loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)
