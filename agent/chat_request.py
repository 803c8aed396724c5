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

from typing import Any

import openai

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
    """What the first Chat Completions call of a process would otherwise pay for, about
    30 ms on two cores: the SDK imports its chat resources on first use and builds the
    response models' validators on the first response."""
    import anyio
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    anyio.run(anyio.sleep, 0)  # loads anyio's asyncio backend, which the HTTP client uses
    client = openai.AsyncOpenAI(api_key="warm-up", base_url="http://127.0.0.1:9")
    client.chat.completions  # noqa: B018 - the lazy import of the chat resources
    message = {"role": "assistant", "content": "", "tool_calls": [_CALL]}
    ChatCompletion.model_validate(
        {**_HEAD, "object": "chat.completion", "usage": _USAGE,
         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    )  # fmt: skip
    ChatCompletionChunk.model_validate(
        {**_HEAD, "object": "chat.completion.chunk", "usage": _USAGE,
         "choices": [{"index": 0, "delta": {**message, "tool_calls": [{**_CALL, "index": 0}]}}]}
    )  # fmt: skip


_HEAD = {"id": "warm-up", "created": 0, "model": "warm-up"}
_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
