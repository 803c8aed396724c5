"""Planner over OpenAI-compatible Chat Completions endpoints (vLLM, Ollama, DeepSeek,
OpenRouter) through the ``openai`` SDK. OpenAI's own models use the Responses API
(``agent.planners.openai_responses``).

Streams text; native function calling with tool-call deltas assembled by index, or, for
endpoints without it (``function_calling = false`` in the catalogue), the tag protocol.
Reasoning that the endpoint returns separately (``reasoning_content``, ``reasoning``,
``reasoning_details``) is streamed as reasoning; for entries marked ``thinking = true`` (or
with a ``reasoning_field``) it is sent back next to the turn's tool calls
(``agent.planners.reasoning_echo``): thinking models refuse the next request without it,
while other servers may refuse a field they do not know.
A tool call the app made for the model (``caption_first``'s opening caption) has no
reasoning to send back; for a thinking model (``thinking = true``) it goes to the model as
a note with its result instead of as a call it never made.
What the model accepts comes from the catalogue entry: ``supports_temperature``,
``max_tokens_param``, ``streaming``; a provider that refuses to stream (OpenAI's 400 for
unverified organisations) gets a non-streamed call.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from agent.chat_request import create_chat
from agent.events import Usage
from agent.openai_client import (
    chat_usage,
    choice_usage,
    classify_error,
    make_client,
    refuses_streaming,
)
from agent.planners.base import (
    ChatMessage,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.planners.reasoning_echo import (
    ReasoningRecord,
    attach,
    own_turn,
    refuses_reasoning_form,
)
from agent.planners.retrying import remote_turn
from agent.planners.tag_protocol import format_result, parse_tool_calls, tool_instructions
from agent.remote import ModelConfig

MADE_FOR_YOU = (
    "Before your turn, the app ran these tools for you (you did not call them); their results:"
)


class OpenAICompatPlanner:
    is_llm = True

    def __init__(self, config: ModelConfig, client: openai.AsyncOpenAI | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or f"{config.model} ({config.provider})"
        self.model = config.model
        self.native_tools = bool(config.options.get("function_calling", True))
        self.client = client or make_client(config)
        self._ids = itertools.count(1)
        self.fixed_temperature = not config.supports_temperature
        self._stream = config.streaming  # turned off when the provider refuses to stream
        # a tool-call turn without reasoning goes back with reasoning_content "" (Moonshot's
        # and DeepSeek's form); switched when the server refuses that form (and back)
        self._send_empty_reasoning = True

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": self._messages(messages, tools),
        }
        options = self.config.options
        for option in ("top_p", "reasoning_effort"):
            if option in options:
                request[option] = options[option]
        if "max_tokens" in options:
            request[self.config.max_tokens_param] = options["max_tokens"]
        if self.config.supports_temperature:
            if "temperature" in options:
                request["temperature"] = options["temperature"]
            if temperature is not None:
                request["temperature"] = temperature
        if self.native_tools and tools:
            request["tools"] = [spec.openai_schema() for spec in tools]
        async for chunk in remote_turn(
            self.config, classify_error, lambda: self._either_form(request, messages, tools)
        ):
            yield chunk

    async def _either_form(
        self, request: dict[str, Any], messages: list[ChatMessage], tools: list[ToolSpec]
    ) -> AsyncIterator[PlannerChunk]:
        """The turn; refused over an empty (or missing) ``reasoning_content``, once more
        with the other form, which later turns then use at once."""
        try:
            async for chunk in self._turn(request, tools):
                yield chunk
            return
        except openai.BadRequestError as exc:
            if not self.config.thinking or not refuses_reasoning_form(exc, request):
                raise
        self._send_empty_reasoning = not self._send_empty_reasoning
        async for chunk in self._turn({**request, "messages": self._messages(messages, tools)},
                                      tools):  # fmt: skip
            yield chunk

    async def _turn(
        self, request: dict[str, Any], tools: list[ToolSpec]
    ) -> AsyncIterator[PlannerChunk]:
        if self._stream:
            try:
                async for chunk in self._streamed(request, tools):
                    yield chunk
                return
            except openai.BadRequestError as exc:
                if not refuses_streaming(exc):
                    raise
                self._stream = False  # remembered: later turns ask without streaming at once
        async for chunk in self._whole(request, tools):
            yield chunk

    async def _whole(
        self, request: dict[str, Any], tools: list[ToolSpec]
    ) -> AsyncIterator[PlannerChunk]:
        """One non-streamed call, given out as the same chunks a stream would give."""
        response = await create_chat(self.client, request)
        usage = chat_usage(response.usage)
        text = ""
        record = ReasoningRecord()
        if response.choices:
            message = response.choices[0].message
            reasoning = record.add(message)
            if reasoning:
                yield TextDelta(reasoning, kind="reasoning")
            text = message.content or ""
            if text:
                yield TextDelta(text)
            for call in message.tool_calls or []:
                function = getattr(call, "function", None)
                if function is None:
                    continue
                yield self._request(
                    {"id": call.id, "name": function.name or "", "args": [function.arguments]}
                )
        if not self.native_tools and tools:
            for call in parse_tool_calls(text, f"tag{next(self._ids)}"):
                yield call
        yield TurnEnd(usage=usage, cost=self.config.prices.cost(usage), raw=record.raw())

    async def _streamed(
        self, request: dict[str, Any], tools: list[ToolSpec]
    ) -> AsyncIterator[PlannerChunk]:
        request = {**request, "stream": True}
        if self.config.options.get("stream_usage", True):
            request["stream_options"] = {"include_usage": True}
        stream = await create_chat(self.client, request)
        text_parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage(reported=False)  # until a chunk carries the counts
        record = ReasoningRecord()
        async for chunk in stream:
            if chunk.usage:
                usage = chat_usage(chunk.usage)
            for choice in chunk.choices or []:
                if not chunk.usage and (counted := choice_usage(choice)) is not None:
                    usage = chat_usage(counted)  # Moonshot (Kimi): on the choice
                delta = choice.delta
                if delta is None:
                    continue
                reasoning = record.add(delta)
                if reasoning:
                    yield TextDelta(reasoning, kind="reasoning")
                if delta.content:
                    text_parts.append(delta.content)
                    yield TextDelta(delta.content)
                for call in delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"id": None, "name": "", "args": []})
                    if call.id:
                        slot["id"] = call.id
                    if call.function is not None:
                        if call.function.name:
                            slot["name"] = _joined_name(slot["name"], call.function.name)
                        if call.function.arguments:
                            slot["args"].append(call.function.arguments)
        for index in sorted(calls):
            yield self._request(calls[index])
        if not self.native_tools and tools:
            for call in parse_tool_calls("".join(text_parts), f"tag{next(self._ids)}"):
                yield call
        yield TurnEnd(usage=usage, cost=self.config.prices.cost(usage), raw=record.raw())

    def _request(self, slot: dict[str, Any]) -> ToolCallRequest:
        call_id = slot["id"] or f"call_{next(self._ids)}"
        raw = "".join(slot["args"]).strip() or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            return ToolCallRequest(
                call_id,
                slot["name"],
                {"_raw": raw},
                parse_error=f"The arguments of {slot['name']} are not valid JSON "
                f"({exc.msg} at {exc.pos}): {raw[:200]}",
            )
        if not isinstance(arguments, dict):
            return ToolCallRequest(
                call_id, slot["name"], {"_raw": raw}, parse_error="arguments must be an object"
            )
        return ToolCallRequest(call_id, slot["name"], arguments)

    def _messages(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> list[dict]:
        out: list[dict[str, Any]] = []
        made_for_model: set[str] = set()  # calls the app made: their results go as a note
        for message in messages:
            if message.role == "system":
                content = message.content
                if not self.native_tools and tools:
                    content += "\n\n" + tool_instructions(tools)
                out.append({"role": "system", "content": content})
            elif message.role == "user":
                out.append({"role": "user", "content": message.content})
            elif message.role == "assistant":
                if message.tool_calls and self.config.thinking and not own_turn(message.raw):
                    # a thinking model has no reasoning for a call it never made
                    made_for_model.update(call.id for call in message.tool_calls)
                    if message.content:
                        out.append({"role": "assistant", "content": message.content})
                    continue
                out.append(self._assistant_item(message))
            elif message.role == "tool":
                if message.tool_call_id in made_for_model:
                    _add_result(out, message, heading=MADE_FOR_YOU)
                elif self.native_tools:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": message.tool_call_id,
                            "content": message.content,
                        }
                    )
                else:
                    _add_result(out, message)
        for item in out:
            item.pop("_results", None)
        return out

    def _assistant_item(self, message: ChatMessage) -> dict[str, Any]:
        item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if self.native_tools and message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments.get("_raw")
                        if call.parse_error
                        else json.dumps(call.arguments),
                    },
                }
                for call in message.tool_calls
            ]
        if item["content"] is None and "tool_calls" not in item:
            item["content"] = ""
        if message.tool_calls and (self.config.thinking or self.config.reasoning_field):
            # the catalogue says the server takes the reasoning back (others may refuse an
            # unknown field): it goes back where the model acted on it
            attach(
                item,
                message.raw,
                rename=self.config.reasoning_field,
                thinking=self.config.thinking,
                send_empty=self._send_empty_reasoning,
            )
        return item


def _add_result(out: list[dict[str, Any]], message: ChatMessage, heading: str = "") -> None:
    """A tool result as text in a user message (the tag protocol, or a call the app made),
    joined to the one before it when that holds results too."""
    text = format_result(message.name or "", message.tool_call_id or "", message.content)
    if out and out[-1]["role"] == "user" and out[-1].get("_results") == (heading or True):
        out[-1]["content"] += "\n" + text
    else:
        content = f"{heading}\n{text}" if heading else text
        out.append({"role": "user", "content": content, "_results": heading or True})


def _joined_name(so_far: str, piece: str) -> str:
    """Function names arrive whole in the first chunk (OpenAI) or again in every chunk
    (some OpenAI-compatible servers); a repeat of the whole name is not a new piece."""
    if not so_far:
        return piece
    return so_far if piece == so_far else so_far + piece
