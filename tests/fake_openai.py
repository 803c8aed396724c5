"""A small server that speaks the OpenAI wire protocol, for driving the official SDK in tests.

Chat completions (streamed with tool-call deltas, reasoning deltas and usage, or not
streamed) and audio transcriptions. Responses are scripted: a queue of ``Reply`` objects,
or a function of the request body. Every request body is recorded for assertions.
"""

from __future__ import annotations

import asyncio
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
    delay_s: float = 0.0


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeOpenAI:
    def __init__(self) -> None:
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

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            self.requests.append(Recorded(request.url.path, body, dict(request.headers)))
            reply = self._next_chat(body)
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.status != 200:
                return _error(reply)
            if body.get("stream"):
                include_usage = (body.get("stream_options") or {}).get("include_usage")
                return StreamingResponse(
                    _chunks(body["model"], reply, bool(include_usage)),
                    media_type="text/event-stream",
                )
            return JSONResponse(_completion(body["model"], reply))

        @app.post("/v1/audio/transcriptions")
        async def transcriptions(request: Request):
            form = await request.form()
            upload = form["file"]
            data = await upload.read()  # type: ignore[union-attr]
            fields = {k: v for k, v in form.multi_items() if k != "file"}
            fields["_file_bytes"] = len(data)
            fields["_file_head"] = data[:4].decode("latin-1")
            self.requests.append(Recorded(request.url.path, fields, dict(request.headers)))
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
    return JSONResponse(
        {"error": {"message": reply.error, "type": "scripted", "code": reply.status}},
        status_code=reply.status,
    )


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


def _chunks(model: str, reply: Reply, include_usage: bool):
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
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
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
