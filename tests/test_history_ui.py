"""A long conversation in the UI: opening it and asking its next question take the same SQL
statements at 4 and at 12 questions, read the whole trace of only the last questions, never
touch the database on the event loop, and stream each update without rendering the earlier
questions again. Real parts: a SQLite file, the run manager, the Gradio handlers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.planners.base import FinalAnswer
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_service
from backend.host.settings import Settings
from backend.service import SUMMARY_EVENT_TYPES, AskRequest
from frontend import questions, render, views
from frontend import ui as ui_module
from frontend.live import open_and_follow
from storage.models import DEFAULT_OWNER
from tests.db_kit import counting


def _turn(messages, tools, force):  # type: ignore[no-untyped-def]
    if any(m.role == "tool" for m in messages):
        return ScriptedTurn("The tool heard it.", answer=FinalAnswer(text="done"))
    return ScriptedTurn("Listening first.", calls=[("fake_events", {})])


@pytest.fixture
def ui(tmp_path: Path) -> Iterator[Any]:
    """The page's handlers on a real service (SQLite file, run manager); closed after."""
    registry = Registry()
    registry.register(ScriptedPlanner([_turn]), kind="planner")
    registry.register(ScriptedTool("fake_events", "Top classes: Dog 0.91"), kind="tool")
    settings = Settings(data_dir=tmp_path, warm_up=False, owner_runs_per_minute=0, owner_max_runs=0)
    service = create_service(settings, registry)
    yield ui_module.build(service)
    service.close()


async def _conversation(ui: Any, audio_id: str, count: int) -> str:
    service = ui.context.service
    conv = service.store.conversations.create_conversation()
    for i in range(count):
        ask = AskRequest(question=f"question {i}?", audio_id=audio_id, planner="scripted")
        request, _ = service.prepare(conv.id, ask, owner=DEFAULT_OWNER)
        events = [e async for e in service.stream(conv.id, request)]
        assert events[-1].type == "run_finished"
    return conv.id


async def _ask(ui: Any, conversation_id: str) -> list[dict[Any, Any]]:
    ask = AskRequest("next?", tools=None)
    updates = ui.asking.ask(conversation_id, ask, ("scripted", "react"), None)
    return [u async for u in updates]


async def test_open_and_ask_take_the_same_statements_at_any_length(ui, tone_wav):
    service, page, ctx = ui.context.service, ui.page, ui.context
    engine = service.store.engine
    audio_id = service.upload_file(tone_wav, owner=DEFAULT_OWNER).id
    reads = ctx.reads(None)
    counts = {}
    for size in (4, 12):  # both longer than the FULL_TRACES shown whole
        conv = await _conversation(ui, audio_id, size)
        with counting(engine) as opening:
            opened = reads.opened(conv)
            update = views.opened(page, reads, opened)
        with counting(engine) as asking:
            question = reads.service.start_question(conv, AskRequest("next?"),
                                                    [("scripted", "react")])  # fmt: skip
            questions.Started(reads, question)
        with counting(engine) as finishing:
            questions.finished_view(ctx, reads, conv, question.requests[0].run_id, [])
        service.runs.release(service.questions.take_ticket(question.requests[0].run_id))
        counts[size] = (len(opening), len(asking), len(finishing))
        # the whole trace of the last questions only; the summary of the earlier ones
        runs = [r for v in opened.views for r in v.runs]
        assert [r.complete for r in runs] == [False] * (size - 3) + [True] * min(size, 3)
        for run in runs[: max(size - 3, 0)]:
            assert {e.type for e in run.events} <= set(SUMMARY_EVENT_TYPES)
            assert any(e.type == "answer" for e in run.events)
        chat = update[page.chatbot]
        assert len([m for m in chat if m["role"] == "user"]) == size
        assert sum("not loaded" in (m.get("metadata") or {}).get("title", "") for m in chat) == (
            max(size - 3, 0)
        )
    assert counts[4] == counts[12], counts


async def test_show_all_traces_reads_every_run(ui, tone_wav):
    audio_id = ui.context.service.upload_file(tone_wav, owner=DEFAULT_OWNER).id
    conv = await _conversation(ui, audio_id, 5)
    page = ui.page
    opened = [u async for u in open_and_follow(ui.context, conv, None)][0]
    assert opened[page.full_btn]["visible"] is True
    full = ui.conversations.show_all(conv)[page.chatbot]
    titles = [(m.get("metadata") or {}).get("title", "") for m in full]
    assert sum(t.startswith("Tool: fake_events") for t in titles) == 5
    assert not any("not loaded" in t for t in titles)
    assert len(full) > len(opened[page.chatbot])


async def test_asking_never_reads_the_database_on_the_event_loop(ui, tone_wav):
    service = ui.context.service
    audio_id = service.upload_file(tone_wav, owner=DEFAULT_OWNER).id
    conv = await _conversation(ui, audio_id, 4)
    with counting(service.store.engine) as on_loop:
        updates = await _ask(ui, conv)
        opened = [u async for u in open_and_follow(ui.context, conv, None)]
    assert on_loop == [], on_loop[:3]
    assert len(updates) >= 3 and opened
    # every update reuses the conversation rendered once before it: the same message objects
    chat = ui.page.chatbot
    streamed = [u[chat] for u in updates if chat in u]
    prefix = streamed[0][:-1]  # the first update: the conversation, then the new question
    assert streamed[0][-1] == render.render_user("next?") and len(prefix) > 4
    for value in streamed[1:]:
        assert all(a is b for a, b in zip(value, prefix, strict=False))
    assert streamed[-1][-1]["content"].startswith("**Answer:** done")
