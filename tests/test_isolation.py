"""Per-owner isolation over real HTTP: two visitors (two cookie jars) on one server.

Visitor B, holding visitor A's ids, gets exactly what an id that does not exist gets (404,
same body) on every route, REST, SSE and Gradio events alike; B's identical upload never
shows A's file name; B's runs never read A's cached tool results.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.planners.base import ChatMessage
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_app
from backend.access.auth import OWNER_COOKIE
from backend.host.settings import Settings
from tests.servers import serve
from tests.sse import read_sse

SECRET_NAME = "a-private-board-meeting.wav"
ASK = {
    "question": "What animal?",
    "choices": ["Cat", "Dog"],
    "planner": "scripted",
    "tools": ["fake_events"],
}
COMPARE = {**ASK, "contenders": [{"planner": "scripted"}, {"planner": "scripted"}]}


def _turn(messages: list[ChatMessage], tools: Any, force_answer: bool) -> ScriptedTurn:
    if any(m.role == "tool" for m in messages):
        return ScriptedTurn("The classifier hears a dog. <answer>B</answer>")
    return ScriptedTurn("Let me listen.", calls=[("fake_events", {"top_k": 3})])


def registry() -> tuple[Registry, ScriptedTool]:
    reg = Registry()
    tool = ScriptedTool("fake_events", "Top classes: Dog 0.91", data={"labels": []})
    reg.register(ScriptedPlanner([_turn]), kind="planner")
    reg.register(tool, kind="tool")
    return reg, tool


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, ScriptedTool, Path]]:
    reg, tool = registry()
    app = create_app(Settings(data_dir=tmp_path / "data", warm_up=False), registry=reg)
    with serve(app) as base:
        yield base, tool, tmp_path / "data"


def ask(http: httpx.Client, conversation_id: str, audio_id: str | None) -> list[dict[str, Any]]:
    body: dict[str, Any] = dict(ASK)
    if audio_id:
        body["audio_id"] = audio_id
    with http.stream("POST", f"/api/conversations/{conversation_id}/ask", json=body) as r:
        assert r.status_code == 200, r.read()
        return [json.loads(e["data"]) for e in read_sse(r)]


def visitor_a(http: httpx.Client, wav: Path) -> dict[str, str]:
    """A's conversation, recording, message, run and a finished answer."""
    with open(wav, "rb") as fh:
        audio = http.post("/api/audio", files={"file": (SECRET_NAME, fh)}).json()
    conv = http.post("/api/conversations", json={"title": "A's secret"}).json()
    events = ask(http, conv["id"], audio["id"])
    assert events[-1]["type"] == "run_finished"
    detail = http.get(f"/api/conversations/{conv['id']}").json()
    message = detail["messages"][0]
    return {
        "conversation": conv["id"],
        "audio": audio["id"],
        "message": message["id"],
        "run": message["runs"][0]["id"],
    }


# (method, path, the kind of id in it, JSON body)
ROUTES: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("GET", "/api/conversations/{conversation}", "conversation", None),
    ("PATCH", "/api/conversations/{conversation}", "conversation", {"title": "Mine now"}),
    ("DELETE", "/api/conversations/{conversation}", "conversation", None),
    ("GET", "/api/conversations/{conversation}/export", "conversation", None),
    ("POST", "/api/conversations/{conversation}/ask", "conversation", ASK),
    ("POST", "/api/conversations/{conversation}/compare", "conversation", COMPARE),
    ("POST", "/api/conversations/{conversation}/share", "conversation", None),
    ("DELETE", "/api/conversations/{conversation}/share", "conversation", None),
    ("GET", "/api/audio/{audio}", "audio", None),
    ("GET", "/api/audio/{audio}/info", "audio", None),
    ("GET", "/api/runs/{run}", "run", None),
    ("GET", "/api/runs/{run}/events", "run", None),
    ("GET", "/api/messages/{message}/summary", "message", None),
]

MISSING = {
    "conversation": "0" * 32,
    "audio": "0" * 64,
    "run": "0" * 32,
    "message": "0" * 32,
}


def test_each_route_answers_another_owner_like_a_missing_id(server, tone_wav):
    base, tool, _ = server
    with httpx.Client(base_url=base, timeout=30) as a, httpx.Client(base_url=base, timeout=30) as b:
        ids = visitor_a(a, tone_wav)
        assert a.cookies.get(OWNER_COOKIE) and b.get("/api/health").status_code == 200
        assert b.cookies.get(OWNER_COOKIE) != a.cookies.get(OWNER_COOKIE)
        checked = []
        for method, template, kind, body in ROUTES:
            theirs = template.format(**ids)
            missing = template.format(**{kind: MISSING[kind]})
            got = b.request(method, theirs, json=body)
            expected = b.request(method, missing, json=body)
            assert got.status_code == 404, (method, theirs, got.status_code, got.text)
            assert expected.status_code == 404, (method, missing, expected.text)
            assert got.text.replace(ids[kind], "<id>") == expected.text.replace(
                MISSING[kind], "<id>"
            ), (method, template)
            checked.append((method, template))
        assert len(checked) == len(ROUTES)
        # B's own conversation cannot use A's recording either (same answer as a missing one).
        mine = b.post("/api/conversations", json={}).json()["id"]
        url = f"/api/conversations/{mine}/ask"
        theirs = b.post(url, json={**ASK, "audio_id": ids["audio"]})
        missing = b.post(url, json={**ASK, "audio_id": MISSING["audio"]})
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["detail"].replace(ids["audio"], "<id>") == missing.json()[
            "detail"
        ].replace(MISSING["audio"], "<id>")
        # B's list holds only B's; A's conversation is untouched by all of the above.
        assert [c["id"] for c in b.get("/api/conversations").json()] == [mine]
        assert [c["title"] for c in a.get("/api/conversations").json()] == ["A's secret"]
        assert a.get(f"/api/runs/{ids['run']}").status_code == 200
        assert a.get(f"/api/audio/{ids['audio']}").status_code == 200
        assert len(tool.calls) == 1  # B's ask and compare on A's conversation never ran


def test_identical_upload_keeps_names_apart_and_cache_per_owner(server, tone_wav):
    base, tool, _ = server
    with httpx.Client(base_url=base, timeout=30) as a, httpx.Client(base_url=base, timeout=30) as b:
        ids = visitor_a(a, tone_wav)
        with open(tone_wav, "rb") as fh:
            mine = b.post("/api/audio", files={"file": ("b.wav", fh)}).json()
        assert mine["id"] == ids["audio"]  # the same bytes, stored once
        assert mine["name"] == "b.wav"
        conv = b.post("/api/conversations", json={}).json()["id"]
        events = ask(b, conv, mine["id"])
        tool_results = [e for e in events if e["type"] == "tool_result"]
        assert tool_results and not any(e.get("cached") for e in tool_results)
        assert len(tool.calls) == 2  # B's run called the tool itself: no read of A's cache
        # A asking again does read A's own cached result.
        again = ask(a, ids["conversation"], None)
        assert any(e.get("cached") for e in again if e["type"] == "tool_result")
        assert len(tool.calls) == 2
        seen = [
            b.get(f"/api/audio/{mine['id']}/info").text,
            str(b.get(f"/api/audio/{mine['id']}").headers),
            b.get(f"/api/conversations/{conv}/export").text,
            b.get(f"/api/conversations/{conv}").text,
            json.dumps(events),
        ]
        for text in seen:
            assert SECRET_NAME not in text
        assert "b.wav" in seen[1]
        assert SECRET_NAME in a.get(f"/api/audio/{ids['audio']}").headers["content-disposition"]


def test_cookie_is_signed_httponly_lax_and_lasts(server, tmp_path):
    base, _, data_dir = server
    with httpx.Client(base_url=base) as http:
        response = http.get("/")  # the page: first contact sets it too
        cookie = response.headers["set-cookie"]
        assert cookie.startswith(f"{OWNER_COOKIE}=")
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Max-Age=" in cookie
        assert "set-cookie" not in http.get("/api/conversations").headers  # kept, not reissued
        owner = http.cookies[OWNER_COOKIE]
    # A forged or tampered cookie is no identity: a new visitor id is issued.
    forged = owner[:-2] + ("xx" if not owner.endswith("xx") else "yy")
    response = httpx.get(
        f"{base}/api/conversations", headers={"Cookie": f"{OWNER_COOKIE}={forged}"}
    )
    assert response.json() == []
    assert response.cookies[OWNER_COOKIE] not in (owner, forged)
    secret = data_dir / "secret_key"
    assert secret.is_file() and stat.S_IMODE(os.stat(secret).st_mode) == 0o600


def test_secret_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIO_AGENT_SECRET", "from-the-environment")
    reg, _ = registry()
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=reg, ui=False)
    with serve(app) as base, httpx.Client(base_url=base) as http:
        http.get("/api/conversations")
    assert not (tmp_path / "secret_key").exists()
    from itsdangerous import URLSafeTimedSerializer

    payload = URLSafeTimedSerializer("from-the-environment", salt="audio-agent-owner").loads(
        http.cookies[OWNER_COOKIE]
    )
    assert payload["o"].startswith("visitor:")


# ------------------------------------------------------------------------------ Gradio events


def gradio_call(http: httpx.Client, api_name: str, data: list[Any]) -> list[Any]:
    """Call one UI event over Gradio's HTTP API (POST, then read its SSE result)."""
    started = http.post(f"/gradio_api/call/{api_name}", json={"data": data})
    assert started.status_code == 200, started.text
    event_id = started.json()["event_id"]
    with http.stream("GET", f"/gradio_api/call/{api_name}/{event_id}") as r:
        frames = read_sse(r)
    complete = [f for f in frames if f.get("event") == "complete"]
    assert complete, frames
    return json.loads(complete[-1]["data"])


def test_gradio_events_see_only_their_owner(server, tone_wav):
    base, _, _ = server
    with httpx.Client(base_url=base, timeout=30) as a, httpx.Client(base_url=base, timeout=30) as b:
        ids = visitor_a(a, tone_wav)
        b.get("/")
        a_list = json.dumps(gradio_call(a, "load", ["/"]))
        b_list = json.dumps(gradio_call(b, "load", ["/"]))
        assert ids["conversation"] in a_list and "s secret" in a_list  # the title, escaped
        assert ids["conversation"] not in b_list and "s secret" not in b_list


async def test_ui_handlers_resolve_the_owner_from_the_request(tmp_path, tone_wav):
    """Handlers whose inputs come from the page's session (the sidebar's list, the run
    picker, the open conversation, a gr.State), which an API caller cannot set: called as
    Gradio calls them, with each visitor's gr.Request."""
    import gradio as gr

    from frontend.live import open_and_follow

    reg, _ = registry()
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=reg)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as a:
        ids = visitor_a(a, tone_wav)
        owner_a = app.state.identity.owner_from_cookie(a.cookies[OWNER_COOKIE])
    handlers = {
        f.name: f.fn.__self__
        for r in app.routes
        if hasattr(getattr(r, "app", None), "blocks")
        for f in r.app.blocks.fns.values()
        if f.name in ("select_run", "rename")  # bound methods of the page's handlers
    }
    conversations, actions = handlers["select_run"], handlers["rename"]
    ctx, cid = conversations.ctx, ids["conversation"]
    page = ctx.page
    as_a, as_b = gr.Request(username=owner_a), gr.Request(username="visitor:" + "b" * 32)
    mine = [u async for u in open_and_follow(ctx, cid, as_a)][0]
    assert mine[page.conversation] == cid and mine[page.chatbot]
    theirs = [u async for u in open_and_follow(ctx, cid, as_b)][0]
    assert theirs[page.conversation] is None and theirs[page.chatbot] == []
    assert "<td" in conversations.select_run(ids["run"], as_a)[page.trace.table]
    assert "<td" not in conversations.select_run(ids["run"], as_b)[page.trace.table]
    assert cid not in str(conversations.new(as_b)[page.sidebar.conv_list])
    assert cid in str(conversations.new(as_a)[page.sidebar.conv_list])
    assert page.sidebar.conv_list not in actions.rename(cid, "Taken", as_b)
    await actions.delete(cid, as_b)
    assert cid not in ctx.pending_deletes
    titles = lambda: [c.title for c in ctx.reads(as_a).data.list_conversations()]  # noqa: E731
    assert titles() == ["A's secret"]
    actions.rename(cid, "Renamed by A", as_a)
    assert titles() == ["Renamed by A"]
    # A's deletion, pending its Undo window: B's "window over" neither ends nor cancels it.
    await actions.delete(cid, as_a)
    assert cid in ctx.pending_deletes
    await actions.undo_expired(cid, as_b)
    assert cid in ctx.pending_deletes
    await actions.undo(cid, as_a)
    assert titles() == ["Renamed by A"]
