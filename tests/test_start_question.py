"""Starting a question in the service (what the page and the API share): a new conversation
is made for a first question and deleted again when the question is refused; titles are
short, carry the recording's name and are distinct per owner; the sidebar's query for
conversations with a run still going. Real parts: a SQLite file, the run manager."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.planners.base import FinalAnswer
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_service
from backend.host.settings import Settings
from backend.service import AgentService, AskRequest, ServiceError
from backend.service.owned import OwnedService
from backend.service.titles import conversation_title, distinct, recording_stem, shorten

OWNER = "visitor:" + "a" * 32
OTHER = "visitor:" + "b" * 32


def _turn(messages, tools, force):  # type: ignore[no-untyped-def]
    return ScriptedTurn("Heard it.", answer=FinalAnswer(text="done"))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[AgentService]:
    registry = Registry()
    registry.register(ScriptedPlanner([_turn]), kind="planner")
    registry.register(ScriptedTool("fake_events", "Dog 0.9"), kind="tool")
    settings = Settings(data_dir=tmp_path, warm_up=False, owner_runs_per_minute=0, owner_max_runs=0)
    service = create_service(settings, registry)
    yield service
    service.close()


def _release(service: AgentService, started) -> None:  # type: ignore[no-untyped-def]
    """Give back the admission ticket of prepared runs that are never started."""
    service.runs.release(service.questions.take_ticket(started.requests[0].run_id))


def test_titles_are_short_carry_the_recording_and_are_distinct() -> None:
    long = "Which sound is heard in this recording, and what makes it?"
    title = conversation_title(long, "dog_bark_esc50.wav", set())
    assert title == "Which sound is heard in this… · dog_bark_esc50"
    assert len(title) <= 60
    assert conversation_title("What is said?", "speech.ogg", set()) == "What is said · speech"
    # a browser's microphone capture says nothing: the question alone
    assert conversation_title("What is said?", "audio.wav", set()) == "What is said"
    assert distinct("A", {"A", "A (2)"}) == "A (3)"
    assert distinct("B", {"A"}) == "B"
    assert shorten("  a   b  ", 10) == "a b"
    assert recording_stem("/tmp/x/Very long recording name of a field trip.flac").endswith("…")


def test_a_first_question_opens_a_conversation_named_after_it(service, tone_wav) -> None:  # type: ignore[no-untyped-def]
    owned = OwnedService(service, OWNER)
    audio = owned.upload_file(tone_wav)
    titles = []
    for _ in range(3):  # the same question about the same recording, three times
        started = owned.start_question(
            None, AskRequest("Which sound is heard in this recording?", audio_id=audio.id),
            [("scripted", "react")],
        )  # fmt: skip
        _release(service, started)
        assert started.created
        titles.append(owned.data.get_conversation(started.conversation_id).title)
    stem = Path(tone_wav).stem
    assert titles[0] == f"Which sound is heard in this… · {stem}"
    assert titles[1:] == [titles[0] + " (2)", titles[0] + " (3)"]
    # a follow-up neither renames it nor opens another one
    again = owned.start_question(
        started.conversation_id, AskRequest("And then?"), [("scripted", "react")]
    )
    _release(service, again)
    assert not again.created and again.conversation_id == started.conversation_id
    assert owned.data.get_conversation(started.conversation_id).title == titles[2]
    # another owner's titles do not count
    other = OwnedService(service, OTHER)
    theirs = other.start_question(
        None, AskRequest("Which sound is heard in this recording?",
                         audio_id=other.upload_file(tone_wav).id),
        [("scripted", "react")],
    )  # fmt: skip
    _release(service, theirs)
    assert other.data.get_conversation(theirs.conversation_id).title == titles[0]


def test_a_refused_first_question_leaves_no_conversation(service, tone_wav) -> None:  # type: ignore[no-untyped-def]
    owned = OwnedService(service, OWNER)
    with pytest.raises(ServiceError, match="Upload or record audio first"):
        owned.start_question(None, AskRequest("What is it?"), [("scripted", "react")])
    with pytest.raises(ServiceError, match="Type a question first"):
        owned.start_question(None, AskRequest("   "), [("scripted", "react")])
    assert owned.data.list_conversations() == []
    # a refused follow-up keeps the conversation it was asked in
    audio = owned.upload_file(tone_wav)
    started = owned.start_question(
        None, AskRequest("What is it?", audio_id=audio.id), [("scripted", "react")]
    )
    _release(service, started)
    with pytest.raises(ServiceError, match="at least two answer choices"):
        owned.start_question(
            started.conversation_id, AskRequest("Which?", choices=["only one"]),
            [("scripted", "react")],
        )  # fmt: skip
    assert [c.id for c in owned.data.list_conversations()] == [started.conversation_id]
    # another owner's conversation id is no conversation of theirs: a new one is made
    other = OwnedService(service, OTHER)
    with pytest.raises(ServiceError):
        other.start_question(started.conversation_id, AskRequest("x?"), [("scripted", "react")])
    assert other.data.list_conversations() == []
    assert len(owned.data.list_messages(started.conversation_id)) == 1


async def test_running_conversations_are_found_in_one_query(service, tone_wav) -> None:  # type: ignore[no-untyped-def]
    owned = OwnedService(service, OWNER)
    audio = owned.upload_file(tone_wav)
    started = owned.start_question(
        None, AskRequest("What is it?", audio_id=audio.id), [("scripted", "react")]
    )
    idle = owned.data.create_conversation()
    ids = [started.conversation_id, idle.id]
    assert owned.data.running_conversations(ids) == {started.conversation_id}
    assert OwnedService(service, OTHER).data.running_conversations(ids) == set()
    events = [e async for e in owned.stream(started.conversation_id, started.requests[0])]
    assert events[-1].type == "run_finished"
    assert owned.data.running_conversations(ids) == set()
