"""Planner over any OpenAI-compatible chat endpoint (OpenAI, DeepSeek, Kimi, OpenRouter,
vLLM, Ollama) through the ``openai`` SDK.

Streams text; native function calling with tool-call deltas assembled by index, or, for
endpoints without it (``function_calling = false`` in the catalogue), the tag protocol.
Reasoning text that the endpoint returns separately (``reasoning_content`` or
``reasoning``) is streamed as reasoning.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from agent.events import Usage
from agent.openai_client import classify_error, make_client
from agent.planners.base import (
    ChatMessage,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.planners.retrying import retrying_turn
from agent.planners.tag_protocol import format_result, parse_tool_calls, tool_instructions
from agent.remote import ModelConfig


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
            "stream": True,
        }
        if self.config.options.get("stream_usage", True):
            request["stream_options"] = {"include_usage": True}
        for option in ("temperature", "top_p", "max_tokens", "reasoning_effort"):
            if option in self.config.options:
                request[option] = self.config.options[option]
        if temperature is not None:
            request["temperature"] = temperature
        if self.native_tools and tools:
            request["tools"] = [spec.openai_schema() for spec in tools]
        async for chunk in retrying_turn(
            self.name, self.config, classify_error, lambda: self._stream(request, tools)
        ):
            yield chunk

    async def _stream(
        self, request: dict[str, Any], tools: list[ToolSpec]
    ) -> AsyncIterator[PlannerChunk]:
        stream = await self.client.chat.completions.create(**request)
        text_parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        async for chunk in stream:
            if chunk.usage:
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens or 0,
                    output_tokens=chunk.usage.completion_tokens or 0,
                )
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is None:
                    continue
                reasoning = _reasoning_text(delta)
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
                            slot["name"] += call.function.name
                        if call.function.arguments:
                            slot["args"].append(call.function.arguments)
        for index in sorted(calls):
            yield self._request(calls[index])
        if not self.native_tools and tools:
            for call in parse_tool_calls("".join(text_parts), f"tag{next(self._ids)}"):
                yield call
        yield TurnEnd(usage=usage, cost=self.config.prices.cost(usage))

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
        for message in messages:
            if message.role == "system":
                content = message.content
                if not self.native_tools and tools:
                    content += "\n\n" + tool_instructions(tools)
                out.append({"role": "system", "content": content})
            elif message.role == "user":
                out.append({"role": "user", "content": message.content})
            elif message.role == "assistant":
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
                out.append(item)
            elif message.role == "tool":
                if self.native_tools:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": message.tool_call_id,
                            "content": message.content,
                        }
                    )
                else:
                    text = format_result(
                        message.name or "", message.tool_call_id or "", message.content
                    )
                    if out and out[-1]["role"] == "user" and out[-1].get("_results"):
                        out[-1]["content"] += "\n" + text
                    else:
                        out.append({"role": "user", "content": text, "_results": True})
        for item in out:
            item.pop("_results", None)
        return out


def _reasoning_text(delta: Any) -> str | None:
    for attribute in ("reasoning_content", "reasoning"):
        value = getattr(delta, attribute, None)
        if value is None and delta.model_extra:
            value = delta.model_extra.get(attribute)
        if isinstance(value, str) and value:
            return value
    return None
