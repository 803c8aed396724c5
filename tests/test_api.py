"""The HTTP API over real HTTP: upload, ask (server-sent events), traces, conversations."""

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
from tests.sse import read_sse


def scripted_registry() -> tuple[Registry, ScriptedTool]:
    registry = Registry()
    tool = ScriptedTool("fake_events", "Top classes: Dog 0.91, Animal 0.80", data={"labels": []})
    planner = ScriptedPlanner(
        [
            ScriptedTurn("Let me listen.", calls=[("fake_events", {"top_k": 3})]),
            ScriptedTurn("The classifier hears a dog. <answer>B</answer>"),
        ]
    )
    registry.register(planner, kind="planner")
    registry.register(tool, kind="tool")
    return registry, tool


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, ScriptedTool]]:
    registry, tool = scripted_registry()
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=registry, ui=False)
    with serve(app) as base:
        yield base, tool


def test_upload_ask_stream_and_trace(api, tone_wav):
    base, tool = api
    with httpx.Client(base_url=base, timeout=30) as http:
        assert http.get("/api/health").json()["status"] == "ok"
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio = http.post("/api/audio", files={"file": ("tone.wav", fh, "audio/wav")})
        assert audio.status_code == 201, audio.text
        audio = audio.json()
        assert audio["format"] == "wav" and abs(audio["duration_s"] - 1.0) < 0.01
        body = {
            "question": "What animal is this?",
            "choices": ["Cat", "Dog", "Cow"],
            "audio_id": audio["id"],
            "planner": "scripted",
            "tools": ["fake_events"],
        }
        with http.stream("POST", f"/api/conversations/{conv['id']}/ask", json=body) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            raw = read_sse(resp)
        streamed = [parse_event(json.loads(e["data"])) for e in raw]
        assert [e["event"] for e in raw] == [e.type for e in streamed]
        assert streamed[0].type == "run_started" and streamed[-1].type == "run_finished"
        answer = next(e for e in streamed if e.type == "answer")
        assert answer.choice == "Dog"
        assert tool.calls == [{"top_k": 3}]

        run_id = streamed[0].run_id
        stored = http.get(f"/api/runs/{run_id}").json()
        assert stored["run"]["status"] == "ok" and stored["run"]["answer_choice"] == "Dog"
        assert [parse_event(e) for e in stored["events"]] == streamed

        detail = http.get(f"/api/conversations/{conv['id']}").json()
        roles = [m["role"] for m in detail["messages"]]
        assert roles == ["user", "assistant"]
        assert detail["messages"][1]["text"] == "Dog"
        assert detail["conversation"]["title"].startswith("What animal")

        exported = http.get(f"/api/conversations/{conv['id']}/export")
        assert "attachment" in exported.headers["content-disposition"]
        assert exported.json()["messages"][0]["runs"][0]["events"][0]["type"] == "run_started"


def test_follow_up_reuses_the_audio_and_sees_history(api, tone_wav):
    base, _ = api
    with httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        ask = f"/api/conversations/{conv['id']}/ask"
        first = {"question": "q1", "audio_id": audio_id, "planner": "scripted"}
        with http.stream("POST", ask, json=first) as resp:
            read_sse(resp)
        # no audio_id: the conversation's latest audio is used
        with http.stream("POST", ask, json={"question": "q2", "planner": "scripted"}) as resp:
            raw = read_sse(resp)
        started = parse_event(json.loads(raw[0]["data"]))
        assert started.audio_ids == [audio_id]


def test_bad_input_gets_clear_messages(api, tmp_path):
    base, _ = api
    with httpx.Client(base_url=base, timeout=30) as http:
        bad = http.post("/api/audio", files={"file": ("x.mp3", b"not audio at all", "audio/mpeg")})
        assert bad.status_code == 415 and "not a supported audio" in bad.json()["detail"]
        empty = http.post("/api/audio", files={"file": ("e.wav", b"")})
        assert empty.status_code == 422 and "empty" in empty.json()["detail"]
        conv = http.post("/api/conversations", json={}).json()
        ask = f"/api/conversations/{conv['id']}/ask"
        no_audio = http.post(ask, json={"question": "what?"})
        assert no_audio.status_code == 400 and "Upload or record audio" in no_audio.json()["detail"]
        unknown = http.post(ask, json={"question": "what?", "planner": "gpt", "audio_id": "0" * 64})
        assert unknown.status_code in (400, 404)
        missing = http.post("/api/conversations/nope/ask", json={"question": "q"})
        assert missing.status_code == 404


def test_catalogue_lists_unavailable_entries_with_reasons(api):
    base, _ = api
    catalogue = httpx.get(f"{base}/api/catalogue").json()
    gpt = next(p for p in catalogue["planners"] if p["name"] == "gpt")
    assert gpt["available"] is False and "OPENAI_API_KEY" in gpt["reason"]
    offline = next(p for p in catalogue["planners"] if p["name"] == "offline")
    assert offline["available"] and "not an LLM" in offline["label"]


def test_rename_delete_conversation(api):
    base, _ = api
    with httpx.Client(base_url=base) as http:
        conv = http.post("/api/conversations", json={"title": "first"}).json()
        renamed = http.patch(f"/api/conversations/{conv['id']}", json={"title": "Dog clip"})
        assert renamed.json()["title"] == "Dog clip"
        assert [c["title"] for c in http.get("/api/conversations").json()] == ["Dog clip"]
        assert http.delete(f"/api/conversations/{conv['id']}").status_code == 204
        assert http.get("/api/conversations").json() == []
        assert http.get(f"/api/conversations/{conv['id']}").status_code == 404


def test_compare_runs_planners_side_by_side_and_summarises(tmp_path, tone_wav):
    registry, _ = scripted_registry()
    slow = ScriptedPlanner([ScriptedTurn("Slow and sure. <answer>Dog</answer>")], name="second",
                           delay_s=0.05)  # fmt: skip
    other = ScriptedPlanner([ScriptedTurn("<answer>Cow</answer>")], name="third")
    registry.register(slow, kind="planner")
    registry.register(other, kind="planner")
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=registry, ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        body = {
            "question": "What animal?",
            "choices": ["Cat", "Dog", "Cow"],
            "audio_id": audio_id,
            "tools": ["fake_events"],
            "contenders": [
                {"planner": "scripted"},
                {"planner": "second", "strategy": "react"},
                {"planner": "third"},
            ],
        }
        with http.stream("POST", f"/api/conversations/{conv['id']}/compare", json=body) as resp:
            assert resp.status_code == 200, resp.read()
            raw = read_sse(resp)
        assert raw[-1]["event"] == "summary"
        summary = json.loads(raw[-1]["data"])
        events = [parse_event(json.loads(e["data"])) for e in raw[:-1]]
        run_ids = {e.run_id for e in events}
        assert len(run_ids) == 3
        assert sum(e.type == "run_finished" for e in events) == 3
        assert summary["votes"] == {"Dog": 2, "Cow": 1}
        assert summary["majority"] == "Dog" and summary["agreement"] is False
        assert {r["planner"] for r in summary["runs"]} == {"scripted", "second", "third"}

        detail = http.get(f"/api/conversations/{conv['id']}").json()
        user, assistant = detail["messages"]
        assert len(user["runs"]) == 3 and len({r["group_id"] for r in user["runs"]}) == 1
        assert assistant["text"] == "Dog (majority, 2 of 3)"
        again = http.get(f"/api/messages/{user['id']}/summary").json()
        assert again["votes"] == summary["votes"]
        # each stored trace equals what was streamed for that run
        for run_id in run_ids:
            stored = [parse_event(e) for e in http.get(f"/api/runs/{run_id}").json()["events"]]
            assert stored == [e for e in events if e.run_id == run_id]


def test_compare_summary_says_when_every_run_only_guessed(tmp_path, tone_wav):
    """Four runs that all answer "siren" as a best guess at 0.25 do not "agree": the summary
    (stream, stored headline, summary route) says they all guessed, with each confidence."""
    from agent.planners.base import FinalAnswer

    registry, _ = scripted_registry()
    names = ["first", "second", "third", "fourth"]
    for name in names:
        guess = FinalAnswer("siren", choice="siren", confidence=0.25, guess=True)
        registry.register(ScriptedPlanner([ScriptedTurn("Hm.", answer=guess)], name=name),
                          kind="planner")  # fmt: skip
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=registry, ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        body = {
            "question": "Which sound?", "choices": ["siren", "chainsaw"], "audio_id": audio_id,
            "tools": ["fake_events"], "contenders": [{"planner": n} for n in names],
        }  # fmt: skip
        with http.stream("POST", f"/api/conversations/{conv['id']}/compare", json=body) as resp:
            summary = json.loads(read_sse(resp)[-1]["data"])
        assert summary["all_guessed"] is True and summary["guessed"] == 4
        assert [(r["guess"], r["confidence"]) for r in summary["runs"]] == [(True, 0.25)] * 4
        headline = summary["headline"]
        assert "agree on a guess" in headline and "confidence 0.25" in headline
        user, assistant = http.get(f"/api/conversations/{conv['id']}").json()["messages"]
        assert assistant["text"] == summary["headline"]
        assert not assistant["text"].endswith("(all 4 runs agree)")
        assert http.get(f"/api/messages/{user['id']}/summary").json()["all_guessed"] is True


def test_compare_rejects_unknown_strategies(api, tone_wav):
    base, _ = api
    with httpx.Client(base_url=base) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        bad = http.post(
            f"/api/conversations/{conv['id']}/compare",
            json={"question": "q", "audio_id": audio_id,
                  "contenders": [{"planner": "scripted", "strategy": "astrology"}]},
        )  # fmt: skip
        assert bad.status_code == 400 and "Unknown strategy" in bad.json()["detail"]


def test_history_survives_a_restart_and_interrupted_runs_are_closed(tmp_path, tone_wav):
    from agent import events as ev
    from storage import Store

    registry, _ = scripted_registry()
    settings = Settings(data_dir=tmp_path, warm_up=False)
    app = create_app(settings, registry=registry, ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        body = {"question": "What animal?", "audio_id": audio_id, "planner": "scripted"}
        with http.stream("POST", f"/api/conversations/{conv['id']}/ask", json=body) as r:
            streamed = read_sse(r)
        visitor = dict(http.cookies)  # the same browser comes back after the restart
    # a run that was still going when the server died: started, never finished
    store = Store.open(settings.database_url)
    message = store.messages.add_message(conv["id"], "user", "Cut short?", audio_id=audio_id)
    store.runs.create_run("r" * 32, message.id, "scripted", "react", [])
    store.runs.append_event(
        ev.RunStarted(run_id="r" * 32, seq=1, question="Cut short?", planner="scripted")
    )
    store.close()

    registry2, _ = scripted_registry()
    app = create_app(settings, registry=registry2, ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30, cookies=visitor) as http:
        titles = [c["title"] for c in http.get("/api/conversations").json()]
        assert titles == ["What animal · t"]  # the question and the recording (t.wav)
        detail = http.get(f"/api/conversations/{conv['id']}").json()
        first_run = detail["messages"][0]["runs"][0]
        stored = http.get(f"/api/runs/{first_run['id']}").json()["events"]
        assert [e["type"] for e in stored] == [e["event"] for e in streamed]
        cut = http.get(f"/api/runs/{'r' * 32}").json()
        assert cut["run"]["status"] == "interrupted"
        assert cut["events"][-1]["type"] == "run_failed"
