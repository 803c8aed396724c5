"""One Chat Completions call with the request body sent as built.

The ``openai`` SDK walks every request through its type-directed transform before sending
it (``async_maybe_transform`` over the parameters' TypedDicts): for a planner turn with a
system prompt, tools and a few tool results that is about 1.5 ms of CPU per call, more than
the rest of our turn. The transform renames aliased keys and encodes files and dates; our
requests are plain JSON (strings, numbers, lists, dicts) that it leaves as they are. So the
body goes as ``extra_body``, which the SDK merges into the JSON unchanged, and only the
parameters that choose the response type (``model``, ``stream``) go through ``create``.
Everything else of the SDK stays: its client, retries, errors and response types.

A reply is built from its JSON for the same reason: the SDK builds a completion and each
streamed chunk with its lenient, type-directed ``construct`` (about 0.2 ms of CPU per chunk,
most of a fast turn); pydantic's compiled validator gives the same ``ChatCompletion`` or
``ChatCompletionChunk`` in a tenth of that. The reply is asked for through the SDK's
raw-response API and parsed as ``ValidatedCompletion`` (or an ``AsyncStream`` of
``ValidatedChunk``), whose ``build`` (the SDK's hook for response types that build
themselves) validates and falls back to ``construct`` for a reply that an OpenAI-compatible
server shapes differently (a missing ``created``, say), as the SDK builds it.
"""

from __future__ import annotations

from typing import Any

import openai
import pydantic
from openai.types.chat import ChatCompletion, ChatCompletionChunk

# Arguments of ``create`` that are options of the call, not fields of the JSON body.
CALL_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


class ValidatedChunk(ChatCompletionChunk):
    """A streamed chunk built by validation (see the module docstring)."""

    @classmethod
    def build(cls, *, response: Any, data: object) -> ChatCompletionChunk:
        try:
            return ChatCompletionChunk.model_validate(data)
        except pydantic.ValidationError:  # shaped differently: built leniently, as the SDK does
            return ChatCompletionChunk.construct(**data)  # type: ignore[arg-type]


class ValidatedCompletion(ChatCompletion):
    """A whole reply built by validation (see the module docstring)."""

    @classmethod
    def build(cls, *, response: Any, data: object) -> ChatCompletion:
        try:
            return ChatCompletion.model_validate(data)
        except pydantic.ValidationError:
            return ChatCompletion.construct(**data)  # type: ignore[arg-type]


CHUNKS = openai.AsyncStream[ValidatedChunk]  # what a streamed reply is parsed as


async def create_chat(client: openai.AsyncOpenAI, request: dict[str, Any]) -> Any:
    """``client.chat.completions.create(**request)``, without the SDK's transform of the
    body: a ``ChatCompletion``, or an ``AsyncStream`` of chunks with ``stream=True``."""
    options = {k: request[k] for k in CALL_OPTIONS if k in request}
    body = {k: v for k, v in request.items() if k not in ("model", "stream", *CALL_OPTIONS)}
    body.update(options.pop("extra_body", None) or {})
    arguments: dict[str, Any] = {
        "model": request["model"],
        "messages": [],  # the body's own messages replace it (extra_body is merged last)
        "extra_body": body,
        **options,
    }
    if not request.get("stream"):
        raw = await client.chat.completions.with_raw_response.create(**arguments)
        return raw.parse(to=ValidatedCompletion)
    raw = await client.chat.completions.with_raw_response.create(stream=True, **arguments)
    return raw.parse(to=CHUNKS)
