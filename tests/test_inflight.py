"""Identical calls in flight are joined; a computation cancelled because its last caller left
is never joined by the next caller (it would hand that caller a CancelledError)."""

from __future__ import annotations

import asyncio

from agent.inflight import InflightCalls


async def test_a_caller_right_after_a_cancellation_starts_its_own_computation():
    calls: InflightCalls[str] = InflightCalls()
    started = 0

    async def slow() -> str:
        nonlocal started
        started += 1
        await asyncio.sleep(0.2)
        return "done"

    first = asyncio.ensure_future(calls.run("key", slow))
    await asyncio.sleep(0.01)
    first.cancel()  # its only caller leaves: the computation is cancelled ...
    await asyncio.sleep(0)  # ... but is not done until the loop runs it once more
    assert await calls.run("key", slow) == ("done", False)
    assert started == 2


async def test_callers_that_overlap_share_one_computation():
    calls: InflightCalls[str] = InflightCalls()

    async def slow() -> str:
        await asyncio.sleep(0.05)
        return "done"

    results = await asyncio.gather(calls.run("key", slow), calls.run("key", slow))
    assert results == [("done", False), ("done", True)]
    assert (calls.started, calls.joined) == (1, 1)
