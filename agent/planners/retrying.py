"""One remote planner turn with its failure in words, shared by the remote planner adapters.

Retries are the SDKs' own (configured from the catalogue: ``max_retries``, backoff, and
Retry-After for ``openai``); they happen before anything is streamed. What still fails is
one PlannerError naming the entry and what to do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from agent.planners.base import PlannerChunk, PlannerError
from agent.remote import ModelConfig, RemoteError


async def remote_turn(
    config: ModelConfig,
    classify: Callable[[BaseException, ModelConfig], RemoteError],
    open_stream: Callable[[], AsyncIterator[PlannerChunk]],
) -> AsyncIterator[PlannerChunk]:
    """Yield one turn's chunks; a failure (before or during the stream) is a PlannerError."""
    try:
        async for chunk in open_stream():
            yield chunk
    except PlannerError:
        raise
    except Exception as exc:  # classified into one sentence naming the entry
        error = classify(exc, config)
        raise PlannerError(f"The planner failed: {error}", kind=error.kind) from exc
