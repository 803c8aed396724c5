"""The MCP server through the ``mcp`` SDK's own client: streamable HTTP at /mcp on a real
socket, and stdio (``python -m agent mcp``, started as a desktop client starts it) with the
shipped offline models. Progress per tool call; the same owners, keys, tokens and limits as
the API; every call a stored run."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from app import create_app
from backend.access.identity import Identity, load_secret
from backend.access.passwords import hash_password
from backend.host.settings import Settings
from frontend.routes import conversation_path
from storage import Store
from tests.client_kit import BARK, DOG_B64, DOG_CLIP, SPOKEN_DIGIT, scripted_registry
from tests.servers import serve, start_deadline_s

ROOT = Path(__file__).resolve().parent.parent


def make_app(tmp_path: Path, registry: Any = None, **settings: Any) -> Any:
    config = Settings(data_dir=tmp_path / "data", warm_up=False, **settings)
    return create_app(config, registry=registry, ui=False)


@contextlib.asynccontextmanager
async def connect(url: str, key: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


class Progress:
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.values: list[float] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.messages.append(message or "")


async def test_http_tools_upload_progress_and_the_whole_agent(tmp_path):
    registry, _, tool = scripted_registry()
    with serve(make_app(tmp_path, registry)) as base:
        key = browser_key(base)
        async with connect(f"{base}/mcp", key) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            local = ["transcribe", "speech_activity", "sound_events", "music_analysis"]
            local += ["signal_stats", "speakers", "clip", "ask_audio", "bark_tool"]
            assert {"upload_audio", "answer_audio_question", *local} <= set(listed)
            schema = listed["bark_tool"].input_schema
            assert schema["required"] == ["audio"] and "top_k" in schema["properties"]
            assert "path" not in listed["upload_audio"].input_schema["properties"]  # over HTTP
            presets = listed["answer_audio_question"].input_schema["properties"]["preset"]
            assert presets["enum"][0] == "offline" and "scripted/refine" in presets["enum"]

            uploaded = await client.call_tool(
                "upload_audio", {"data": DOG_B64, "filename": "dog.wav"}
            )
            audio = uploaded.structured_content
            assert not uploaded.is_error and audio["name"] == "dog.wav"
            assert audio["duration_s"] == pytest.approx(5.0) and audio["url"].endswith(
                audio["audio_id"]
            )
            again = await client.call_tool("upload_audio", {"url": audio["url"]})
            assert again.structured_content["audio_id"] == audio["audio_id"]

            progress = Progress()
            called = await client.call_tool(
                "bark_tool", {"audio": audio["audio_id"], "top_k": 2}, progress_callback=progress
            )
            assert not called.is_error and called.content[0].text == BARK
            result = called.structured_content
            assert result["data"] == {"labels": [{"label": "Dog", "score": 0.91}]}
            assert tool.calls == [{"top_k": 2}]
            assert progress.messages[0] == "bark_tool: started"
            assert progress.messages[1].startswith("bark_tool: done in ")
            assert progress.values == [1, 2]

            progress = Progress()
            answered = await client.call_tool(
                "answer_audio_question",
                {
                    "audio": audio["audio_id"],
                    "question": "Which animal is heard?",
                    "choices": ["Cat", "Dog"],
                    "preset": "scripted/react",
                },
                progress_callback=progress,
            )
            summary = answered.structured_content
            assert not answered.is_error and answered.content[0].text.startswith("Answer: Dog")
            assert summary["answer"] == "Dog" and summary["choice"] == "Dog"
            assert summary["confidence"] == 0.8 and summary["guess"] is False
            assert summary["status"] == "ok" and summary["calls"] == 1
            assert summary["trace_url"] == f"{base}/api/runs/{summary['run_id']}"
            page = summary["trace_page_url"]  # for a person: the page on that conversation
            assert page == f"{base}{conversation_path(summary['conversation_id'])}"
            assert answered.content[0].text.endswith(
                f"Trace: {page} (as JSON: {summary['trace_url']})"
            )
            assert result["trace_page_url"].startswith(f"{base}/c/")
            assert progress.messages[0] == "bark_tool: started"

        # Every call is a stored run in the history of the key's owner (this browser's visitor).
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:
            titles = sorted(c["title"] for c in http.get("/api/conversations").json())
            assert titles == ["Tool calls on dog.wav", "Which animal is heard · dog"]
            trace = http.get(summary["trace_url"]).json()
            assert [e["type"] for e in trace["events"]][-1] == "run_finished"
            direct = http.get(result["trace_url"]).json()
            assert direct["run"]["planner"] == "direct" and direct["run"]["status"] == "ok"
            assert direct["events"][0]["planner_label"].startswith("Tool called directly by an MCP")


def browser_key(base: str) -> str:
    """The key the /connect page gives a fresh visitor (as a person would copy it)."""
    import re

    page = httpx.get(f"{base}/connect", headers={"Accept": "text/html"}, timeout=30).text
    return re.search(r'id="api-key">([^<]+)</pre>', page).group(1)


async def test_http_bad_calls_are_tool_errors_with_reasons(tmp_path):
    registry, _, _ = scripted_registry()
    with serve(make_app(tmp_path, registry)) as base:
        async with connect(f"{base}/mcp") as client:
            cases = [
                ("bark_tool", {"audio": "nope"}, "not an audio id"),
                ("bark_tool", {"audio": "f" * 64}, "No audio"),
                ("bark_tool", {"top_k": 2}, "'audio' is a required property"),
                ("bark_tool", {"audio": "f" * 64, "top_k": "two"}, "not of type 'integer'"),
                ("upload_audio", {}, "exactly one of data, url"),
                ("upload_audio", {"data": "%%%"}, "not valid base64"),
                ("upload_audio", {"path": "/etc/passwd"}, "Additional properties"),
                ("upload_audio", {"data": "aGVsbG8="}, "not a supported audio"),
                ("answer_audio_question", {"audio": "f" * 64}, "'question' is a required"),
                ("no_such_tool", {}, "No tool 'no_such_tool'"),
            ]
            for name, arguments, says in cases:
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments)
                assert says.lower() in result.content[0].text.lower(), result.content[0].text
            uploaded = await client.call_tool("upload_audio", {"data": DOG_B64})
            audio_id = uploaded.structured_content["audio_id"]
            unknown = await client.call_tool(
                "answer_audio_question",
                {"audio": audio_id, "question": "What?", "preset": "gpt/react"},
            )
            assert unknown.is_error and "OPENAI_API_KEY" in unknown.content[0].text


async def test_http_limits_and_login(tmp_path):
    registry, _, _ = scripted_registry()
    users = tmp_path / "users.txt"
    users.write_text(f"bob:{hash_password('bob-secret')}\n")
    app = make_app(tmp_path, registry, users=str(users), owner_runs_per_minute=1)
    with serve(app) as base:
        with pytest.raises(Exception):  # noqa: B017 - the SDK's own error for a 401
            async with connect(f"{base}/mcp") as client:
                await client.list_tools()
        token = httpx.post(
            f"{base}/api/token", json={"username": "bob", "password": "bob-secret"}, timeout=30
        ).json()["token"]
        async with connect(f"{base}/mcp", token) as client:
            uploaded = await client.call_tool("upload_audio", {"data": DOG_B64})
            audio = {"audio": uploaded.structured_content["audio_id"]}
            assert not (await client.call_tool("bark_tool", audio)).is_error
            refused = await client.call_tool("bark_tool", audio)
            assert refused.is_error and "at most 1 runs per minute" in refused.content[0].text
        history = httpx.get(
            f"{base}/api/conversations", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert [c["owner"] for c in history.json()] == ["user:bob"]


async def test_ask_audio_without_an_audio_model_says_what_answers(tmp_path):
    with serve(make_app(tmp_path)) as base:
        async with connect(f"{base}/mcp") as client:
            uploaded = await client.call_tool("upload_audio", {"data": DOG_B64})
            result = await client.call_tool(
                "ask_audio",
                {"audio": uploaded.structured_content["audio_id"], "question": "How loud is it?"},
            )
            assert not result.is_error
            assert "No audio-language model is enabled" in result.content[0].text


def stdio_params(data_dir: Path, cwd: Path, *args: str) -> StdioServerParameters:
    """As a desktop client starts it: its own folder, only the variables its config gives."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(cwd)),
        "PYTHONPATH": str(ROOT),
        "AUDIO_AGENT_DATA_DIR": str(data_dir),
        "AUDIO_AGENT_WARM_UP": "0",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agent", "mcp", *args], env=env, cwd=cwd
    )


@pytest.mark.models
async def test_stdio_with_the_offline_models_for_the_local_owner(tmp_path):
    data_dir = tmp_path / "data"
    async with Client(stdio_params(data_dir, tmp_path)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert "path" in listed["upload_audio"].input_schema["properties"]  # local files
        uploaded = await client.call_tool("upload_audio", {"path": str(DOG_CLIP)})
        assert not uploaded.is_error, uploaded.content[0].text
        audio_id = uploaded.structured_content["audio_id"]
        progress = Progress()
        answered = await client.call_tool(
            "answer_audio_question",
            {
                "audio": audio_id,
                "question": "Which sound is this?",
                "choices": ["Dog barking", "Rain", "Church bells", "Siren"],
                "preset": "offline",
            },
            progress_callback=progress,
        )
        assert not answered.is_error, answered.content[0].text
        assert answered.structured_content["answer"] == "Dog barking"
        assert answered.structured_content["trace_url"].startswith(
            "http://127.0.0.1:7860/api/runs/"
        )
        assert "sound_events: started" in progress.messages
        assert any(m.startswith("sound_events: done in") for m in progress.messages)
    store = Store.open(f"sqlite:///{data_dir / 'audio_agent.sqlite3'}")
    try:
        [conversation] = store.conversations.list_conversations("local")
        assert conversation.title == "Which sound is this · dog_bark_esc50"
    finally:
        store.close()


@pytest.mark.models
async def test_stdio_with_a_key_runs_as_that_visitor(tmp_path):
    data_dir = tmp_path / "data"
    visitor = "visitor:" + "ab" * 16
    key = Identity(secret=load_secret(data_dir)).token_for(visitor)
    async with Client(stdio_params(data_dir, tmp_path, "--key", key)) as client:
        uploaded = await client.call_tool("upload_audio", {"path": str(SPOKEN_DIGIT)})
        audio_id = uploaded.structured_content["audio_id"]
        result = await client.call_tool("speech_activity", {"audio": audio_id})
        assert not result.is_error and "speech" in result.content[0].text.lower()
        assert result.structured_content["data"]
    store = Store.open(f"sqlite:///{data_dir / 'audio_agent.sqlite3'}")
    try:
        titles = [c.title for c in store.conversations.list_conversations(visitor)]
        assert titles == ["Tool calls on digit_6_theo_4.wav"]
        assert store.conversations.list_conversations("local") == []
    finally:
        store.close()


def test_stdio_refuses_a_key_that_is_not_valid_here(tmp_path):
    env = {**os.environ, "AUDIO_AGENT_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "agent", "mcp", "--key", "forged"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=start_deadline_s(),
    )
    assert done.returncode == 2 and "not valid" in done.stderr and done.stdout == ""


async def test_tool_calls_count_against_the_daily_spend_and_failures_are_errors(tmp_path):
    """A priced tool called directly is refused once the owner's daily spend is used up, as a
    paid planner's question is; a tool that fails is an error result, its run degraded."""
    from types import SimpleNamespace

    from agent.events import Usage
    from agent.remote import Prices
    from agent.testing import ScriptedTool

    registry, _, _ = scripted_registry()
    priced = ScriptedTool("paid_tool", "an expensive answer", cost=0.5, usage=Usage(input_tokens=9))
    priced.config = SimpleNamespace(prices=Prices(per_request=0.5))  # type: ignore[attr-defined]
    registry.register(priced, kind="tool")
    registry.register(ScriptedTool("broken_tool", error="the model crashed"), kind="tool")
    with serve(make_app(tmp_path, registry, daily_usd=0.4)) as base:
        async with connect(f"{base}/mcp") as client:
            uploaded = await client.call_tool("upload_audio", {"data": DOG_B64})
            audio = {"audio": uploaded.structured_content["audio_id"]}
            first = await client.call_tool("paid_tool", audio)
            assert not first.is_error and first.content[0].text == "an expensive answer"
            refused = await client.call_tool("paid_tool", audio | {"again": 1})
            assert refused.is_error and "daily limit of $0.40" in refused.content[0].text
            assert len(priced.calls) == 1
            broken = await client.call_tool("broken_tool", audio)
            assert broken.is_error and "the model crashed" in broken.content[0].text
            run = httpx.get(broken.structured_content["trace_url"], timeout=30)
    assert run.status_code in (401, 404)  # another visitor's run: not readable without its key


async def test_http_upload_of_a_recording_over_four_megabytes(tmp_path):
    """The SDK's own default body limit is 4 MiB; /mcp takes what /api/audio takes (as base64)."""
    import base64

    import numpy as np
    import soundfile as sf

    path = tmp_path / "long.wav"
    noise = np.random.default_rng(1).normal(0, 0.1, 16_000 * 130).astype(np.float32)
    sf.write(path, noise, 16_000, subtype="PCM_16")
    data = base64.b64encode(path.read_bytes()).decode()
    assert len(data) > 5 * 1024 * 1024
    registry, _, _ = scripted_registry()
    with serve(make_app(tmp_path, registry)) as base:
        async with connect(f"{base}/mcp") as client:
            uploaded = await client.call_tool("upload_audio", {"data": data, "filename": "n.wav"})
            assert not uploaded.is_error, uploaded.content[0].text
            assert uploaded.structured_content["duration_s"] == pytest.approx(130.0)
