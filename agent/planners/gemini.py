"""Planner over the Gemini API through the ``google-genai`` SDK.

Streams text (thought summaries as reasoning when ``include_thoughts`` is set) and native
function calls. The model's turn is kept as one ``types.Content`` (``TurnEnd.raw``) and sent
back unchanged on later turns: it carries the thought signatures Gemini needs to keep its
reasoning across function calls.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

from google import genai
from google.genai import types

from agent.events import Usage
from agent.gemini_client import classify_error, make_client
from agent.planners.base import (
    ChatMessage,
    PlannerChunk,
    PlannerError,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.planners.retrying import remote_turn
from agent.remote import ModelConfig

GENERATED_ID_PREFIX = "gemini_call_"
# Gemini 3+ rejects a function call in the current turn without its thought signature; a
# turn rebuilt without the original (no ``raw``) carries the documented stand-in instead
# (https://ai.google.dev/gemini-api/docs/thought-signatures). The API must receive the
# literal string "skip_thought_signature_validator"; the SDK base64-encodes the bytes of a
# signature (URL-safe alphabet), so these are the bytes whose encoding is that string.
# Sending the string's own bytes arrives as "c2tpcF90...", which Gemini 3+ refuses with
# "Thought signature is not valid." (langchain-ai/langchain-google#1570, fixed in #1972).
STAND_IN_TEXT = "skip_thought_signature_validator"
STAND_IN_SIGNATURE = base64.urlsafe_b64decode(STAND_IN_TEXT)


class GeminiPlanner:
    is_llm = True

    def __init__(self, config: ModelConfig, client: genai.Client | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or f"{config.model} (gemini)"
        self.model = config.model
        self._client = client
        self._ids = itertools.count(1)
        self.fixed_temperature = not config.supports_temperature
        self._declared: dict[str, ToolSpec] = {}  # every tool this planner was offered

    @property
    def client(self) -> genai.Client:
        """Made on first use, so that a missing key is reported as a failed turn."""
        if self._client is None:
            self._client = make_client(self.config)
        return self._client

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        system, contents = to_contents(messages)
        self._declared.update({spec.name: spec for spec in tools})
        forced = force_answer or not tools
        if forced:
            # The final answer keeps the declarations of the tools the history calls, with
            # function calling off (mode NONE): without them, Gemini cannot read its own
            # earlier calls (https://ai.google.dev/gemini-api/docs/function-calling).
            called = {c.name for m in messages for c in m.tool_calls}
            tools = [self._declared[n] for n in sorted(called) if n in self._declared]
        request_config = self._request_config(system, tools)
        if tools and forced:
            request_config.tool_config = types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(
                    mode=types.FunctionCallingConfigMode.NONE
                )
            )
        if temperature is not None and self.config.supports_temperature:
            request_config.temperature = temperature
        async for chunk in remote_turn(
            self.config, classify_error, lambda: self._stream(contents, request_config)
        ):
            yield chunk

    def _request_config(
        self, system: str | None, tools: list[ToolSpec]
    ) -> types.GenerateContentConfig:
        options = self.config.options
        fields: dict[str, Any] = {
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if system:
            fields["system_instruction"] = system
        if tools:
            fields["tools"] = [
                types.Tool(function_declarations=[function_declaration(s) for s in tools])
            ]
        for option in ("top_p", "top_k", "max_output_tokens", "seed"):
            if option in options:
                fields[option] = options[option]
        # Gemini 3+ is tuned for its default temperature (lower values can loop): the
        # catalogue marks it supports_temperature = false and none is ever sent.
        if "temperature" in options and self.config.supports_temperature:
            fields["temperature"] = options["temperature"]
        thinking: dict[str, Any] = {}
        if options.get("include_thoughts"):
            thinking["include_thoughts"] = True
        for option in ("thinking_budget", "thinking_level"):
            if option in options:
                thinking[option] = options[option]
        if thinking:
            fields["thinking_config"] = types.ThinkingConfig(**thinking)
        return types.GenerateContentConfig(**fields)

    async def _stream(
        self, contents: list[types.Content], request_config: types.GenerateContentConfig
    ) -> AsyncIterator[PlannerChunk]:
        stream = await self.client.aio.models.generate_content_stream(
            model=self.config.model, contents=contents, config=request_config
        )
        parts: list[types.Part] = []
        usage = Usage(reported=False)  # until a chunk carries the counts
        block_reason: str | None = None
        async for response in stream:
            if response.usage_metadata is not None:
                usage = usage_of(response.usage_metadata)
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason:
                block_reason = str(getattr(feedback.block_reason, "value", feedback.block_reason))
            if not response.candidates:
                continue
            content = response.candidates[0].content
            for part in (content.parts if content else None) or []:
                parts.append(part)
                if part.function_call is not None:
                    yield self._request(part.function_call)
                elif part.text:
                    yield TextDelta(part.text, kind="reasoning" if part.thought else "text")
        if block_reason and not parts:
            raise PlannerError(
                f"'{self.name}' refused the prompt (blocked: {block_reason}).",
                kind="blocked",
            )
        yield TurnEnd(
            usage=usage,
            cost=self.config.prices.cost(usage),
            raw=types.Content(role="model", parts=merge_parts(parts)),
        )

    def _request(self, call: types.FunctionCall) -> ToolCallRequest:
        call_id = call.id or f"{GENERATED_ID_PREFIX}{next(self._ids)}"
        return ToolCallRequest(call_id, call.name or "", dict(call.args or {}))


def function_declaration(spec: ToolSpec) -> types.FunctionDeclaration:
    """JSON-schema parameters go through unchanged (``parametersJsonSchema``)."""
    return types.FunctionDeclaration(
        name=spec.name,
        description=spec.description,
        parameters_json_schema=spec.parameters or {"type": "object", "properties": {}},
    )


def usage_of(metadata: types.GenerateContentResponseUsageMetadata) -> Usage:
    """Thinking tokens are billed as output; cached prompt tokens at the cache price."""
    return Usage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=(metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0),
        cache_read_tokens=metadata.cached_content_token_count or 0,
    )


def merge_parts(parts: list[types.Part]) -> list[types.Part]:
    """Join the streamed text pieces of one turn into fewer parts, changing nothing else.

    Two neighbours merge only when both are plain text of the same kind (thought or not)
    and neither carries a thought signature: a signed part is kept exactly as it came.
    """
    merged: list[types.Part] = []
    for part in parts:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and _plain_text(previous)
            and _plain_text(part)
            and bool(previous.thought) == bool(part.thought)
        ):
            merged[-1] = previous.model_copy(
                update={"text": (previous.text or "") + (part.text or "")}
            )
            continue
        merged.append(part)
    return merged


def _plain_text(part: types.Part) -> bool:
    fields = part.model_dump(exclude_none=True)
    fields.pop("thought", None)
    return set(fields) == {"text"}


def to_contents(messages: list[ChatMessage]) -> tuple[str | None, list[types.Content]]:
    """The history as Gemini contents; the system messages become the system instruction."""
    system: list[str] = []
    contents: list[types.Content] = []
    call_ids: set[str] = set()  # ids the model gave its calls in the latest model turn
    for message in messages:
        if message.role == "system":
            system.append(message.content)
        elif message.role == "user":
            contents.append(types.Content(role="user", parts=[types.Part(text=message.content)]))
        elif message.role == "assistant":
            content = own_content(message.raw)
            if content is None:
                parts: list[types.Part] = []
                if message.content:
                    parts.append(types.Part(text=message.content))
                for index, call in enumerate(message.tool_calls):
                    function_call = types.FunctionCall(name=call.name, args=call.arguments)
                    if not call.id.startswith(GENERATED_ID_PREFIX):
                        function_call.id = call.id
                    part = types.Part(function_call=function_call)
                    if index == 0:
                        part.thought_signature = STAND_IN_SIGNATURE
                    parts.append(part)
                content = types.Content(role="model", parts=parts)
            if not _says_anything(content):
                # an empty model turn: Gemini refuses an empty text part ("Unable to submit
                # request because it has an empty text parameter"), so it is left out
                continue
            call_ids = {
                p.function_call.id
                for p in content.parts or []
                if p.function_call is not None and p.function_call.id
            }
            contents.append(content)
        elif message.role == "tool":
            response = {"error": message.error} if message.error else {"output": message.content}
            function_response = types.FunctionResponse(name=message.name or "", response=response)
            if message.tool_call_id and message.tool_call_id in call_ids:
                function_response.id = message.tool_call_id
            part = types.Part(function_response=function_response)
            previous = contents[-1] if contents else None
            if (
                previous is not None
                and previous.role == "user"
                and previous.parts
                and all(p.function_response is not None for p in previous.parts)
            ):
                previous.parts.append(part)
            else:
                contents.append(types.Content(role="user", parts=[part]))
    return ("\n\n".join(system) or None), contents


def _says_anything(content: types.Content) -> bool:
    """Whether a model turn has a part other than empty text."""
    return any(
        not _plain_text(part) or bool(part.text) or part.thought_signature
        for part in content.parts or []
    )


def own_content(raw: Any) -> types.Content | None:
    """A model turn this planner produced earlier (``TurnEnd.raw``), as it was."""
    if isinstance(raw, types.Content):
        return raw if raw.role == "model" else None
    if isinstance(raw, dict) and raw.get("role") == "model" and "parts" in raw:
        try:  # a JSON dump (bytes as base64) or a Python dump (bytes as bytes)
            return types.Content.model_validate_json(json.dumps(raw))
        except TypeError:
            return types.Content.model_validate(raw)
        except ValueError:
            return None
    return None
