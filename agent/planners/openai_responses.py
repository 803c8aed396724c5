"""Planner for OpenAI's own models through the Responses API (``api = "responses"``).

OpenAI's current models take tool calls with reasoning only here. Streams the reasoning
summary (as reasoning) and the answer text; function calls arrive as whole output items.
Each turn sends the full input (``store = false``): earlier model turns go back exactly as
they came (``TurnEnd.raw`` holds the output items). With ``store = false`` nothing is kept
on OpenAI's side, so the encrypted reasoning is always asked for: a reasoning item sent
back without it is "not found".

Organisations that are not verified get two 400s, each answered once and remembered for
the process: a refused stream (a non-streamed call instead) and a refused reasoning
summary (``reasoning_summary`` in the catalogue; the turn is asked again without it, and
the turn's notice says why there is no summary).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from agent.events import Usage
from agent.openai_client import (
    cached_tokens,
    classify_error,
    make_client,
    refuses_reasoning_summary,
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
from agent.planners.retrying import remote_turn
from agent.remote import ModelConfig

NO_SUMMARY_NOTICE = (
    "No reasoning summary: OpenAI answered that this organisation must be verified to "
    "generate reasoning summaries, so this planner asks without them from now on. Verify "
    "the organisation at https://platform.openai.com/settings/organization/general to see "
    "them (then restart the app)."
)
# (endpoint, model, key fingerprint) whose organisation was refused reasoning summaries
_SUMMARY_REFUSED: set[tuple[str, str, str]] = set()


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
        key = hashlib.sha256((config.key() or "").encode()).hexdigest()[:16]
        self._organisation = (config.url() or "https://api.openai.com/v1", self.model, key)

    @property
    def summary(self) -> str | None:
        """The reasoning summary to ask for, or None (switched off, or refused here)."""
        value = self.config.options.get("reasoning_summary", "auto")
        if value in (None, False, "", "none", "off") or self._organisation in _SUMMARY_REFUSED:
            return None
        return str(value)

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
        reasoning: dict[str, Any] = {}
        if options.get("reasoning_effort"):
            reasoning["effort"] = options["reasoning_effort"]
        if self.summary:
            reasoning["summary"] = self.summary
        if reasoning:
            request["reasoning"] = reasoning
        if options.get("encrypted_reasoning", True):  # store is false: nothing kept there
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
        try:
            async for chunk in self._attempt(request, notice=""):
                yield chunk
        except openai.BadRequestError as exc:
            summary = (request.get("reasoning") or {}).get("summary")
            if not summary or not refuses_reasoning_summary(exc):
                raise
            _SUMMARY_REFUSED.add(self._organisation)  # remembered for the process
            reasoning = {k: v for k, v in request["reasoning"].items() if k != "summary"}
            retry = {k: v for k, v in request.items() if k != "reasoning"}
            if reasoning:
                retry["reasoning"] = reasoning
            async for chunk in self._attempt(retry, notice=NO_SUMMARY_NOTICE):
                yield chunk

    async def _attempt(self, request: dict[str, Any], notice: str) -> AsyncIterator[PlannerChunk]:
        if not notice and self._organisation in _SUMMARY_REFUSED:
            notice = NO_SUMMARY_NOTICE
        if self._stream:
            try:
                async for chunk in self._streamed(request, notice):
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
        for chunk in self._finish(response, notice):
            yield chunk

    async def _streamed(self, request: dict[str, Any], notice: str) -> AsyncIterator[PlannerChunk]:
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
        for chunk in self._finish(final, notice):
            yield chunk

    def _finish(self, response: Any, notice: str = "") -> list[PlannerChunk]:
        """Function calls, then the turn's end with usage, cost and the raw output items."""
        out: list[PlannerChunk] = []
        raw = [item.model_dump(exclude_none=True) for item in response.output or []]
        for item in response.output or []:
            if item.type == "function_call":
                out.append(self._request(item.call_id, item.name, item.arguments))
        usage = Usage(reported=False)
        if response.usage is not None:
            usage = Usage(
                input_tokens=response.usage.input_tokens or 0,
                output_tokens=response.usage.output_tokens or 0,
                cache_read_tokens=cached_tokens(response.usage),
            )
        cost = self.config.prices.cost(usage)
        out.append(TurnEnd(usage=usage, cost=cost, raw={"items": raw}, notice=notice))
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
    """A function tool with ``strict`` said out loud: the Responses API takes a missing
    ``strict`` as true, and strict mode refuses our schemas (optional arguments, no
    ``additionalProperties: false``) with a 400 "Invalid schema for function"."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.parameters or {"type": "object", "properties": {}},
        "strict": False,
    }


def own_items(raw: Any) -> list[dict[str, Any]] | None:
    """The output items of a model turn this planner produced (``TurnEnd.raw``)."""
    if isinstance(raw, dict) and isinstance(raw.get("items"), list):
        return [dict(item) for item in raw["items"]]
    return None


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
            if own is not None:  # exactly as they came: a message item requires its status
                items.extend(own)
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
