"""A small server that speaks the OpenAI wire protocol, for driving the official SDK in tests.

Chat completions (streamed with tool-call deltas, reasoning deltas and usage, or not
streamed), the Responses API (its typed event stream), audio transcriptions and the model
list. Responses are scripted: a queue of ``Reply`` objects, or a function of the request
body. Every request body is recorded for assertions.

One server plays several providers: each model has a ``Strict`` profile naming its
provider (``flavor``: openai, deepseek, kimi, openrouter, vllm) and what it accepts. It is
strict: every body first meets the rules built from failures users reported
(``tests/fakes/openai_rules.py``, ``tests/fakes/compat_rules.py``; each answers with the
provider's own error body), then the ``openai`` SDK's own request types
(``tests/fakes/shapes.py``: unknown keys, missing keys, wrong item types, wrong enum values;
a transcription's multipart form read back into one body first).
It sends what the providers send: reasoning in the provider's field (``reasoning_content``,
vLLM's ``reasoning``, OpenRouter's ``reasoning_details`` in pieces), the full function name
repeated in every chunk where some servers do, ``Retry-After``, cached-token counts,
``x-request-id``; and a vLLM-Omni model (``Strict.omni``) asked without
``modalities = ["text"]`` also speaks: its answer has a second choice with the speech.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
import wave
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from tests.fakes import compat_rules, openai_rules  # noqa: F401 - they register the rules
from tests.fakes.profile import Strict
from tests.fakes.responses_api import (
    ResponsesReply,
    pieces,
    response_events,
    response_items,
    response_object,
)
from tests.fakes.rules import Refusal, openai_error, rules_for
from tests.fakes.shapes import openai_errors, transcription_errors

__all__ = ["FakeOpenAI", "Reply", "ResponsesReply", "Strict"]


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON args)
    usage: tuple[int, int] = (100, 20)
    cached_tokens: int = 0  # of the prompt tokens, served from the provider's cache
    audio_tokens: int = 0
    status: int = 200  # non-200: an error reply with ``error`` as the message
    error: str = "scripted error"
    code: str | None = None  # error.code, e.g. "insufficient_quota", "rate_limit_exceeded"
    param: str | None = None
    retry_after: float | None = None  # seconds, sent as Retry-After with an error
    delay_s: float = 0.0


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
        self.refused: list[str] = []  # the ids of the rules that refused a request
        self.spoken = 0  # answers a vLLM-Omni model (``Strict.omni``) also spoke
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

    def _refuse(
        self, endpoint: str, body: dict[str, Any], form: list[tuple[str, Any]] | None = None
    ) -> JSONResponse | None:
        """The first rule the body breaks, then the SDK's request types; None: accepted.
        ``form``: a multipart request's fields as they came (``body`` is what the rules read)."""
        strict = self.strict(str(body.get("model")))
        for candidate in rules_for(endpoint):
            found = candidate.check(body, strict)
            if found is not None:
                return self._answer(found)
        if endpoint == "transcription":
            errors = transcription_errors(form if form is not None else body.items())
        else:
            errors = openai_errors(endpoint, body, strict.extensions())
        if errors:
            where = errors[0].removeprefix("body.")
            message = f"Invalid request ({where})."
            return self._answer(Refusal(*openai_error(message, where.split(":")[0]), "sdk_shape"))
        return None

    def _answer(self, found: Refusal) -> JSONResponse:
        self.refused.append(found.rule)
        return JSONResponse(
            found.body, status_code=found.status, headers={"x-request-id": "req_fake"}
        )

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
            if (refused := self._refuse("chat", body)) is not None:
                return refused
            reply = self._next_chat(body)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.status != 200:
                return _error(reply)
            strict = self.strict(body["model"])
            modalities = body.get("modalities") or ["text", "audio"]  # vLLM-Omni's default
            speaks = strict.omni and "audio" in modalities
            if speaks:  # (streamed: counted; the talker's audio chunks are not sent)
                self.spoken += 1
            if body.get("stream"):
                include_usage = (body.get("stream_options") or {}).get("include_usage")
                return StreamingResponse(
                    _chunks(body["model"], reply, bool(include_usage), strict),
                    media_type="text/event-stream",
                )
            completion = _completion(body["model"], reply, strict)
            if speaks:  # the talker's speech as a choice of its own, after the text
                if "text" not in modalities:
                    completion["choices"] = []
                completion["choices"].append(_spoken_choice())
            return JSONResponse(completion)

        @app.post("/v1/responses")
        async def responses(request: Request):
            body = await request.json()
            self.requests.append(Recorded(request.url.path, body, dict(request.headers)))
            if (refused := self._gate(request, body.get("model"))) is not None:
                return refused
            if (refused := self._refuse("responses", body)) is not None:
                return refused
            reply = self.responses.popleft() if self.responses else ResponsesReply(text="ok")
            if reply.error is not None:
                return _error(reply.error)
            if body.get("stream"):
                return StreamingResponse(
                    response_events(body["model"], reply, body), media_type="text/event-stream"
                )
            items = response_items(reply, body)
            return JSONResponse(response_object(body["model"], reply, items))

        @app.post("/v1/audio/transcriptions")
        async def transcriptions(request: Request):
            form = await request.form()
            items = list(form.multi_items())
            upload = form.get("file")
            data = await upload.read() if hasattr(upload, "read") else b""  # type: ignore[union-attr]
            fields: dict[str, Any] = {k: v for k, v in items if k != "file"}
            fields["_file_bytes"] = len(data)
            fields["_file_head"] = data[:4].decode("latin-1")
            self.requests.append(Recorded(request.url.path, fields, dict(request.headers)))
            if (refused := self._gate(request, str(fields.get("model")))) is not None:
                return refused
            if (refused := self._refuse("transcription", fields, items)) is not None:
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
            if self.strict(str(fields.get("model"))).json_only_transcription:
                # gpt-transcribe: the detected languages, usage by duration
                # (the openai SDK's Transcription type: ``languages: [{"code": ...}]``)
                return JSONResponse(
                    {
                        "text": reply["text"],
                        "languages": reply.get("languages", [{"code": "en"}]),
                        "usage": {"type": "duration", "seconds": 1.0},
                    }
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


def _usage(reply: Reply, strict: Strict) -> dict[str, Any]:
    prompt, completion = reply.usage
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {
            "audio_tokens": reply.audio_tokens,
            "cached_tokens": reply.cached_tokens,
        },
    }
    if strict.flavor == "deepseek":  # DeepSeek's own cache fields (no details object)
        del usage["prompt_tokens_details"]
        usage["prompt_cache_hit_tokens"] = reply.cached_tokens
        usage["prompt_cache_miss_tokens"] = prompt - reply.cached_tokens
    return usage


def _reasoning_fields(strict: Strict, text: str) -> dict[str, Any]:
    """How the provider sends (a piece of) reasoning beside the message."""
    if not text:
        return {}
    if strict.flavor == "openrouter":
        return {
            "reasoning": text,
            "reasoning_details": [
                {"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}
            ],
        }
    return {strict.reasoning_key: text}


def _completion(model: str, reply: Reply, strict: Strict) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    message.update(_reasoning_fields(strict, reply.reasoning))
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
        "usage": _usage(reply, strict),
    }


def _spoken_choice() -> dict[str, Any]:
    """vLLM-Omni's audio choice (``_create_audio_choice``): the talker's speech as 24 kHz
    wav, no text, the same ``index`` as the text choice."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24_000)
        out.writeframes(b"\0\0" * 2_400)  # 0.1 s of silence
    audio = {
        "id": "audio-fake",
        "data": base64.b64encode(buffer.getvalue()).decode(),
        "expires_at": int(time.time()) + 86_400,
        "transcript": "",
    }
    return {
        "index": 0,
        "message": {"role": "assistant", "content": None, "audio": audio},
        "logprobs": None,
        "finish_reason": "stop",
        "stop_reason": None,
    }


def _chunks(model: str, reply: Reply, include_usage: bool, strict: Strict):
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
    for piece in pieces(reply.reasoning):
        yield chunk(_reasoning_fields(strict, piece))
    for piece in pieces(reply.text):
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
        if strict.repeat_names:
            later["name"] = name
        yield chunk({"tool_calls": [{"index": index, "function": later}]})
    finish = "tool_calls" if reply.tool_calls else "stop"
    if strict.flavor == "kimi" and strict.usage_in_stream:
        # Moonshot puts the counts on the last choice, not at the top of a final chunk
        # (https://github.com/earendil-works/pi/issues/2017)
        last = json.loads(chunk({}, finish=finish)[len("data: ") :])
        last["choices"][0]["usage"] = _usage(reply, strict)
        yield f"data: {json.dumps(last)}\n\n"
    else:
        yield chunk({}, finish=finish)
    if include_usage and strict.usage_in_stream and strict.flavor != "kimi":
        yield chunk({}, usage=_usage(reply, strict))
    yield "data: [DONE]\n\n"
