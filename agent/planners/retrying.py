"""Streaming a remote planner's turn with retries, shared by the remote planner adapters."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from agent.planners.base import PlannerChunk, PlannerError
from agent.remote import ModelConfig, RemoteError


async def retrying_turn(
    name: str,
    config: ModelConfig,
    classify: Callable[[BaseException, ModelConfig], RemoteError],
    open_stream: Callable[[], AsyncIterator[PlannerChunk]],
) -> AsyncIterator[PlannerChunk]:
    """Yield one turn's chunks; retry timeouts, 429 and 5xx with backoff and jitter, but only
    before anything reached the user: a half-streamed turn fails with a clear message."""
    attempt = 0
    while True:
        streamed_any = False
        try:
            async for chunk in open_stream():
                streamed_any = True
                yield chunk
            return
        except PlannerError:
            raise
        except Exception as exc:
            error = classify(exc, config)
            if streamed_any or not error.retryable or attempt + 1 >= config.retry.attempts:
                message = f"The planner '{name}' failed: {error}"
                raise PlannerError(message, kind=error.kind) from exc
            await asyncio.sleep(config.retry.delay(attempt))
            attempt += 1
