"""The model server of the peer comparison: an OpenAI-compatible ``/v1/chat/completions`` that
costs little and the same for every contender.

Every agent in ``bench.peers`` asks it for three tools in one turn and then for the answer.
Its replies are rendered once and sent as one body, so a streamed reply (ours, as in
production) costs the server about what a whole one costs (smolagents): with two cores
shared by the server and the agent, a server that spends more CPU on one contender's replies
would slow that contender down. It is a bare ASGI app (no framework) and counts the TCP
connections it was asked on (by client port), which shows whether a client reuses them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

TOOLS = ("tool_a", "tool_b", "tool_c")
MODEL = "m"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-peer",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _streamed(text: str, calls: list[tuple[str, str]], usage: bool) -> bytes:
    """A streamed reply as OpenAI sends it: role, text in pieces, each tool call in two
    chunks (name then arguments), the finish reason, the usage chunk, ``[DONE]``."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": text[i : i + 8]}) for i in range(0, len(text), 8)]
    for index, (name, arguments) in enumerate(calls):
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        chunks.append(_chunk({"tool_calls": [{**head, "function": {"name": name}}]}))
        chunks.append(
            _chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})
        )
    chunks.append(_chunk({}, finish="tool_calls" if calls else "stop"))
    if usage:
        chunks.append({**_chunk({}), "choices": [], "usage": _usage()})
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return body.encode()


def _whole(text: str, calls: list[tuple[str, str]]) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return json.dumps(
        {
            "id": "chatcmpl-peer",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": _usage(),
        }
    ).encode()


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def decide(body: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """(text, tool calls) for a request: the three tools first, then the answer."""
    names = {t["function"]["name"] for t in body.get("tools") or []}
    if any(m.get("role") in ("assistant", "tool") for m in body.get("messages", [])):
        if "final_answer" in names:  # smolagents ends with its final_answer tool
            return "", [("final_answer", '{"answer": "done"}')]
        return "<answer>done</answer>", []
    if not names:  # qwen-agent's own function-calling prompt: calls written as text
        text = "\n".join(
            f'<tool_call>\n{{"name": "{name}", "arguments": {{}}}}\n</tool_call>' for name in TOOLS
        )
        return text, []
    return "", [(name, "{}") for name in TOOLS]


class PeerServer:
    """The ASGI app; ``requests`` and ``connections`` count what it served."""

    def __init__(self) -> None:
        self.requests = 0
        self.clients: set[tuple[str, int]] = set()
        self.busy_s = 0.0  # CPU time of the request handling (thread time, approximately)
        self._rendered: dict[tuple[Any, ...], bytes] = {}

    @property
    def connections(self) -> int:
        return len(self.clients)

    def reply(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        text, calls = decide(body)
        stream = bool(body.get("stream"))
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        key = (text, tuple(calls), stream, usage)
        if key not in self._rendered:
            self._rendered[key] = _streamed(text, calls, usage) if stream else _whole(text, calls)
        kind = b"text/event-stream" if stream else b"application/json"
        return self._rendered[key], kind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        begun = time.thread_time()
        if scope.get("client"):
            self.clients.add(tuple(scope["client"]))
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"].rstrip("/").endswith("/chat/completions"):
            self.requests += 1
            payload, kind = self.reply(json.loads(raw or b"{}"))
            status = 200
        else:
            payload, kind, status = b'{"error": {"message": "not found"}}', b"application/json", 404
        headers = [(b"content-type", kind), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
        self.busy_s += time.thread_time() - begun
