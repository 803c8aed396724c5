"""The one loop that turns a stream of run events into page updates, at a pace a browser can
draw: a structural event (a tool call, a result, an answer ...) is shown at once, the planner's
streamed text at most every ``UPDATE_EVERY_S`` seconds. Asking, comparing and following a
reopened run all draw through it.

Events that have already arrived when an update is due go into that one update: a burst
(a cached run's events come within milliseconds) is drawn once, not once per event. Each
update re-renders the chat and the trace and the browser redraws them; one per event made a
cached answer take seconds to show on a loaded machine (issue 33,
docs/measurements/2026-12-03-page-latency.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from agent import events as ev

UPDATE_EVERY_S = 0.1  # at most this often for planner text deltas; structure always at once
_END = object()


async def batches(
    events: AsyncIterator[ev.Event], every_s: float = UPDATE_EVERY_S
) -> AsyncIterator[list[ev.Event]]:
    """The events of ``events`` in batches, each ending when the page should be updated:
    at a structural event, and at a delta when ``every_s`` has passed since the last
    update; each batch also takes every event already waiting. Deltas that arrive in
    between wait for the next batch; the stream's end yields what is left. An error of the
    stream is raised here after the events before it."""
    arrived: asyncio.Queue[object] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in events:
                arrived.put_nowait(event)
        except Exception as exc:  # noqa: BLE001 - raised to the reader, in order
            arrived.put_nowait(exc)
        arrived.put_nowait(_END)

    reader = asyncio.ensure_future(pump())
    pending: list[ev.Event] = []
    last = time.monotonic()
    try:
        while True:
            items = [await arrived.get()]
            while not arrived.empty():
                items.append(arrived.get_nowait())
            ended = False
            for item in items:
                if item is _END:
                    ended = True
                elif isinstance(item, Exception):
                    if pending:
                        yield pending
                    raise item
                else:
                    pending.append(item)  # type: ignore[arg-type]
            if ended:
                break
            now = time.monotonic()
            structural = any(not isinstance(e, ev.PlannerDelta) for e in pending)
            if pending and (structural or now - last >= every_s):
                last = now
                yield pending
                pending = []
        if pending:
            yield pending
    finally:
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
