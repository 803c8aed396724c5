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
