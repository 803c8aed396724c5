"""Waiting in tests for something to happen, by polling it with a deadline (never a fixed
sleep, which either passes before the thing could happen or fails on a loaded machine)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_for(predicate: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    """Return as soon as ``predicate()`` is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        await asyncio.sleep(0.01)
