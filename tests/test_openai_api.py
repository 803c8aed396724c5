"""The agent as an OpenAI-compatible model, driven by the real ``openai`` SDK: in-process
(sync through Starlette's TestClient, async through httpx's ASGI transport) and over a real
socket; streaming and not; follow-ups; audio parts; errors in OpenAI's shape; limits; who
owns the runs (visitor cookie, a visitor's key from /connect, login tokens)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from agent.events import parse_event
from app import create_app
from backend.access.passwords import hash_password
from backend.host.settings import Settings
from backend.http.openai_format import TraceText
from frontend.routes import conversation_id_of, conversation_path
from tests.client_kit import (
    BARK,
    CHOICES_TEXT,
    DOG_B64,
    DOG_CLIP,
    audio_message,
    failing_registry,
    scripted_registry,
)
from tests.servers import serve

MODEL = "scripted/react"
JSON = {"content-type": "application/json"}


def make_app(tmp_path: Path, registry: Any = None, **settings: Any) -> Any:
    config = Settings(data_dir=tmp_path / "data", warm_up=False, **settings)
    return create_app(config, registry=registry, ui=False)


@contextlib.contextmanager
def in_process(
    tmp_path: Path, registry: Any, **settings: Any
) -> Iterator[tuple[openai.OpenAI, TestClient]]:
    """The SDK on the app in this process; the TestClient keeps the visitor's cookie, so the
    SDK's calls and the /api reads are one owner."""
    with TestClient(make_app(tmp_path, registry, **settings)) as http:
        client = openai.OpenAI(
            base_url="http://testserver/v1", api_key="sk-unused", http_client=http, max_retries=0
        )
        yield client, http


def trace_text(events: list[dict[str, Any]]) -> TraceText:
    text = TraceText()
    for event in events:
        text.add(parse_event(event))
    return text


def test_sync_sdk_in_process_answer_reasoning_and_a_stored_run(tmp_path):
    registry, planner, tool = scripted_registry()
    with in_process(tmp_path, registry) as (client, http):
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[audio_message()]
        )
        completion = raw.parse()
        run_id = raw.headers["x-run-id"]
        assert completion.id == f"chatcmpl-{run_id}" and completion.model == MODEL
        details = completion.model_extra["audio_agent"]
        assert completion.model_extra["run_id"] == details["run_id"] == run_id
        message = completion.choices[0].message
        assert message.content == "Dog" and completion.choices[0].finish_reason == "stop"
        reasoning = message.model_extra["reasoning_content"]
        assert reasoning.index("Let me listen.") < reasoning.index('→ bark_tool {"top_k": 3}')
        assert (
            reasoning.index("→ bark_tool")
            < reasoning.index("← bark_tool")
            < reasoning.index("The classifier hears a dog")
        )
        assert BARK in reasoning and "Answer: Dog (confidence 0.80)" in reasoning
        assert details["confidence"] == 0.8 and details["guess"] is False
        assert details["status"] == "ok" and details["calls"] == 1
        assert details["trace_url"] == f"http://testserver/api/runs/{run_id}"
        # for a person: the page opened on the run's conversation (frontend/routes.py)
        page = details["trace_page_url"]
        assert page == f"http://testserver{conversation_path(details['conversation_id'])}"
        assert conversation_id_of(httpx.URL(page).path) == details["conversation_id"]
        assert completion.usage.total_tokens == 0 and completion.usage.model_extra["cost"] == 0.0
        assert tool.calls == [{"top_k": 3}]

        # A stored run like any other, in the history of the owner who asked.
        [conversation] = http.get("/api/conversations").json()
        assert conversation["title"] == "Which animal is heard"
        stored = http.get(f"/api/runs/{run_id}").json()
        assert stored["run"]["status"] == "ok" and stored["run"]["answer_choice"] == "Dog"
        started = stored["events"][0]
        assert started["question"] == "Which animal is heard?"
        assert started["choices"] == ["Cat", "Dog", "Cow"]
        assert "".join(trace_text(stored["events"]).reasoning) == reasoning
        messages = http.get(f"/api/conversations/{conversation['id']}").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert http.get(f"/api/audio/{messages[0]['audio_id']}").content == DOG_CLIP.read_bytes()


async def test_async_sdk_streams_reasoning_then_content_and_usage_last(tmp_path):
    registry, _, _ = scripted_registry()
    app = make_app(tmp_path, registry)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            client = openai.AsyncOpenAI(
                base_url="http://testserver/v1", api_key="x", http_client=http, max_retries=0
            )
            response = await client.chat.completions.with_raw_response.create(
                model=MODEL,
                messages=[audio_message()],
                stream=True,
                stream_options={"include_usage": True},
            )
            run_id = response.headers["x-run-id"]
            chunks = [chunk async for chunk in response.parse()]
            stored = (await http.get(f"/api/runs/{run_id}")).json()["events"]
    finally:
        await asyncio.to_thread(app.state.service.close)
    assert {c.id for c in chunks} == {f"chatcmpl-{run_id}"}
    assert chunks[0].choices[0].delta.role == "assistant"
    kinds = []
    for chunk in chunks:
        delta = chunk.choices[0].delta if chunk.choices else None
        if delta is not None and (delta.model_extra or {}).get("reasoning_content"):
            kinds.append("reasoning")
        if delta is not None and delta.content:
            kinds.append("content")
    first_content = kinds.index("content")
    assert kinds.count("content") == 1 and "reasoning" not in kinds[first_content:]
    assert kinds.count("reasoning") > 5  # word by word, each tool call and its result
    streamed = "".join(
        c.choices[0].delta.model_extra.get("reasoning_content", "") for c in chunks if c.choices
    )
    assert streamed == "".join(trace_text(stored).reasoning)  # the trace, as stored
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "Dog"
    finish = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert finish.choices[0].finish_reason == "stop"
    assert finish.usage is not None and finish.usage.model_extra["cost"] == 0.0
    assert finish.model_extra["audio_agent"]["answer"] == "Dog"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # include_usage
    assert chunks.index(finish) == len(chunks) - 2


@pytest.mark.models
def test_sdk_over_a_real_socket_with_the_offline_planner(tmp_path):
    """The shipped catalogue and the real local models; sync and async, streamed and not."""
    question = "Which sound is this?\nChoices:\nA. Dog barking\nB. Rain\nC. Church bells\nD. Siren"
    with serve(make_app(tmp_path)) as base:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-none", max_retries=0)
        models = [m.id for m in client.models.list()]
        assert models[0] == "offline" and "offline/evidence" in models
        assert not any(m.startswith("gpt") for m in models)  # no key: not listed
        assert client.models.retrieve("offline/refine").model_extra["strategy"] == "refine"
        answer = client.chat.completions.create(model="offline", messages=[audio_message(question)])
        assert answer.choices[0].message.content == "Dog barking"
        assert "→ sound_events" in answer.choices[0].message.model_extra["reasoning_content"]

        async def streamed() -> tuple[str, str]:
            async_client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-none")
            stream = await async_client.chat.completions.create(
                model="offline/evidence", messages=[audio_message(question)], stream=True
            )
            reasoning, content = "", ""
            async for chunk in stream:
                if chunk.choices:
                    delta = chunk.choices[0].delta
                    reasoning += (delta.model_extra or {}).get("reasoning_content", "")
                    content += delta.content or ""
            await async_client.close()
            return reasoning, content

        reasoning, content = asyncio.run(streamed())
        assert content == "Dog barking" and "evidence" in reasoning


def test_follow_ups_are_turns_of_one_conversation_and_reuse_the_audio(tmp_path):
    registry, planner, _ = scripted_registry()
    with in_process(tmp_path, registry) as (client, http):
        first = audio_message("Which animal is heard?\n1. Cat\n2. Dog")
        one = client.chat.completions.create(model=MODEL, messages=[first])
        history = [first, {"role": "assistant", "content": one.choices[0].message.content}]
        follow_up = {"role": "user", "content": "Is it barking more than once?"}
        two = client.chat.completions.create(model=MODEL, messages=[*history, follow_up])
        [conversation] = http.get("/api/conversations").json()
        messages = http.get(f"/api/conversations/{conversation['id']}").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
        assert messages[2]["text"] == "Is it barking more than once?"
        assert messages[2]["audio_id"] == messages[0]["audio_id"]  # the earlier recording
        assert "(1 earlier questions)" in two.choices[0].message.model_extra["reasoning_content"]
        assert two.model_extra["audio_agent"]["conversation_id"] == conversation["id"]

        # A new first question starts a new conversation, even with the same recording.
        client.chat.completions.create(model=MODEL, messages=[audio_message("What is this?")])
        assert len(http.get("/api/conversations").json()) == 2
        # A follow-up whose conversation was deleted: a new one, the earlier audio still used.
        assert http.delete(f"/api/conversations/{conversation['id']}").status_code == 204
        again = client.chat.completions.create(model=MODEL, messages=[*history, follow_up])
        assert again.choices[0].message.content == "Dog"
        assert "(0 earlier questions)" in again.choices[0].message.model_extra["reasoning_content"]


def test_audio_by_file_part_data_url_and_the_url_of_an_upload(tmp_path):
    registry, _, _ = scripted_registry()
    with in_process(tmp_path, registry) as (client, http):
        upload = http.post("/api/audio", files={"file": ("dog.wav", DOG_CLIP.read_bytes())}).json()
        parts = [
            {"type": "audio_url", "audio_url": {"url": f"http://testserver{upload['url']}"}},
            {"type": "file", "file": {"file_id": upload["id"]}},
            {
                "type": "file",
                "file": {"file_data": f"data:audio/wav;base64,{DOG_B64}", "filename": "d.wav"},
            },
            {"type": "audio_url", "audio_url": {"url": f"data:audio/wav;base64,{DOG_B64}"}},
        ]
        # The link written in the text, as a person pastes it into a chat front end.
        link = {"type": "text", "text": f"http://testserver{upload['url']}"}
        for part in [*parts, link]:
            message = {"role": "user", "content": [{"type": "text", "text": CHOICES_TEXT}, part]}
            answer = client.chat.completions.create(model=MODEL, messages=[message])
            run = http.get(f"/api/runs/{answer.model_extra['run_id']}").json()
            assert run["events"][0]["audio_ids"] == [upload["id"]], part
            assert run["events"][0]["question"] == "Which animal is heard?"
        # Another visitor: someone else's upload is not there (the same 404 as a missing one).
        http.cookies.clear()
        message = {"role": "user", "content": [{"type": "text", "text": "Hi?"}, parts[1]]}
        refused = http.post("/v1/chat/completions", json={"model": MODEL, "messages": [message]})
        assert refused.status_code == 404 and "No audio" in refused.json()["error"]["message"]
        assert http.get("/api/conversations").json() == []


BAD_REQUESTS = [
    ({"model": "nope"}, 404, "model_not_found", "does not exist"),
    ({"model": "gpt/react"}, 404, "model_not_found", "OPENAI_API_KEY"),
    ({"model": "scripted"}, 404, "model_not_found", "'scripted/react'"),
    ({"model": "scripted/nope"}, 404, "model_not_found", "no strategy"),
    ({"messages": [{"role": "user", "content": "No audio here?"}]}, 400, None, "No audio"),
    ({"messages": [audio_message(data="not base64!")]}, 400, None, "not valid base64"),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        400,
        None,
        "text and audio only",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is it?"},
                        {"type": "audio_url", "audio_url": {"url": "https://example.com/a.wav"}},
                    ],
                }
            ]
        },
        400,
        None,
        "does not fetch audio from other sites",
    ),
    ({"n": 2}, 400, None, "n=1"),
    ({"messages": [audio_message(), {"role": "assistant", "content": "Dog"}]}, 400, None, "last"),
    ({"messages": []}, 400, None, "messages"),
    ({"choices": ["Only one"]}, 400, None, "at least two"),
    ({"messages": [audio_message(data=base64.b64encode(b"hello").decode())]}, 415, None, ""),
    ({"messages": [audio_message(text="Which\ud800 one?")]}, 400, None, "invalid character"),
    ({"model": "scripted/react\ud800"}, 400, None, "unable to parse raw data as a unicode"),
    ({"choices": ["Cat\udfff", "Dog"]}, 400, None, "invalid character"),
    (
        {"messages": [audio_message(text="")]},
        400,
        None,
        "no question text",
    ),
]


@pytest.mark.parametrize(("change", "status", "code", "says"), BAD_REQUESTS)
def test_bad_requests_get_openai_errors_and_store_nothing(tmp_path, change, status, code, says):
    registry, _, _ = scripted_registry()
    body = {"model": MODEL, "messages": [audio_message()], **change}
    with in_process(tmp_path, registry) as (_, http):
        # As JSON allows it: a lone surrogate travels as its \\u escape (httpx would refuse it).
        raw = json.dumps(body).encode()
        response = http.post("/v1/chat/completions", content=raw, headers=JSON)
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert says in error["message"]
        if code:
            assert error["code"] == code and error["param"] == "model"
        assert http.get("/api/conversations").json() == []
        for raw in (b"{", b'{"model": "\xff"}'):
            not_json = http.post("/v1/chat/completions", content=raw)
            assert not_json.status_code == 400
            assert "not valid JSON" in not_json.json()["error"]["message"]


def test_the_sdk_raises_its_own_errors(tmp_path):
    registry, _, _ = scripted_registry()
    with in_process(tmp_path, registry) as (client, _):
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model="nope", messages=[audio_message()])
        assert missing.value.code == "model_not_found"
        with pytest.raises(openai.BadRequestError, match="No audio"):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "?"}])
        with pytest.raises(openai.NotFoundError):
            client.models.retrieve("nope")


def test_per_owner_limits_apply_with_retry_after(tmp_path):
    registry, _, _ = scripted_registry()
    with in_process(tmp_path, registry, owner_runs_per_minute=1) as (client, _):
        client.chat.completions.create(model=MODEL, messages=[audio_message()])
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(model=MODEL, messages=[audio_message()])
        response = refused.value.response
        assert 1 <= int(response.headers["retry-after"]) <= 60
        assert refused.value.body["type"] == "requests" and "per minute" in refused.value.message


def test_the_daily_spend_cap_refuses_paid_models_in_openai_s_error_shape(tmp_path):
    """Issue 20: the same daily cost cap as the page. A run that uses it up is stopped (429
    ``spend_limit``, not a 500); past it a priced planner is refused before anything is
    stored (429, Retry-After until 00:00 UTC, not retried by the SDK); a free one is still
    served."""
    from types import SimpleNamespace

    from agent.planners.base import FinalAnswer
    from agent.remote import Prices
    from agent.testing import ScriptedPlanner, ScriptedTurn

    def turn(messages: list[Any], tools: Any, force: bool) -> ScriptedTurn:
        if any(m.role == "tool" for m in messages):
            return ScriptedTurn("A bark.", answer=FinalAnswer(text="Dog", confidence=0.7))
        return ScriptedTurn("Listening.", calls=[("bark_tool", {})], cost=0.5)

    registry, _, _ = scripted_registry()
    paid = ScriptedPlanner([turn], name="paid", label="Priced planner (tests)")
    paid.config = SimpleNamespace(prices=Prices(per_request=0.5))  # type: ignore[attr-defined]
    registry.register(paid, kind="planner")
    with in_process(tmp_path, registry, daily_usd=0.4) as (client, http):
        # Under the cap when it starts; its first turn spends it: stopped before the next.
        with pytest.raises(openai.RateLimitError) as stopped:
            client.chat.completions.create(model="paid/react", messages=[audio_message()])
        assert stopped.value.code == "spend_limit" and stopped.value.type == "requests"
        assert "daily limit of $0.40" in stopped.value.message
        response = stopped.value.response
        assert response.headers["x-should-retry"] == "false"
        run = http.get(f"/api/runs/{response.headers['x-run-id']}").json()["run"]
        assert run["status"] == "failed" and run["cost"] == pytest.approx(0.5)
        for stream in (False, True):  # now refused before anything is stored
            with pytest.raises(openai.RateLimitError) as refused:
                client.chat.completions.create(
                    model="paid/react", messages=[audio_message()], stream=stream
                )
            response = refused.value.response
            assert response.status_code == 429 and "x-run-id" not in response.headers
            error: dict[str, Any] = refused.value.body  # type: ignore[assignment]
            assert response.json() == {"error": error}  # what the SDK read: OpenAI's shape
            assert set(error) == {"message", "type", "param", "code"}
            assert error["type"] == "requests" and error["code"] == "rate_limit_exceeded"
            assert refused.value.code == "rate_limit_exceeded"
            assert "daily limit of $0.40" in error["message"]
            assert "$0.50 spent today" in error["message"]
            wait = int(response.headers["retry-after"])
            assert 0 < wait <= 86_400
            if wait > 60:  # until midnight UTC: an SDK must not keep asking
                assert response.headers["x-should-retry"] == "false"
        free = client.chat.completions.create(model=MODEL, messages=[audio_message()])
        assert free.choices[0].message.content == "Dog"  # the free planner costs nothing
        roles = [
            m["role"]
            for c in http.get("/api/conversations").json()
            for m in http.get(f"/api/conversations/{c['id']}").json()["messages"]
        ]
        assert roles.count("user") == 2  # the stopped run and the free one; no refused ones


def test_a_failed_run_is_an_error_not_retried_by_the_sdk(tmp_path):
    with TestClient(make_app(tmp_path, failing_registry())) as http:
        client = openai.OpenAI(base_url="http://testserver/v1", api_key="x", http_client=http)
        assert client.max_retries == 2  # the SDK's default: it would retry a plain 500
        with pytest.raises(openai.InternalServerError) as failed:
            client.chat.completions.create(model="broken/react", messages=[audio_message()])
        assert failed.value.code == "run_failed" and "server is down" in failed.value.message
        assert failed.value.response.headers["x-should-retry"] == "false"
        run_id = failed.value.response.headers["x-run-id"]
        assert http.get(f"/api/runs/{run_id}").json()["run"]["status"] == "failed"
        [conversation] = http.get("/api/conversations").json()
        messages = http.get(f"/api/conversations/{conversation['id']}").json()["messages"]
        assert len(messages) == 1  # one run, no retry

        stream = client.chat.completions.create(
            model="broken/react", messages=[audio_message()], stream=True
        )
        with pytest.raises(openai.APIError, match="server is down"):
            for _ in stream:
                pass


def test_a_visitor_key_from_connect_makes_program_runs_that_visitor_s(tmp_path):
    """Without login: a program that sends the key of the /connect page is the browser's own
    visitor; any other bearer value is a visitor of its own (the demo's anonymous rules)."""
    registry, _, _ = scripted_registry()
    with (
        serve(make_app(tmp_path, registry)) as base,
        httpx.Client(base_url=base, timeout=30) as browser,
    ):
        page = browser.get("/connect", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "no-store" in page.headers["cache-control"]
        key = re.search(r'<pre class="key" id="api-key">([^<]+)</pre>', page.text).group(1)
        assert f"{base}/v1" in page.text and f"{base}/mcp" in page.text
        mine = openai.OpenAI(base_url=f"{base}/v1", api_key=key)
        asked = mine.chat.completions.create(model=MODEL, messages=[audio_message()])
        titles = [c["title"] for c in browser.get("/api/conversations").json()]
        assert titles == ["Which animal is heard"]
        assert browser.get(f"/api/runs/{asked.model_extra['run_id']}").status_code == 200
        other = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-anything")
        theirs = other.chat.completions.create(model=MODEL, messages=[audio_message()])
        assert browser.get(f"/api/runs/{theirs.model_extra['run_id']}").status_code == 404
        assert len(browser.get("/api/conversations").json()) == 1


def test_with_login_a_bearer_token_is_required_and_owns_the_runs(tmp_path):
    registry, _, _ = scripted_registry()
    users = tmp_path / "users.txt"
    users.write_text(f"bob:{hash_password('bob-secret')}\n")
    with serve(make_app(tmp_path, registry, users=str(users))) as base:
        anonymous = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-anything", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            anonymous.chat.completions.create(model=MODEL, messages=[audio_message()])
        with pytest.raises(openai.AuthenticationError):
            anonymous.models.list()
        token = httpx.post(
            f"{base}/api/token", json={"username": "bob", "password": "bob-secret"}, timeout=30
        ).json()["token"]
        bob = openai.OpenAI(base_url=f"{base}/v1", api_key=token)
        stream = bob.chat.completions.create(model=MODEL, messages=[audio_message()], stream=True)
        content = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert content == "Dog"
        history = httpx.get(
            f"{base}/api/conversations", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert [c["owner"] for c in history.json()] == ["user:bob"]


def test_a_recording_over_four_megabytes_fits_in_the_json_body(tmp_path):
    """Base64 audio rides in the JSON body: the upload limit applies (grown by 4/3), not the
    4 MB of other page requests; past it, 413."""
    import numpy as np
    import soundfile as sf

    registry, _, _ = scripted_registry()
    path = tmp_path / "long.wav"
    noise = np.random.default_rng(0).normal(0, 0.1, 16_000 * 130).astype(np.float32)
    sf.write(path, noise, 16_000, subtype="PCM_16")  # 4.2 MB: 5.5 MB as base64
    data = base64.b64encode(path.read_bytes()).decode()
    assert len(data) > 5 * 1024 * 1024
    with in_process(tmp_path, registry) as (client, _):
        answer = client.chat.completions.create(model=MODEL, messages=[audio_message(data=data)])
        assert answer.choices[0].message.content == "Dog"
    with in_process(tmp_path / "small", registry, max_upload_mb=2) as (client, _):
        with pytest.raises(openai.APIStatusError) as refused:
            client.chat.completions.create(model=MODEL, messages=[audio_message(data=data)])
        assert refused.value.status_code == 413


@pytest.mark.parametrize(
    ("text", "question", "choices"),
    [
        ("Which animal?\n1. Cat\n2. Dog", "Which animal?", ["Cat", "Dog"]),
        ("Which animal?\nChoices:\nA. Cat\nB) Dog\nc: Cow", "Which animal?", ["Cat", "Dog", "Cow"]),
        ("Which?\nOptions:\n(a) Cat\n(b) Dog\n", "Which?", ["Cat", "Dog"]),
        ("Which animal?\n1. Cat", "Which animal?\n1. Cat", []),
        ("Which animal?\n2. Cat\n3. Dog", "Which animal?\n2. Cat\n3. Dog", []),
        ("Count them:\n3. x\n1. Cat\n2. Dog", "Count them:\n3. x", ["Cat", "Dog"]),
        ("What is said at 1. second?", "What is said at 1. second?", []),
        (
            "Steps:\n1. listen\n2. answer\nWhat is it?",
            "Steps:\n1. listen\n2. answer\nWhat is it?",
            [],
        ),
    ],
)
def test_choices_from_a_numbered_or_lettered_list(text, question, choices):
    from backend.http.openai_messages import split_choices

    assert split_choices(text) == (question, choices)


def test_models_route_lists_presets_then_planner_strategy_pairs(tmp_path):
    registry, _, _ = scripted_registry()
    with in_process(tmp_path, registry) as (client, http):
        models = client.models.list().data
        ids = [m.id for m in models]
        assert ids[:2] == ["offline", "offline/react"]
        assert {"scripted/react", "scripted/caption_first", "scripted/refine"} <= set(ids)
        assert all(m.object == "model" and m.owned_by == "ask-about-audio" for m in models)
        raw = http.get("/v1/models").json()
        assert raw["object"] == "list" and raw["data"][0]["tools"]  # a preset names its tools
        assert json.loads(json.dumps(raw)) == raw
