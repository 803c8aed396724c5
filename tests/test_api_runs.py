"""Runs over real HTTP: a client that goes away does not stop the run; following it again with
``GET /api/runs/{id}/events?after=SEQ`` (SSE or JSON); Stop; 429 with Retry-After."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.events import parse_event
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_app
from backend.host.settings import Settings
from tests.servers import serve
from tests.sse import sse_frames

SCRIPTED = {"planner": "scripted", "tools": ["slow_tool"]}


def slow_registry(delay_s: float = 0.5) -> Registry:
    registry = Registry()
    registry.register(ScriptedTool("slow_tool", "a dog barks", delay_s=delay_s), kind="tool")

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        if any(m.role == "tool" for m in messages):
            return ScriptedTurn("Heard it. <answer>Dog</answer>")
        return ScriptedTurn("Let me listen.", calls=[("slow_tool", {})])

    registry.register(ScriptedPlanner([turn]), kind="planner")
    return registry


@pytest.fixture
def make_api(tmp_path: Path):
    def make(**settings) -> Iterator[str]:
        data_dir = tmp_path / f"data{len(list(tmp_path.glob('data*')))}"
        app = create_app(
            Settings(data_dir=data_dir, warm_up=False, **settings),
            registry=slow_registry(),
            ui=False,
        )
        return serve(app)

    return make


def setup(http: httpx.Client, tone_wav: Path) -> tuple[str, str]:
    conv = http.post("/api/conversations", json={}).json()
    with open(tone_wav, "rb") as fh:
        audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
    return conv["id"], audio_id


def ask(http: httpx.Client, conv: str, audio_id: str) -> httpx.Response:
    body = {"question": "What animal?", "choices": ["Cat", "Dog"], "audio_id": audio_id, **SCRIPTED}
    return http.post(f"/api/conversations/{conv}/ask", json=body)


def test_client_goes_away_then_follows_with_after(make_api, tone_wav):
    with make_api() as base, httpx.Client(base_url=base, timeout=30) as http:
        conv, audio_id = setup(http, tone_wav)
        body = {
            "question": "What animal?",
            "choices": ["Cat", "Dog"],
            "audio_id": audio_id,
            **SCRIPTED,
        }
        seen = []
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            run_id = resp.headers["X-Run-Id"]
            for frame in sse_frames(resp):
                seen.append(frame)
                if frame["event"] == "tool_call":
                    break  # the client disconnects mid-run
        last = int(seen[-1]["id"])
        assert http.get(f"/api/runs/{run_id}").json()["run"]["status"] == "running"
        with http.stream(
            "GET",
            f"/api/runs/{run_id}/events",
            params={"after": last},
            headers={"Accept": "text/event-stream"},
        ) as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            rest = list(sse_frames(resp))
        assert [int(f["id"]) for f in rest] == list(range(last + 1, last + 1 + len(rest)))
        assert rest[-1]["event"] == "run_finished"
        assert json.loads(rest[-1]["data"])["status"] == "ok"
        stored = http.get(f"/api/runs/{run_id}/events").json()
        assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
        assert [parse_event(e) for e in stored] == [
            parse_event(json.loads(f["data"])) for f in seen + rest
        ]
        # JSON without Accept: the stored ones after SEQ
        tail = http.get(f"/api/runs/{run_id}/events", params={"after": last}).json()
        assert [e["seq"] for e in tail] == [int(f["id"]) for f in rest]
        # the answer still became the assistant's message
        messages = http.get(f"/api/conversations/{conv}").json()["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"]


def test_stop_route_cancels_a_live_run(make_api, tone_wav):
    with make_api() as base, httpx.Client(base_url=base, timeout=30) as http:
        conv, audio_id = setup(http, tone_wav)
        body = {"question": "What animal?", "audio_id": audio_id, **SCRIPTED}
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            run_id = resp.headers["X-Run-Id"]
            frames = []
            for frame in sse_frames(resp):
                frames.append(frame)
                if frame["event"] == "tool_call":
                    stopped = http.post(f"/api/runs/{run_id}/stop")
                    assert stopped.status_code == 200 and stopped.json()["stopped"] is True
        assert frames[-1]["event"] == "run_failed"
        assert json.loads(frames[-1]["data"])["kind"] == "cancelled"
        run = http.get(f"/api/runs/{run_id}").json()["run"]
        assert run["status"] == "cancelled"
        again = http.post(f"/api/runs/{run_id}/stop").json()
        assert again == {"run_id": run_id, "stopped": False, "status": "cancelled"}
        assert http.post("/api/runs/nope/stop").status_code == 404


def test_busy_server_and_owner_limits_answer_429_with_retry_after(make_api, tone_wav):
    with (
        make_api(max_runs=1, run_queue=1, owner_max_runs=0) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        conv, audio_id = setup(http, tone_wav)
        body = {"question": "What animal?", "audio_id": audio_id, **SCRIPTED}
        with (
            http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as first,
            http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as second,
        ):
            frames = sse_frames(second)
            queued = next(frames)
            assert queued["event"] == "queued"
            assert json.loads(queued["data"])["ahead"] == 0
            refused = ask(http, conv, audio_id)
            assert refused.status_code == 429
            assert int(refused.headers["Retry-After"]) >= 1
            assert "busy" in refused.json()["detail"]
            assert [f["event"] for f in sse_frames(first)][-1] == "run_finished"
            assert [f["event"] for f in frames][-1] == "run_finished"
        # nothing of the refused question was stored
        messages = http.get(f"/api/conversations/{conv}").json()["messages"]
        assert [m["role"] for m in messages].count("user") == 2

    with (
        make_api(owner_runs_per_minute=1) as base,
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        conv, audio_id = setup(http, tone_wav)
        assert ask(http, conv, audio_id).status_code == 200
        refused = ask(http, conv, audio_id)
        assert refused.status_code == 429 and "per minute" in refused.json()["detail"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
