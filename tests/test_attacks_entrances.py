"""Issue 30, attacks 5, 6, 9 and 10: the JSON entrances, ``/v1`` (OpenAI-compatible) and
``/mcp``, as an attacker tried them. Their uploads count in the same per-address windows as
``/api/audio``; their large bodies are bounded and parsed without stopping the server;
``/v1`` refuses in OpenAI's shape what it does not do; ``GET /mcp`` holds no stream open."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import statistics
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app import create_app
from backend.access.clients import ClientLimits
from backend.host.settings import Settings
from tests.client_kit import DOG_B64, DOG_CLIP, audio_message, scripted_registry
from tests.servers import serve
from tests.test_processes import Server

MODEL = "scripted/react"
JSON = {"content-type": "application/json"}
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
MB = 1024 * 1024


def make_app(tmp_path: Path, **settings: Any) -> Any:
    config = Settings(data_dir=tmp_path / "data", warm_up=False, **settings)
    return create_app(config, registry=scripted_registry()[0], ui=False)


def sdk(base: str) -> openai.OpenAI:
    """A new client (a new visitor: no cookie yet), which retries nothing."""
    return openai.OpenAI(base_url=f"{base}/v1", api_key="sk-unused", max_retries=0)


@contextlib.asynccontextmanager
async def mcp_client(base: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


def api_upload(base: str) -> httpx.Response:
    with DOG_CLIP.open("rb") as fh:
        return httpx.post(f"{base}/api/audio", files={"file": ("dog.wav", fh)}, timeout=30)


async def test_uploads_through_v1_and_mcp_count_in_the_address_windows(tmp_path):
    """Attack 5: after /api/audio answered 429 for an address, /v1 and MCP upload_audio still
    took its uploads. Every request below comes without a cookie (a new visitor each time):
    only the address is common."""
    limits = ClientLimits(uploads_per_hour=3, upload_mb_per_hour=0)
    with serve(make_app(tmp_path / "count", client_limits=limits)) as base:
        # One upload through each entrance: three of the address's three an hour.
        answer = sdk(base).chat.completions.create(model=MODEL, messages=[audio_message()])
        assert answer.choices[0].message.content == "Dog"
        async with mcp_client(base) as client:
            assert not (await client.call_tool("upload_audio", {"data": DOG_B64})).is_error
        assert api_upload(base).status_code == 201
        refused = api_upload(base)
        assert refused.status_code == 429 and "network address" in refused.json()["detail"]

        # ... and the JSON entrances are refused too, each in its own shape.
        with pytest.raises(openai.RateLimitError) as v1:
            sdk(base).chat.completions.create(model=MODEL, messages=[audio_message()])
        assert "network address" in v1.value.message
        assert 1 <= int(v1.value.response.headers["retry-after"]) <= 3600
        async with mcp_client(base) as client:
            tool = await client.call_tool("upload_audio", {"data": DOG_B64})
        assert tool.is_error and "network address" in tool.content[0].text

    # The megabytes an hour: what /v1 and MCP bring counts, and /api/audio's 429 holds there.
    limits = ClientLimits(uploads_per_hour=0, upload_mb_per_hour=1)
    with serve(make_app(tmp_path / "bytes", client_limits=limits)) as base:
        assert api_upload(base).status_code == 201  # 0.44 MB
        async with mcp_client(base) as client:  # 0.59 MB of base64: past the megabyte
            assert not (await client.call_tool("upload_audio", {"data": DOG_B64})).is_error
        assert api_upload(base).status_code == 429
        with pytest.raises(openai.RateLimitError):
            sdk(base).chat.completions.create(model=MODEL, messages=[audio_message()])
        async with mcp_client(base) as client:
            tool = await client.call_tool("upload_audio", {"data": DOG_B64})
        assert tool.is_error and "MB per hour" in tool.content[0].text


def raw_request(
    base: str, path: str, length: int, headers: dict[str, str], body: bytes
) -> socket.socket:
    """A POST whose headers announce ``length`` bytes, of which only ``body`` is sent."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {length}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return sock


def status_of(sock: socket.socket) -> int:
    head = sock.recv(65536).decode("latin-1")
    return int(head.split(" ", 2)[1])


def answered(sock: socket.socket) -> bool:
    """Whether the server answered (or closed) a request still sending its body."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    finally:
        sock.setblocking(True)


@pytest.fixture
def big_server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path / "data", tmp_path / "server.log", AUDIO_AGENT_MAX_UPLOAD_MB="110")
    try:
        yield server
    finally:
        server.stop()


def test_large_bodies_are_bounded_and_parsed_without_stopping_the_server(big_server):
    """Attack 6: four 190 MB /v1 bodies from one address took 2 GB; a large body was parsed
    on the event loop (/api/health took 4-6 s). Peak memory is measured by
    ``python -m bench.body_memory``; here the behaviour.

    The requirement: /api/health under 100 ms while a limit-sized body is parsed. Asked every
    20 ms from the moment the body's last byte is sent until the answer (the parsing,
    decoding, hashing), the median answer must be under 100 ms (5-15 ms measured, and
    10-25 ms with the decoding in binascii steps), and each under 0.6 s: the same lifting
    done on the event loop kept one answer waiting 0.7-1.0 s, the original parse seconds;
    with the decoding beside the loop the slowest was 15-90 ms, 0.43 s once on the loaded
    2-core machine the tests share, which is why a single answer gets that much room. The
    slowest of all (while the body is received too) must be under 1 s. The body goes in 1 MB
    pieces: httpx's own write of one 140 MB ``bytes`` copies what is left after each ``send``
    (quadratic, holding this process's GIL), which stalled this test's prober for 0.2-0.6 s
    and was most of what the old bound measured."""
    base = big_server.base
    # Over the limit by its Content-Length: refused before a byte of it is read.
    for path in ("/v1/chat/completions", "/mcp"):
        with raw_request(base, path, 200 * MB, JSON, b"") as sock:
            assert status_of(sock) == 413

    # Two large bodies in flight from one address; a third is refused before it is read.
    for path, headers in (("/v1/chat/completions", JSON), ("/mcp", MCP_HEADERS)):
        held: list[socket.socket] = []
        status = None
        deadline = time.monotonic() + 60
        try:
            while status != 429 and time.monotonic() < deadline:
                for sock in [s for s in held if answered(s)]:  # refused while others left
                    held.remove(sock)
                    sock.close()
                while len(held) < 2:
                    held.append(raw_request(base, path, 5 * MB, headers, b'{"model": "'))
                with raw_request(base, path, 5 * MB, headers, b"") as third:
                    third.settimeout(3)
                    with contextlib.suppress(TimeoutError):
                        status = status_of(third)
            assert status == 429, path
        finally:
            for sock in held:
                sock.close()

    # A body of the limit's size is parsed while /api/health keeps answering at once.
    data = base64.b64encode(os.urandom(100 * MB)).decode()
    body = json.dumps({"model": "offline", "messages": [audio_message(data=data)]}).encode()
    del data
    answers: list[tuple[float, float]] = []  # (asked at, seconds)
    sent_at = [float("inf")]
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            while not done.is_set():
                started = time.perf_counter()
                assert http.get("/api/health").status_code == 200
                answers.append((started, time.perf_counter() - started))
                time.sleep(0.02)

    def pieces() -> Iterator[bytes]:
        for at in range(0, len(body), MB):
            yield body[at : at + MB]
        sent_at[0] = time.perf_counter()

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        length = {"content-length": str(len(body))}
        answer = httpx.post(
            f"{base}/v1/chat/completions", content=pieces(), headers=JSON | length, timeout=300
        )
        answered_at = time.perf_counter()
    finally:
        done.set()
        prober.join(timeout=60)
    assert answer.status_code == 415, answer.text  # read, parsed, decoded: not audio
    assert answer.json()["error"]["type"] == "invalid_request_error"
    parsing = sorted(s for at, s in answers if sent_at[0] <= at <= answered_at)
    assert len(parsing) >= 3, f"{len(parsing)} health answers while the body was parsed"
    median = statistics.median(parsing)
    assert median < 0.1, f"/api/health took {median:.2f} s (median) while a body was parsed"
    assert max(parsing) < 0.6, f"/api/health took {max(parsing):.2f} s while a body was parsed"
    slowest = max(s for _, s in answers)
    assert slowest < 1.0, f"/api/health took {slowest:.2f} s while a large body was handled"


def test_v1_refuses_what_it_does_not_do_in_openai_s_shape(tmp_path):
    """Attack 9: nested JSON gave a 500; tools, tool_choice, response_format and max_tokens
    were silently ignored."""
    with serve(make_app(tmp_path)) as base, httpx.Client(base_url=base, timeout=60) as http:
        nested = b'{"model": "x", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        for raw in (nested, b'{"model": ', b"[1, 2"):
            answer = http.post("/v1/chat/completions", content=raw, headers=JSON)
            assert answer.status_code == 400, answer.text
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert error["type"] == "invalid_request_error"

        client = openai.OpenAI(base_url=f"{base}/v1", api_key="x", max_retries=0, http_client=http)
        messages = [audio_message()]
        tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        refused: list[tuple[str, dict[str, Any]]] = [
            ("tools", {"tools": [tool]}),
            ("tool_choice", {"tool_choice": "required"}),
            ("response_format", {"response_format": {"type": "json_object"}}),
            ("max_tokens", {"max_tokens": 50}),
            ("max_completion_tokens", {"max_completion_tokens": 50}),
        ]
        for param, given in refused:
            with pytest.raises(openai.BadRequestError) as error:
                client.chat.completions.create(model=MODEL, messages=messages, **given)
            assert error.value.param == param, error.value.body
            assert error.value.body["type"] == "invalid_request_error"
        assert http.get("/api/conversations").json() == []  # nothing started, nothing stored

        # What it does do is accepted: no tools, text answers.
        answer = client.chat.completions.create(
            model=MODEL, messages=messages, tool_choice="none", response_format={"type": "text"}
        )
        assert answer.choices[0].message.content == "Dog"


def test_get_mcp_holds_no_idle_stream_open(tmp_path):
    """Attack 10: GET /mcp with Accept: text/event-stream opened a stream that never ended."""
    with serve(make_app(tmp_path)) as base:
        headers = {"accept": "text/event-stream", "mcp-protocol-version": "2025-06-18"}
        deadline = time.monotonic() + 30
        timeout = httpx.Timeout(30, read=20)
        with httpx.stream("GET", f"{base}/mcp", headers=headers, timeout=timeout) as response:
            received = b""
            ended = False
            for chunk in response.iter_raw():
                received += chunk
                if time.monotonic() > deadline:
                    break
            else:
                ended = True
        assert ended, f"the stream was still open after 30 s ({received[:200]!r})"
        if response.status_code == 200:  # a stream that ends: it said it was alive meanwhile
            assert received.startswith(b":")
        else:
            assert response.status_code == 405 and response.headers["allow"] == "POST"
            assert "POST" in json.loads(received)["error"]["message"]
