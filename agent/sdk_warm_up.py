"""What a process's first call of a remote planner would otherwise pay for, done at start-up.

The ``openai`` SDK works lazily: it imports its resources on first use, reads the type hints
of its request parameters on the first request, and builds the pydantic schemas of the
response and event models on the first response it parses. For Chat Completions that is
about 30 ms of CPU on two cores; for the Responses API (the GPT planner's), whose event
models are large unions, about 0.6 s: a first question would wait for it. ``warm_up`` has
each registered provider (``agent.providers``) make its planners' calls, streamed and whole,
through its SDK as in a question, answered in memory by a transport that never opens a
socket. This module holds what they share: the transport's URL and HTTP library, the two
turns, the event-stream body.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio

try:  # the SDK's HTTP client: httpx2 (a fork of httpx under its own name) when installed
    import httpx2 as http_lib
except ImportError:  # pragma: no cover - older SDKs use httpx
    import httpx as http_lib  # type: ignore[no-redef]

WARM_UP_URL = "http://warm-up.invalid/v1"  # never resolved: the transport answers in memory

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Two turns (a tool call, then its result back) of each provider's planners, streamed
    and whole, through its SDK (the Gemini one only when ``google-genai`` is in use)."""
    anyio.run(_all_providers)  # anyio's asyncio backend too, which the HTTP client uses


async def _all_providers() -> None:
    from agent.providers import providers

    for name, provider in providers().items():
        try:
            await provider.warm_up()
        except Exception as exc:  # noqa: BLE001 - the first question then pays for it
            log.warning("warm-up of the %s provider failed: %s", name, exc)


async def two_turns(planner: Any) -> None:
    """A turn that calls a tool, then one with the call's result."""
    from agent.planners.base import ChatMessage, ToolCallRequest, ToolSpec, TurnEnd

    tools = [ToolSpec("f", "A tool.", {"type": "object", "properties": {}})]
    asked = [ChatMessage("system", "warm-up"), ChatMessage("user", "warm-up")]
    calls: list[ToolCallRequest] = []
    raw = None
    async for chunk in planner.stream_turn(asked, tools):
        if isinstance(chunk, ToolCallRequest):
            calls.append(chunk)
        elif isinstance(chunk, TurnEnd):
            raw = chunk.raw
    answered = [
        *asked,
        ChatMessage("assistant", "warm", tool_calls=calls, raw=raw),
        *(ChatMessage("tool", "ok", tool_call_id=c.id, name=c.name) for c in calls),
    ]
    async for _ in planner.stream_turn(answered, tools):
        pass


def sse(events: list[dict[str, Any]], done: str = "data: [DONE]\n\n") -> http_lib.Response:
    """A server-sent event stream of ``events`` as the transport's answer."""
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + done
    return http_lib.Response(200, text=text, headers={"content-type": "text/event-stream"})
