"""One Chat Completions call with the request body sent as built.

The ``openai`` SDK walks every request through its type-directed transform before sending
it (``async_maybe_transform`` over the parameters' TypedDicts): for a planner turn with a
system prompt, tools and a few tool results that is about 1.5 ms of CPU per call, more than
the rest of our turn. The transform renames aliased keys and encodes files and dates; our
requests are plain JSON (strings, numbers, lists, dicts) that it leaves as they are. So the
body goes as ``extra_body``, which the SDK merges into the JSON unchanged, and only the
parameters that choose the response type (``model``, ``stream``) go through ``create``.
Everything else of the SDK stays: its client, retries, errors and response types.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import openai

try:  # the SDK's HTTP client: httpx2 (a fork of httpx under its own name) when installed
    import httpx2 as http_lib
except ImportError:  # pragma: no cover - older SDKs use httpx
    import httpx as http_lib  # type: ignore[no-redef]

# Arguments of ``create`` that are options of the call, not fields of the JSON body.
CALL_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


async def create_chat(client: openai.AsyncOpenAI, request: dict[str, Any]) -> Any:
    """``client.chat.completions.create(**request)``, without the SDK's transform of the
    body: a ``ChatCompletion``, or an ``AsyncStream`` of chunks with ``stream=True``."""
    options = {k: request[k] for k in CALL_OPTIONS if k in request}
    body = {k: v for k, v in request.items() if k not in ("model", "stream", *CALL_OPTIONS)}
    body.update(options.pop("extra_body", None) or {})
    return await client.chat.completions.create(
        model=request["model"],
        messages=[],  # the body's own messages replace it (extra_body is merged last)
        **({"stream": True} if request.get("stream") else {}),
        extra_body=body,
        **options,
    )


def warm_up() -> None:
    """What the first Chat Completions call of a process would otherwise pay for (about
    30 ms of CPU on two cores, most of a first question's extra time): the SDK's lazy import
    of its chat resources, the type hints its request transform reads, and the pydantic
    schemas of the streamed chunks, which the SDK builds on the first response it parses.

    One streamed and one whole call go through the SDK exactly as a planner's do, answered
    in memory by a transport that never opens a socket."""
    anyio.run(_round_trips)  # anyio's asyncio backend too, which the HTTP client uses


async def _round_trips() -> None:
    http = openai.DefaultAsyncHttpxClient(transport=http_lib.MockTransport(_reply))
    client = openai.AsyncOpenAI(api_key="warm-up", base_url=WARM_UP_URL, http_client=http)
    request = {
        "model": "warm-up",
        "messages": [{"role": "user", "content": "warm-up"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    }
    try:
        stream = await create_chat(
            client, {**request, "stream": True, "stream_options": {"include_usage": True}}
        )
        async for _ in stream:
            pass
        await create_chat(client, request)
    finally:
        await client.close()


WARM_UP_URL = "http://warm-up.invalid/v1"  # never resolved: the transport answers in memory
_HEAD = {"id": "warm-up", "created": 0, "model": "warm-up"}
_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
          "prompt_tokens_details": {"cached_tokens": 0}}  # fmt: skip
_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _reply(request: http_lib.Request) -> http_lib.Response:
    """A whole reply with a tool call, or the same streamed: text, the call, the usage."""
    if not json.loads(request.content).get("stream"):
        message = {"role": "assistant", "content": None, "tool_calls": [_CALL]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        body = {**_HEAD, "object": "chat.completion", "usage": _USAGE, "choices": [choice]}
        return http_lib.Response(200, json=body)
    head = {**_HEAD, "object": "chat.completion.chunk"}
    deltas = [{"role": "assistant", "content": "warm"}, {"tool_calls": [{**_CALL, "index": 0}]}]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    chunks.append({**head, "choices": [], "usage": _USAGE})
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return http_lib.Response(200, text=text, headers={"content-type": "text/event-stream"})
