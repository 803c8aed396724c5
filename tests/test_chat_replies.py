"""Replies of ``agent.chat_request.create_chat``, built by validation, against a loopback server
through the real ``openai`` SDK: the same objects the SDK's own parsing gives (streamed and
whole, with reasoning fields and cached-token counts), a reply shaped differently by an
OpenAI-compatible server still read (built leniently, as the SDK builds it), and errors
raised as the SDK raises them."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agent.chat_request import create_chat
from tests.servers import serve

USAGE = {
    "prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35,
    "prompt_tokens_details": {"cached_tokens": 16}, "prompt_cache_hit_tokens": 16,
}  # fmt: skip


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra,
    }  # fmt: skip


STANDARD = [
    chunk({"role": "assistant", "content": "", "reasoning_content": "Think."}),
    chunk({"content": "A dog"}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "tag", "arguments": ""},
                }
            ]
        }
    ),  # fmt: skip
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"k": 1}'}}]}),
    chunk({}, finish="tool_calls"),
    {**chunk({}), "choices": [], "usage": USAGE},
]
# As some OpenAI-compatible servers send them: no "created" or "object", no choice index.
LOOSE = [
    {"id": "c2", "model": "m", "choices": [{"delta": {"content": "Hi"}}]},
    {"id": "c2", "model": "m", "choices": [{"delta": {}, "finish_reason": "stop"}]},
]
WHOLE = {
    "id": "c3", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "A dog.", "reasoning_content": "Hm."}}],
    "usage": USAGE,
}  # fmt: skip


class Server:
    """Replies with the next scripted body: a list of chunks (streamed), a dict (whole), or
    an int (that status, with OpenAI's error body)."""

    def __init__(self) -> None:
        self.replies: list[Any] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        reply = self.replies.pop(0)
        if isinstance(reply, int):
            status, kind = reply, b"application/json"
            body = json.dumps({"error": {"message": "Bad key", "type": "invalid_request_error",
                                         "code": "invalid_api_key"}}).encode()  # fmt: skip
        elif isinstance(reply, list):
            status, kind = 200, b"text/event-stream"
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in reply).encode()
            body += b"data: [DONE]\n\n"
        else:
            status, kind = 200, b"application/json"
            body = json.dumps(reply).encode()
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def server():
    app = Server()
    with serve(app) as base:
        yield app, openai.AsyncOpenAI(api_key="k", base_url=f"{base}/v1", max_retries=0)


def request(stream: bool) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "Which?"}], "stream": stream}


async def test_streamed_and_whole_replies_are_what_the_sdk_builds(server, monkeypatch) -> None:
    app, client = server
    app.replies += [STANDARD, WHOLE, STANDARD, WHOLE]
    built: list[str] = []  # replies the SDK's lenient construct built
    for model in (ChatCompletion, ChatCompletionChunk):
        lenient = model.construct
        monkeypatch.setattr(
            model, "construct",
            classmethod(lambda cls, *a, _l=lenient, **k: built.append(cls.__name__) or _l(*a, **k)),
        )  # fmt: skip
    ours = [c async for c in await create_chat(client, request(stream=True))]
    whole = await create_chat(client, request(stream=False))
    assert built == []  # validated, not constructed
    monkeypatch.undo()
    sdks = [c async for c in await client.chat.completions.create(model="m", messages=[],
                                                                   stream=True)]  # fmt: skip
    assert ours == sdks and len(ours) == len(STANDARD)
    assert ours[0].choices[0].delta.reasoning_content == "Think."  # a provider's own field
    assert ours[-1].usage.prompt_tokens_details.cached_tokens == 16
    assert ours[-1].usage.prompt_cache_hit_tokens == 16
    assert whole == await client.chat.completions.create(model="m", messages=[])
    assert whole.choices[0].message.reasoning_content == "Hm."


async def test_a_reply_shaped_differently_is_still_read(server) -> None:
    app, client = server
    app.replies += [LOOSE, {k: v for k, v in WHOLE.items() if k not in ("created", "object")}]
    chunks = [c async for c in await create_chat(client, request(stream=True))]
    assert [c.choices[0].delta.content for c in chunks] == ["Hi", None]
    assert chunks[-1].choices[0].finish_reason == "stop"
    whole = await create_chat(client, request(stream=False))
    assert whole.choices[0].message.content == "A dog."


async def test_errors_are_the_sdks(server) -> None:
    app, client = server
    app.replies += [401, 401]
    for stream in (True, False):
        with pytest.raises(openai.AuthenticationError, match="Bad key"):
            await create_chat(client, request(stream=stream))
