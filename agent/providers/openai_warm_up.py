"""The OpenAI SDK's warm-up (``agent.sdk_warm_up``): its calls answered in memory, for Chat
Completions (OpenAI-compatible servers) and the Responses API (OpenAI's own models)."""

from __future__ import annotations

import json
from typing import Any

import openai

from agent.sdk_warm_up import WARM_UP_URL, http_lib, sse, two_turns

_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}

# Entries like the catalogue's: an OpenAI-compatible chat planner, and OpenAI's Responses
# API planner with reasoning (its request carries reasoning settings and items).
CHAT_ENTRY: dict[str, Any] = {"provider": "openai_compatible"}
RESPONSES_ENTRY: dict[str, Any] = {
    "provider": "openai", "api": "responses", "supports_temperature": False,
    "max_tokens_param": "max_output_tokens", "reasoning_effort": "medium",
    "reasoning_summary": "auto",
}  # fmt: skip


async def round_trips(settings: dict[str, Any]) -> None:
    """Two turns, streamed and whole, of the planner an entry like ``settings`` makes."""
    from agent.planners.openai_compat import OpenAICompatPlanner
    from agent.planners.openai_responses import OpenAIResponsesPlanner
    from agent.remote import ModelConfig

    http = openai.DefaultAsyncHttpxClient(transport=http_lib.MockTransport(_reply))
    client = openai.AsyncOpenAI(api_key="warm-up", base_url=WARM_UP_URL, http_client=http)
    kind = OpenAIResponsesPlanner if settings.get("api") else OpenAICompatPlanner
    try:
        for streaming in (True, False):
            entry = {"name": "warm-up", "model": "warm-up", "base_url": WARM_UP_URL,
                     "streaming": streaming, **settings}  # fmt: skip
            await two_turns(kind(ModelConfig.from_entry(entry, {}), client=client))
    finally:
        await client.close()


def _reply(request: http_lib.Request) -> http_lib.Response:
    body = json.loads(request.content)
    streamed = bool(body.get("stream"))
    if request.url.path.endswith("/responses"):
        events = _response_events() if streamed else None
        return sse(events) if events else http_lib.Response(200, json=_response("completed"))
    return sse(_chat_chunks()) if streamed else http_lib.Response(200, json=_chat_whole())


# -- Chat Completions: a tool call with text, whole and streamed, with usage ---------------

_CHAT_HEAD = {"id": "warm-up", "created": 0, "model": "warm-up"}
_CHAT_USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2,
               "prompt_tokens_details": {"cached_tokens": 0}}  # fmt: skip


def _chat_whole() -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": [_CALL]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    return {**_CHAT_HEAD, "object": "chat.completion", "usage": _CHAT_USAGE, "choices": [choice]}


def _chat_chunks() -> list[dict[str, Any]]:
    head = {**_CHAT_HEAD, "object": "chat.completion.chunk"}
    deltas = [{"role": "assistant", "content": "warm"}, {"tool_calls": [{**_CALL, "index": 0}]}]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    chunks.append({**head, "choices": [], "usage": _CHAT_USAGE})
    return chunks


# -- Responses: reasoning, a message and a function call, whole and as the typed events ------

_ITEMS = [
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "warm"}]},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "warm", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
     "arguments": "{}", "status": "completed"},
]  # fmt: skip


def _response(status: str) -> dict[str, Any]:
    done = status == "completed"
    usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 2}  # fmt: skip
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "warm-up",
            "status": status, "output": _ITEMS if done else [], "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": usage if done else None}  # fmt: skip


def _response_events() -> list[dict[str, Any]]:
    summary = {"output_index": 0, "summary_index": 0, "item_id": "rs_1"}
    text = {"output_index": 1, "content_index": 0, "item_id": "msg_1"}
    call = {"output_index": 2, "item_id": "fc_1"}
    opened = [{**_ITEMS[0], "summary": []}, {**_ITEMS[1], "content": []},
              {**_ITEMS[2], "arguments": ""}]  # fmt: skip
    empty_summary = {"type": "summary_text", "text": ""}
    empty_text = {"type": "output_text", "text": "", "annotations": []}

    def item(kind: str, index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": f"response.output_item.{kind}", "output_index": index, "item": body}

    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress")},
        {"type": "response.in_progress", "response": _response("in_progress")},
        item("added", 0, opened[0]),
        {"type": "response.reasoning_summary_part.added", **summary, "part": empty_summary},
        {"type": "response.reasoning_summary_text.delta", **summary, "delta": "warm"},
        {"type": "response.reasoning_summary_text.done", **summary, "text": "warm"},
        item("done", 0, _ITEMS[0]),
        item("added", 1, opened[1]),
        {"type": "response.content_part.added", **text, "part": empty_text},
        {"type": "response.output_text.delta", **text, "delta": "warm", "logprobs": []},
        {"type": "response.output_text.done", **text, "text": "warm", "logprobs": []},
        item("done", 1, _ITEMS[1]),
        item("added", 2, opened[2]),
        {"type": "response.function_call_arguments.delta", **call, "delta": "{}"},
        {"type": "response.function_call_arguments.done", **call, "arguments": "{}"},
        item("done", 2, _ITEMS[2]),
        {"type": "response.completed", "response": _response("completed")},
    ]
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]
