"""Reading a conversation does not grow with its length: the number of SQL statements for the
planner's history, the run list, the full view, the REST route that opens it and the
preparation of its next question is the same at 2 and at 12 questions."""

from __future__ import annotations

import httpx

from agent.planners.base import FinalAnswer
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_app, create_service
from backend.host.settings import Settings
from backend.service import AskRequest
from storage.models import DEFAULT_OWNER
from tests.db_kit import counting
from tests.servers import serve


def _registry():
    registry = Registry()
    tool = ScriptedTool("fake_events", "Top classes: Dog 0.91")

    def turn(messages, tools, force):
        if any(m.role == "tool" for m in messages):
            question = next(m for m in reversed(messages) if m.role == "user").data["question"]
            return ScriptedTurn(answer=FinalAnswer(text=f"answer to {question}"))
        return ScriptedTurn("Listening.", calls=[("fake_events", {})])

    registry.register(ScriptedPlanner([turn]), kind="planner")
    registry.register(tool, kind="tool")
    return registry


def _service(tmp_path):
    return create_service(Settings(data_dir=tmp_path, warm_up=False), _registry())


async def _ask(service, conversation_id, audio_id, question):
    request, _ = service.prepare(
        conversation_id,
        AskRequest(question=question, audio_id=audio_id, planner="scripted"),
        owner=DEFAULT_OWNER,
    )
    return [e async for e in service.stream(conversation_id, request)]


async def test_history_and_view_take_the_same_queries_at_any_length(tmp_path, tone_wav):
    service = _service(tmp_path)
    audio_id = service.upload_file(tone_wav, owner=DEFAULT_OWNER).id
    counts = {}
    for size in (2, 12):
        conv = service.store.conversations.create_conversation()
        for i in range(size):
            events = await _ask(service, conv.id, audio_id, f"question {i}?")
            assert events[-1].type == "run_finished"
        engine = service.store.engine
        with counting(engine) as history_sql:
            history = service.questions.history(conv.id)
        with counting(engine) as rows_sql:
            rows = service.conversation_view(conv.id, owner=DEFAULT_OWNER, events=False)
        with counting(engine) as full_sql:
            full = service.conversation_view(conv.id, owner=DEFAULT_OWNER)
        assert [t.question for t in history] == [f"question {i}?" for i in range(size)]
        assert [t.answer for t in history] == [f"answer to question {i}?" for i in range(size)]
        user = [v for v in rows if v.message.role == "user"]
        assert len(user) == size and all(len(v.runs) == 1 and not v.runs[0].events for v in user)
        traced = [v.runs[0].events for v in full if v.message.role == "user"]
        assert all(e[0].type == "run_started" and e[-1].type == "run_finished" for e in traced)
        counts[size] = (len(history_sql), len(rows_sql), len(full_sql))
    assert counts[2] == counts[12], counts
    assert counts[12][0] == 1  # the planner's history is one query


async def test_unanswered_questions_are_left_out_of_the_history(tmp_path, tone_wav):
    service = _service(tmp_path)
    audio_id = service.upload_file(tone_wav, owner=DEFAULT_OWNER).id
    conv = service.store.conversations.create_conversation()
    await _ask(service, conv.id, audio_id, "first?")
    service.prepare(
        conv.id, AskRequest(question="never run?", audio_id=audio_id), owner=DEFAULT_OWNER
    )
    await _ask(service, conv.id, audio_id, "third?")
    history = service.questions.history(conv.id)
    assert [t.question for t in history] == ["first?", "third?"]


def _http_app(tmp_path):
    """The app with the scripted registry and no per-owner rate limits (many questions)."""
    settings = Settings(data_dir=tmp_path, warm_up=False, owner_runs_per_minute=0, owner_max_runs=0)
    return create_app(settings, registry=_registry())


def _conversation_over_http(http, tone_wav, size):
    """A new conversation with ``size`` answered questions about the tone, asked over HTTP."""
    with tone_wav.open("rb") as fh:
        audio_id = http.post("/api/audio", files={"file": ("tone.wav", fh)}).json()["id"]
    conv = http.post("/api/conversations", json={}).json()
    for i in range(size):
        body = {"question": f"question {i}?", "audio_id": audio_id}
        with http.stream("POST", f"/api/conversations/{conv['id']}/ask", json=body) as r:
            assert r.status_code == 200
            r.read()
    return conv


def test_opening_and_asking_over_http_take_the_same_statements_at_any_length(tmp_path, tone_wav):
    """GET /api/conversations/{id} and the preparation of its next question (what POST
    .../ask does before it streams) run as many statements at 12 questions as at 2."""
    app = _http_app(tmp_path)
    service = app.state.service
    counts = {}
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        for size in (2, 12):
            conv = _conversation_over_http(http, tone_wav, size)
            with counting(service.store.engine, any_thread=True) as opening:  # the thread pool
                http.get(f"/api/conversations/{conv['id']}").raise_for_status()
            with counting(service.store.engine) as asking:
                request, _ = service.prepare(conv["id"], AskRequest("next?"), owner=conv["owner"])
            service.runs.release(service.questions.take_ticket(request.run_id))
            counts[size] = (len(opening), len(asking))
            listed = http.get(f"/api/conversations/{conv['id']}").json()["messages"]
            assert len(listed) == 2 * size + 1
            assert all("events" not in run for m in listed for run in m["runs"])
    assert counts[2] == counts[12], counts


def test_a_page_from_the_end_reads_only_its_messages(tmp_path, tone_wav):
    """GET /api/conversations/{id}?last=N: the last N messages with their runs, in order,
    the total count beside them, and rows read that do not grow with the conversation."""
    app = _http_app(tmp_path)
    service = app.state.service
    rows_read = {}
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        for size in (3, 12):
            conv = _conversation_over_http(http, tone_wav, size)["id"]
            with counting(service.store.engine, any_thread=True) as opening:
                page = http.get(f"/api/conversations/{conv}", params={"last": 4}).json()
            whole = http.get(f"/api/conversations/{conv}").json()
            assert page["total_messages"] == whole["total_messages"] == len(whole["messages"])
            assert page["messages"] == whole["messages"][-4:]  # same rows, same runs
            assert [m["position"] for m in page["messages"]] == sorted(
                m["position"] for m in page["messages"]
            )
            rows_read[size] = len(opening)
        bad = http.get(f"/api/conversations/{conv}", params={"last": 0})
        assert bad.status_code == 422
    assert rows_read[3] == rows_read[12], rows_read
