"""Planner for OpenAI's own models through the Responses API (``api = "responses"``).

OpenAI's current models take tool calls with reasoning only here. Streams the reasoning
summary (as reasoning) and the answer text; function calls arrive as whole output items.
Each turn sends the full input (``store = false``): earlier model turns go back exactly as
they came (``TurnEnd.raw`` holds the output items, with the encrypted reasoning that a
reasoning model needs next to its function calls). A provider that refuses to stream (the
400 for organisations that are not verified) gets a non-streamed call, remembered.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from agent.events import Usage
from agent.openai_client import classify_error, make_client, refuses_streaming
from agent.planners.base import (
    ChatMessage,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.planners.retrying import remote_turn
from agent.remote import ModelConfig


class OpenAIResponsesPlanner:
    is_llm = True

    def __init__(self, config: ModelConfig, client: openai.AsyncOpenAI | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or f"{config.model} (OpenAI)"
        self.model = config.model
        self.client = client or make_client(config)
        self.fixed_temperature = not config.supports_temperature
        self._stream = config.streaming
        self._ids = itertools.count(1)

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        instructions, items = to_input(messages)
        request: dict[str, Any] = {"model": self.model, "input": items, "store": False}
        if instructions:
            request["instructions"] = instructions
        options = self.config.options
        effort = options.get("reasoning_effort")
        if effort:
            request["reasoning"] = {
                "effort": effort,
                "summary": options.get("reasoning_summary", "auto"),
            }
            request["include"] = ["reasoning.encrypted_content"]
        if "max_tokens" in options:
            request["max_output_tokens"] = options["max_tokens"]
        if self.config.supports_temperature:
            if "temperature" in options:
                request["temperature"] = options["temperature"]
            if temperature is not None:
                request["temperature"] = temperature
        if tools:
            request["tools"] = [function_tool(spec) for spec in tools]
            if force_answer:
                request["tool_choice"] = "none"
        async for chunk in remote_turn(self.config, classify_error, lambda: self._turn(request)):
            yield chunk

    async def _turn(self, request: dict[str, Any]) -> AsyncIterator[PlannerChunk]:
        if self._stream:
            try:
                async for chunk in self._streamed(request):
                    yield chunk
                return
            except openai.BadRequestError as exc:
                if not refuses_streaming(exc):
                    raise
                self._stream = False  # later turns ask without streaming at once
        response = await self.client.responses.create(**request)
        for item in response.output or []:
            if item.type == "reasoning":
                text = "".join(s.text for s in item.summary or [])
                if text:
                    yield TextDelta(text, kind="reasoning")
            elif item.type == "message":
                text = "".join(
                    getattr(c, "text", "") or ""
                    for c in item.content or []
                    if c.type == "output_text"
                )
                if text:
                    yield TextDelta(text)
        for chunk in self._finish(response):
            yield chunk

    async def _streamed(self, request: dict[str, Any]) -> AsyncIterator[PlannerChunk]:
        stream = await self.client.responses.create(**request, stream=True)
        final = None
        async for event in stream:
            kind = event.type
            if kind == "response.reasoning_summary_text.delta":
                yield TextDelta(event.delta, kind="reasoning")
            elif kind == "response.output_text.delta":
                yield TextDelta(event.delta)
            elif kind in ("response.completed", "response.incomplete"):
                final = event.response
            elif kind in ("response.failed", "error"):
                message = getattr(getattr(event, "response", None), "error", None) or event
                raise RuntimeError(f"the response failed: {getattr(message, 'message', message)}")
        if final is None:
            raise RuntimeError("the stream ended without a completed response")
        for chunk in self._finish(final):
            yield chunk

    def _finish(self, response: Any) -> list[PlannerChunk]:
        """Function calls, then the turn's end with usage, cost and the raw output items."""
        out: list[PlannerChunk] = []
        raw = [item.model_dump(exclude_none=True) for item in response.output or []]
        for item in response.output or []:
            if item.type == "function_call":
                out.append(self._request(item.call_id, item.name, item.arguments))
        usage = Usage()
        if response.usage is not None:
            usage = Usage(
                input_tokens=response.usage.input_tokens or 0,
                output_tokens=response.usage.output_tokens or 0,
            )
        out.append(TurnEnd(usage=usage, cost=self.config.prices.cost(usage), raw={"items": raw}))
        return out

    def _request(self, call_id: str | None, name: str, raw_arguments: str) -> ToolCallRequest:
        call_id = call_id or f"call_{next(self._ids)}"
        raw = (raw_arguments or "").strip() or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            return ToolCallRequest(
                call_id,
                name,
                {"_raw": raw},
                parse_error=f"The arguments of {name} are not valid JSON "
                f"({exc.msg} at {exc.pos}): {raw[:200]}",
            )
        if not isinstance(arguments, dict):
            return ToolCallRequest(
                call_id, name, {"_raw": raw}, parse_error="arguments must be an object"
            )
        return ToolCallRequest(call_id, name, arguments)


def function_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters or {"type": "object", "properties": {}},
    }


def own_items(raw: Any) -> list[dict[str, Any]] | None:
    """The output items of a model turn this planner produced (``TurnEnd.raw``)."""
    if isinstance(raw, dict) and isinstance(raw.get("items"), list):
        return [dict(item) for item in raw["items"]]
    return None


_DROP = {"status"}  # output-only fields the input does not take back


def to_input(messages: list[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The history as Responses input items; system messages become the instructions."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            instructions.append(message.content)
        elif message.role == "user":
            items.append({"role": "user", "content": message.content})
        elif message.role == "assistant":
            own = own_items(message.raw)
            if own is not None:
                for item in own:
                    items.append({k: v for k, v in item.items() if k not in _DROP})
                continue
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for call in message.tool_calls:
                arguments = (
                    call.arguments.get("_raw") if call.parse_error else json.dumps(call.arguments)
                )
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments,
                    }
                )
        elif message.role == "tool":
            output = message.content if not message.error else f"ERROR: {message.error}"
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": output,
                }
            )
    return ("\n\n".join(instructions) or None), items
