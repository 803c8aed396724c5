"""The Responses API as the fake OpenAI server plays it: scripted replies turned into output
items, the response object and its typed event stream
(https://platform.openai.com/docs/api-reference/responses-streaming).

Like the real API it sends a reasoning summary only when one was asked for, and the
encrypted reasoning only when ``include`` asks for ``reasoning.encrypted_content``.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any


def pieces(text: str, size: int = 7) -> list[str]:
    """``text`` in the small pieces a stream sends it in."""
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class ResponsesReply:
    """One scripted Responses API answer: a reasoning summary, text, function calls."""

    text: str = ""
    summary: str = ""  # the reasoning summary (a reasoning item is sent when set)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    usage: tuple[int, int, int] = (120, 30, 10)  # input, output, of which reasoning
    cached_tokens: int = 0
    error: Any = None  # a tests.fake_openai.Reply: answer with this error instead


_ITEM_IDS = iter(range(1, 1_000_000))


def response_items(reply: ResponsesReply, body: dict[str, Any]) -> list[dict[str, Any]]:
    n = next(_ITEM_IDS)
    items: list[dict[str, Any]] = []
    if reply.summary or reply.calls:
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{n}",
            # a summary only when one was asked for
            "summary": [{"type": "summary_text", "text": reply.summary}]
            if reply.summary and (body.get("reasoning") or {}).get("summary")
            else [],
        }
        # the encrypted reasoning only when asked for (include)
        if "reasoning.encrypted_content" in (body.get("include") or []):
            reasoning["encrypted_content"] = f"enc-{n}"
        items.append(reasoning)
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for i, (name, arguments) in enumerate(reply.calls):
        # the reasoning item that led to the call shares its number (reasoning_item_required)
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}" if i == 0 else f"fc_{n}_{i}",
                "call_id": f"call_{n}_{i}",
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return items


def response_object(
    model: str, reply: ResponsesReply, items: list[dict[str, Any]]
) -> dict[str, Any]:
    prompt, output, reasoning = reply.usage
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + output,
        },
    }


def response_events(model: str, reply: ResponsesReply, body: dict[str, Any]):
    """The typed event stream (https://platform.openai.com/docs/api-reference/responses-streaming)."""
    seq = itertools.count()

    def event(kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": next(seq), **fields}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    items = response_items(reply, body)
    started = {**response_object(model, reply, []), "status": "in_progress", "usage": None}
    yield event("response.created", response=started)
    for index, item in enumerate(items):
        opened = dict(item)
        if item["type"] == "reasoning":
            opened["summary"] = []
        elif item["type"] == "message":
            opened["content"] = []
        elif item["type"] == "function_call":
            opened["arguments"] = ""
        yield event("response.output_item.added", output_index=index, item=opened)
        if item["type"] == "reasoning":
            for piece in pieces(reply.summary):
                yield event(
                    "response.reasoning_summary_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
        elif item["type"] == "message":
            for piece in pieces(reply.text):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
        elif item["type"] == "function_call":
            for piece in pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response_object(model, reply, items))
