"""A small server that speaks the OpenAI wire protocol, for driving the official SDK in tests.

Chat completions (streamed with tool-call deltas, reasoning deltas and usage, or not
streamed), the Responses API (its typed event stream), audio transcriptions and the model
list. Responses are scripted: a queue of ``Reply`` objects, or a function of the request
body. Every request body is recorded for assertions.

It is strict: it rejects what the real APIs reject (``Strict`` below; each rule cites its
source) and sends what they send (the full function name repeated in every chunk where
some servers do, ``Retry-After``, usage shapes, ``x-request-id``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON args)
    usage: tuple[int, int] = (100, 20)
    audio_tokens: int = 0
    status: int = 200  # non-200: an error reply with ``error`` as the message
    error: str = "scripted error"
    code: str | None = None  # error.code, e.g. "insufficient_quota", "rate_limit_exceeded"
    param: str | None = None
    retry_after: float | None = None  # seconds, sent as Retry-After with an error
    delay_s: float = 0.0


@dataclass
class Strict:
    """What a model accepts; the fake answers 400 (with the real message) otherwise."""

    # Reasoning models take only the default temperature and max_completion_tokens.
    # https://platform.openai.com/docs/guides/reasoning ("Unsupported value: 'temperature'
    # does not support 0.2 with this model. Only the default (1) value is supported.")
    reasoning: bool = False
    # Voxtral (mistral-common before tokenizer v13) rejects a system prompt with audio.
    # https://github.com/mistralai/mistral-common/pull/305
    no_system_with_audio: bool = False
    # input_audio formats the model takes (https://platform.openai.com/docs/guides/audio)
    audio_formats: tuple[str, ...] = ("wav", "mp3")
    # "Your organization must be verified to stream this model" (400, param stream)
    # https://help.openai.com/en/articles/10910291-api-organization-verification
    refuse_stream: bool = False
    # Some OpenAI-compatible servers repeat the whole function name in every tool-call
    # chunk (OpenAI sends it once); a client must not concatenate them.
    repeat_names: bool = False


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeOpenAI:
    def __init__(
        self,
        *,
        key: str | None = None,
        models: dict[str, Strict] | None = None,
        shutdown: dict[str, str] | None = None,
    ) -> None:
        # With ``key`` set, any other bearer token gets the real 401 body.
        self.key = key
        # With ``models`` set, other model ids get the real 404 model_not_found.
        self.models = models
        self.shutdown = shutdown or {}  # model -> YYYY-MM-DD, in GET /v1/models
        self.responses: deque[ResponsesReply] = deque()
        self.chat: deque[Reply] = deque()
        self.chat_fn: Callable[[dict[str, Any]], Reply] | None = None
        self.transcripts: deque[dict[str, Any] | Reply] = deque()
        # Or answer from the uploaded wav bytes (concurrent windows arrive in any order).
        self.transcript_fn: Callable[[bytes], dict[str, Any]] | None = None
        self.requests: list[Recorded] = []
        self.app = self._build()

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def _next_chat(self, body: dict[str, Any]) -> Reply:
        if self.chat:
            return self.chat.popleft()
        if self.chat_fn:
            return self.chat_fn(body)
        return Reply(text="<answer>nothing scripted</answer>")

    def strict(self, model: str) -> Strict:
        return (self.models or {}).get(model, Strict())

    def _gate(self, request: Request, model: str | None) -> JSONResponse | None:
        """The checks every endpoint makes first: the key, then the model."""
        if self.key is not None:
            auth = request.headers.get("authorization", "")
            if auth != f"Bearer {self.key}":
                # https://platform.openai.com/docs/guides/error-codes (401 invalid_api_key)
                return _error(
                    Reply(status=401, error="Incorrect API key provided.", code="invalid_api_key")
                )
        if model is not None and self.models is not None and model not in self.models:
            return _error(
                Reply(
                    status=404,
                    error=f"The model `{model}` does not exist or you do not have access to it.",
                    code="model_not_found",
                )
            )
        return None

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        async def list_models(request: Request):
            self.requests.append(Recorded(request.url.path, {}, dict(request.headers)))
            if (refused := self._gate(request, None)) is not None:
                return refused
            # https://developers.openai.com/api/docs/deprecations: "call GET /v1/models and
            # check each model's optional shutdown_date field" (YYYY-MM-DD or null)
            data = [
                {
                    "id": name,
                    "object": "model",
                    "created": 1_750_000_000,
                    "owned_by": "system",
                    "shutdown_date": self.shutdown.get(name),
                }
                for name in (self.models or {})
            ]
            return JSONResponse({"object": "list", "data": data})

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(Recorded(request.url.path, body, dict(request.headers)))
            if (refused := self._gate(request, body.get("model"))) is not None:
                return refused
            if (rejected := _check_chat(body, self.strict(body["model"]))) is not None:
                return _error(rejected)
            reply = self._next_chat(body)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.status != 200:
                return _error(reply)
            if body.get("stream"):
                include_usage = (body.get("stream_options") or {}).get("include_usage")
                return StreamingResponse(
                    _chunks(
                        body["model"],
                        reply,
                        bool(include_usage),
                        repeat_names=self.strict(body["model"]).repeat_names,
                    ),
                    media_type="text/event-stream",
                )
            return JSONResponse(_completion(body["model"], reply))

        @app.post("/v1/responses")
        async def responses(request: Request):
            body = await request.json()
            self.requests.append(Recorded(request.url.path, body, dict(request.headers)))
            if (refused := self._gate(request, body.get("model"))) is not None:
                return refused
            if (rejected := _check_responses(body, self.strict(body["model"]))) is not None:
                return _error(rejected)
            reply = self.responses.popleft() if self.responses else ResponsesReply(text="ok")
            if reply.error is not None:
                return _error(reply.error)
            if body.get("stream"):
                return StreamingResponse(
                    _response_events(body["model"], reply), media_type="text/event-stream"
                )
            return JSONResponse(_response_object(body["model"], reply))

        @app.post("/v1/audio/transcriptions")
        async def transcriptions(request: Request):
            form = await request.form()
            upload = form["file"]
            data = await upload.read()  # type: ignore[union-attr]
            fields = {k: v for k, v in form.multi_items() if k != "file"}
            fields["_file_bytes"] = len(data)
            fields["_file_head"] = data[:4].decode("latin-1")
            self.requests.append(Recorded(request.url.path, fields, dict(request.headers)))
            if (refused := self._gate(request, str(fields.get("model")))) is not None:
                return refused
            if self.transcripts:
                reply = self.transcripts.popleft()
            elif self.transcript_fn:
                reply = self.transcript_fn(data)
            else:
                reply = {"text": ""}
            if isinstance(reply, Reply):
                return _error(reply)
            if fields.get("response_format") == "verbose_json":
                return JSONResponse(
                    {"task": "transcribe", "language": "english", "duration": 1.0, **reply}
                )
            return JSONResponse({"text": reply["text"]})

        return app


def _error(reply: Reply) -> JSONResponse:
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 429: "requests"}
    headers = {"x-request-id": "req_fake"}
    if reply.retry_after is not None:
        headers["retry-after"] = f"{reply.retry_after:g}"
    return JSONResponse(
        {
            "error": {
                "message": reply.error,
                "type": kind.get(reply.status, "server_error"),
                "param": reply.param,
                "code": reply.code,
            }
        },
        status_code=reply.status,
        headers=headers,
    )


def _bad(message: str, param: str, code: str = "unsupported_value") -> Reply:
    return Reply(status=400, error=message, param=param, code=code)


def _check_chat(body: dict[str, Any], strict: Strict) -> Reply | None:
    """What the real Chat Completions API rejects, for the model's ``Strict`` rules."""
    if strict.reasoning:
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return _bad(
                f"Unsupported value: 'temperature' does not support {temperature} with this "
                "model. Only the default (1) value is supported.",
                "temperature",
            )
        if "max_tokens" in body:
            return _bad(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
            )
    if strict.refuse_stream and body.get("stream"):
        return _bad(
            "Your organization must be verified to stream this model. Please go to: "
            "https://platform.openai.com/settings/organization/general and click on Verify "
            "Organization.",
            "stream",
        )
    messages = body.get("messages") or []
    has_audio = False
    for message in messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "input_audio":
                has_audio = True
                fmt = (part.get("input_audio") or {}).get("format")
                if fmt not in strict.audio_formats:
                    return _bad(
                        f"Invalid value: '{fmt}'. Supported values are: "
                        + ", ".join(f"'{f}'" for f in strict.audio_formats),
                        "messages.content.input_audio.format",
                        "invalid_value",
                    )
    if (
        strict.no_system_with_audio
        and has_audio
        and any(m.get("role") == "system" for m in messages)
    ):
        # vLLM passes mistral-common's ValueError on as a 400
        return _bad("System prompt is not supported with audio.", "messages", "BadRequestError")
    # Every assistant tool call is answered by a tool message with its id, and every tool
    # message answers one (https://platform.openai.com/docs/guides/function-calling).
    pending: set[str] = set()
    for message in messages:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return _bad(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    "messages",
                    "invalid_value",
                )
            pending.discard(call_id)
            continue
        if pending:
            return _bad(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(sorted(pending))}",
                "messages",
                "invalid_value",
            )
        if message.get("role") == "assistant":
            pending = {c["id"] for c in message.get("tool_calls") or []}
    return None


def _completion(model: str, reply: Reply) -> dict[str, Any]:
    prompt, completion = reply.usage
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"audio_tokens": reply.audio_tokens, "cached_tokens": 0},
        },
    }


def _chunks(model: str, reply: Reply, include_usage: bool, *, repeat_names: bool = False):
    def chunk(delta: dict[str, Any], finish: str | None = None, usage=None) -> str:
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage:
            payload["usage"] = usage
        return f"data: {json.dumps(payload)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.reasoning):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text):
        yield chunk({"content": piece})
    for index, (name, arguments) in enumerate(reply.tool_calls):
        half = len(arguments) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": f"call_{index}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments[:half]},
                    }
                ]
            }
        )
        later: dict[str, Any] = {"arguments": arguments[half:]}
        if repeat_names:
            later["name"] = name
        yield chunk({"tool_calls": [{"index": index, "function": later}]})
    yield chunk({}, finish="tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        prompt, completion = reply.usage
        yield chunk(
            {},
            usage={
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        )
    yield "data: [DONE]\n\n"


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- the Responses API ------------------------------------------------------------------------


@dataclass
class ResponsesReply:
    """One scripted Responses API answer: a reasoning summary, text, function calls."""

    text: str = ""
    summary: str = ""  # the reasoning summary (a reasoning item is sent when set)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    usage: tuple[int, int, int] = (120, 30, 10)  # input, output, of which reasoning
    error: Reply | None = None


_ITEM_IDS = iter(range(1, 1_000_000))


def _check_responses(body: dict[str, Any], strict: Strict) -> Reply | None:
    """What the real Responses API rejects (https://platform.openai.com/docs/api-reference/responses)."""
    if strict.reasoning and "temperature" in body:
        # OpenAI's latest-model guide: "When reasoning effort is not none, remove
        # temperature, top_p, and top_logprobs."
        return _bad(
            "Unsupported parameter: 'temperature' is not supported with this model.",
            "temperature",
            "unsupported_parameter",
        )
    if strict.refuse_stream and body.get("stream"):
        return _bad(
            "Your organization must be verified to stream this model. Please go to: "
            "https://platform.openai.com/settings/organization/general and click on Verify "
            "Organization.",
            "stream",
        )
    items = body.get("input")
    if not isinstance(items, list):
        return None
    calls: dict[str, int] = {}
    reasoning_ids: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind == "reasoning":
            reasoning_ids.add(item.get("id"))
        elif kind == "function_call":
            calls[item["call_id"]] = index
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                return _bad(
                    f"No tool call found for function call output with call_id "
                    f"{item.get('call_id')}.",
                    "input",
                    "invalid_value",
                )
            calls.pop(item["call_id"])
    if calls:
        missing = ", ".join(sorted(calls))
        return _bad(f"No tool output found for function call {missing}.", "input", "invalid_value")
    # A reasoning model's function call goes back with the reasoning item that preceded it
    # (https://platform.openai.com/docs/guides/reasoning#keeping-reasoning-items-in-context).
    if strict.reasoning:
        for item in items:
            if item.get("type") == "function_call" and str(item.get("id", "")).startswith("fc_"):
                wanted = "rs_" + item["id"][3:].split("_")[0]
                if wanted not in reasoning_ids:
                    return _bad(
                        f"Item '{item['id']}' of type 'function_call' was provided without its "
                        f"required 'reasoning' item: '{wanted}'.",
                        "input",
                        "invalid_value",
                    )
    return None


def _response_items(reply: ResponsesReply) -> list[dict[str, Any]]:
    n = next(_ITEM_IDS)
    items: list[dict[str, Any]] = []
    if reply.summary or reply.calls:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": reply.summary}]
                if reply.summary
                else [],
                "encrypted_content": f"enc-{n}",
            }
        )
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
        # the reasoning item that led to the call shares its number (see _check_responses)
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


def _response_object(
    model: str, reply: ResponsesReply, items: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    prompt, output, reasoning = reply.usage
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "output": items if items is not None else _response_items(reply),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": prompt + output,
        },
    }


def _response_events(model: str, reply: ResponsesReply):
    """The typed event stream (https://platform.openai.com/docs/api-reference/responses-streaming)."""
    seq = itertools.count()

    def event(kind: str, **fields: Any) -> str:
        payload = {"type": kind, "sequence_number": next(seq), **fields}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    items = _response_items(reply)
    started = {**_response_object(model, reply, []), "status": "in_progress", "usage": None}
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
            for piece in _pieces(reply.summary):
                yield event(
                    "response.reasoning_summary_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
        elif item["type"] == "message":
            for piece in _pieces(reply.text):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
        elif item["type"] == "function_call":
            for piece in _pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=_response_object(model, reply, items))
