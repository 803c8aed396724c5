"""The one loop that turns a stream of run events into page updates, at a pace a browser can
draw: a structural event (a tool call, a result, an answer ...) is shown at once, the planner's
streamed text at most every ``UPDATE_EVERY_S`` seconds. Asking, comparing and following a
reopened run all draw through it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from agent import events as ev

UPDATE_EVERY_S = 0.1  # at most this often for planner text deltas; structure always at once


async def batches(
    events: AsyncIterator[ev.Event], every_s: float = UPDATE_EVERY_S
) -> AsyncIterator[list[ev.Event]]:
    """The events of ``events`` in batches, each ending when the page should be updated:
    at every structural event, and at a delta when ``every_s`` has passed since the last
    update. Deltas that arrive in between wait for the next batch; the stream's end yields
    what is left."""
    pending: list[ev.Event] = []
    last = time.monotonic()
    async for event in events:
        pending.append(event)
        now = time.monotonic()
        if not isinstance(event, ev.PlannerDelta) or now - last >= every_s:
            last = now
            yield pending
            pending = []
    if pending:
        yield pending
