"""The shared page's handlers on a real service: every update checks the link again, so Stop
sharing (or deleting the conversation) ends a page that is open; a revoked link shows one
message and nothing else; a run still answering is drawn again on each tick."""

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
from backend.service import AgentService, AskRequest
from backend.service.owned import OwnedService
from frontend.shared_view import REVOKED, SharedView, build_shared_view

OWNER = "visitor:" + "a" * 32


def _turn(messages, tools, force):  # type: ignore[no-untyped-def]
    if any(m.role == "tool" for m in messages):
        return ScriptedTurn("Heard it.", answer=FinalAnswer(text="A dog"))
    return ScriptedTurn("Listening.", calls=[("fake_events", {})])


@pytest.fixture
def service(tmp_path: Path) -> Iterator[AgentService]:
    registry = Registry()
    registry.register(ScriptedPlanner([_turn]), kind="planner")
    registry.register(ScriptedTool("fake_events", "Dog 0.9"), kind="tool")
    settings = Settings(data_dir=tmp_path, warm_up=False, owner_runs_per_minute=0, owner_max_runs=0)
    service = create_service(settings, registry)
    yield service
    service.close()


async def _answered(service: AgentService, tone_wav: Path) -> tuple[OwnedService, str]:
    owned = OwnedService(service, OWNER)
    audio = owned.upload_file(tone_wav)
    started = owned.start_question(
        None, AskRequest("What is it?", audio_id=audio.id), [("scripted", "react")]
    )
    [e async for e in owned.stream(started.conversation_id, started.requests[0])]
    return owned, started.conversation_id


def _components() -> dict[str, Any]:
    """Stand-ins for the page's components (the handlers key their updates by them)."""
    names = ("state", "heading", "content", "chat", "run_select", "player", "timeline",
             "totals", "table", "timer")  # fmt: skip
    return {name: name for name in names}


async def test_a_shared_page_ends_when_sharing_stops(service, tone_wav) -> None:  # type: ignore[no-untyped-def]
    owned, cid = await _answered(service, tone_wav)
    token = owned.share(cid)
    view, c = SharedView(service), _components()
    page = view.page(c, token)
    assert page["content"]["visible"] is True
    chat = page["chat"]
    assert chat[0]["role"] == "user" and f"/api/shared/{token}/audio/" in chat[0]["content"]
    assert any("Answer:" in m["content"] for m in chat)
    assert "<td" in page["table"] and page["timeline"] is not None
    assert page["state"]["token"] == token and page["timer"].active is True
    run_id = page["run_select"]["value"]
    assert "chat" not in view.refresh(c, run_id, page["state"])  # nothing new: not drawn again
    assert "<td" in view.pick_run(c, run_id, page["state"])["table"]
    assert "<td" not in view.pick_run(c, "someone-elses-run", page["state"])["table"]

    owned.unshare(cid)  # the owner stops sharing while the page is open
    for ended in (view.refresh(c, run_id, page["state"]),
                  view.pick_run(c, run_id, page["state"])):  # fmt: skip
        assert ended["heading"] == REVOKED
        assert ended["content"]["visible"] is False and ended["chat"] == []
        assert ended["timer"].active is False and ended["state"] is None
    assert view.page(c, token)["heading"] == REVOKED  # and a fresh visit too


async def test_a_deleted_conversation_ends_its_link_and_news_are_drawn(service, tone_wav) -> None:  # type: ignore[no-untyped-def]
    owned, cid = await _answered(service, tone_wav)
    token = owned.share(cid)
    view, c = SharedView(service), _components()
    page = view.page(c, token)
    # the owner asks again: the open page draws the new question on its next tick
    started = owned.start_question(cid, AskRequest("And now?"), [("scripted", "react")])
    [e async for e in owned.stream(cid, started.requests[0])]
    update = view.refresh(c, None, page["state"])
    assert any("And now?" in m["content"] for m in update["chat"])
    owned.delete_conversation(cid)
    assert view.refresh(c, None, update["state"])["heading"] == REVOKED


def test_the_shared_page_builds(service) -> None:  # type: ignore[no-untyped-def]
    blocks = build_shared_view(service)
    names = {f.name for f in blocks.fns.values()}
    assert {"load"} <= names
