"""Runs made by other programs open in our own page with their full trace.

A person opens the app, copies the key from /connect and gives it to a program: here the
OpenAI SDK, streaming as Open WebUI does (the reasoning and each tool call as
``reasoning_content``, then the answer as ``content``), and an MCP client calling one tool.
Back in the page, both conversations are in the sidebar; opened, they show the tool calls,
the answer and the trace table, as a question asked in the page would. Offline default: the
real planner and local models.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.browser_kit import (
    DOG_CLIP,
    open_app,
    open_trace,
    reopen,
    screenshot,
    serious_violations,
    wait_for_count,
)

pytestmark = [pytest.mark.browser, pytest.mark.models]

QUESTION = "Which sound is this?"
CHOICES = "1. Dog barking\n2. Rain\n3. Church bells\n4. Siren"


def stream_question(base: str, key: str) -> tuple[list[str], str, str]:
    """The SDK's streamed answer: the order of its deltas, the reasoning and the content."""
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    data = base64.b64encode(DOG_CLIP.read_bytes()).decode()
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": f"{QUESTION}\n{CHOICES}"},
            {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
        ],
    }
    order: list[str] = []
    reasoning, content = "", ""
    for chunk in client.chat.completions.create(model="offline", messages=[message], stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if (delta.model_extra or {}).get("reasoning_content"):
            order.append("reasoning")
            reasoning += delta.model_extra["reasoning_content"]
        if delta.content:
            order.append("content")
            content += delta.content
    return order, reasoning, content


def mcp_tool_call(base: str, key: str) -> dict[str, Any]:
    """``sound_events`` through the MCP server, in a thread of its own (Playwright's sync API
    owns this one)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            data = base64.b64encode(DOG_CLIP.read_bytes()).decode()
            up = await client.call_tool("upload_audio", {"data": data, "filename": "dog.wav"})
            result = await client.call_tool(
                "sound_events", {"audio": up.structured_content["audio_id"]}
            )
            return {"error": result.is_error, **(result.structured_content or {})}

    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(asyncio.run(call())))
    worker.start()
    worker.join(timeout=300)
    return out


def test_runs_from_the_openai_api_and_mcp_open_in_the_page(app_server, page, tmp_path: Path):  # type: ignore[no-untyped-def]
    url = app_server()
    base = url.rstrip("/")
    open_app(page, url)  # this browser is a visitor now (its cookie)
    page.goto(f"{base}/connect")
    key = page.locator("#api-key").inner_text().strip()
    assert page.locator("#base-url").inner_text() == f"{base}/v1"
    screenshot(page, tmp_path / "connect.png")

    order, reasoning, content = stream_question(base, key)
    assert content == "Dog barking"
    assert order.index("content") > order.index("reasoning")
    assert "reasoning" not in order[order.index("content") :]  # reasoning, then the answer
    assert "→ sound_events" in reasoning and "← sound_events" in reasoning

    # A chat front end that cannot attach audio (Open WebUI transcribes attachments): the
    # link from the /connect page's upload form, pasted into the question.
    page.goto(f"{base}/connect")
    page.locator("#upload-file").set_input_files(str(DOG_CLIP))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_function(
        "document.getElementById('upload-link').innerText.includes('/api/audio/')"
    )
    link = page.locator("#upload-link").inner_text().strip()
    assert serious_violations(page) == []
    screenshot(page, tmp_path / "connect-upload-link.png")
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
    pasted = {"role": "user", "content": f"{link}\nWhat kind of sound is it?\n{CHOICES}"}
    by_link = client.chat.completions.create(model="offline", messages=[pasted])
    assert by_link.choices[0].message.content == "Dog barking"

    # Back in the page: the conversation is in the sidebar; opened, its whole trace shows.
    reopen(page, url, QUESTION.rstrip("?"))  # titles drop the question mark
    answer = page.locator("#chat .message-row").filter(has_text="Answer:").first
    answer.wait_for(timeout=60_000)
    chat = page.locator("#chat").inner_text()
    assert "Answer: Dog barking" in chat and "sound_events" in chat
    open_trace(page)
    wait_for_count(page, "#trace-table", "sound_events", 1)
    screenshot(page, tmp_path / "openai-run-in-page.png", full_page=True)

    called = mcp_tool_call(base, key)
    assert called and not called["error"] and "Dog" in called["output"]
    reopen(page, url, "Tool calls on")  # the recording keeps its first name, audio.wav
    page.locator("#chat .message-row").filter(has_text="Answer:").first.wait_for(timeout=60_000)
    chat = page.locator("#chat").inner_text()
    assert "sound_events" in chat and "Tool called directly by an MCP client" in chat
    screenshot(page, tmp_path / "mcp-run-in-page.png", full_page=True)
