"""Storage on a real SQLite file and a real PostgreSQL server: migrations, cascade, events,
export, cache, threads, NUL bytes and very long strings.

Most tests take ``db_url``, which runs them once per backend (see tests/db_kit.py)."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Integer, MetaData, Table, inspect, select
from sqlalchemy.exc import IntegrityError

from agent.audio import AudioRef
from agent.events import (
    Answer,
    Event,
    PlannerDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    Thought,
    ToolCall,
    ToolResultEvent,
    Usage,
    Verification,
)
from agent.tools.base import ToolResult, cache_key
from storage import SqlToolCache, Store, make_engine, migrate, session_factory
from storage.db import alembic_config
from storage.models import Base, EventRow, Message, Run
from storage.repo import EXPORT_FORMAT, INTERRUPTED_ERROR, make_title
from tests.db_kit import sqlite_url

AUDIO_ID = "ab" * 32


@pytest.fixture
def db_url(any_db_url: str) -> str:
    return any_db_url


@pytest.fixture
def sqlite_db(tmp_path: Path) -> str:
    return sqlite_url(tmp_path)


@pytest.fixture
def store(db_url: str):
    s = Store.open(db_url)
    yield s
    s.close()


def audio_ref(tmp_path: Path, audio_id: str = AUDIO_ID) -> AudioRef:
    return AudioRef(
        id=audio_id,
        path=tmp_path / audio_id[:2] / audio_id / "audio.wav",
        original_path=tmp_path / audio_id[:2] / audio_id / "original.mp3",
        duration_s=12.5,
        format="mp3",
        original_sample_rate=44_100,
        original_channels=2,
        name="birds.mp3",
    )


def run_id() -> str:
    return uuid.uuid4().hex


def sample_events(rid: str, audio_id: str = AUDIO_ID) -> list[Event]:
    usage = Usage(input_tokens=120, output_tokens=30, audio_seconds=12.5)
    return [
        RunStarted(
            run_id=rid,
            seq=1,
            question="Which animal can be heard?",
            choices=["dog", "bird", "cat"],
            audio_ids=[audio_id],
            planner="offline",
            planner_label="Offline planner",
            tools=["local_events", "local_asr"],
            strategy="react",
            settings={"max_calls": 6, "temperature": 0.0},
        ),
        PlannerDelta(run_id=rid, seq=2, turn=1, text="I should listen "),
        PlannerDelta(run_id=rid, seq=3, turn=1, text="for sound events."),
        Thought(
            run_id=rid,
            seq=4,
            turn=1,
            text="I should listen for sound events.",
            usage=Usage(input_tokens=100, output_tokens=20),
            cost=0.0001,
        ),
        ToolCall(
            run_id=rid,
            seq=5,
            call_id="c1",
            tool="local_events",
            arguments={"audio_id": audio_id, "top_k": 5},
            model="yamnet",
        ),
        ToolResultEvent(
            run_id=rid,
            seq=6,
            call_id="c1",
            tool="local_events",
            output="Bird vocalization (0.91) 0.0-12.5 s; Wind (0.12)",
            data={"events": [{"label": "Bird", "score": 0.91, "start": 0.0, "end": 12.5}]},
            duration_s=0.42,
            usage=usage,
            cost=0.0,
            cached=False,
        ),
        Verification(
            run_id=rid,
            seq=7,
            compared=["local_events", "local_asr"],
            answers={"local_events": "bird", "local_asr": "no speech"},
            agreement=False,
            resolution="trust local_events: no speech present",
        ),
        Answer(
            run_id=rid,
            seq=8,
            text="A bird can be heard singing.",
            choice="bird",
            match_rule="exact",
            confidence=0.9,
            rationale="YAMNet tags birdsong across the whole clip.",
        ),
        RunFinished(
            run_id=rid,
            seq=9,
            calls=1,
            input_tokens=220,
            output_tokens=50,
            cost=0.0001,
            wall_s=1.75,
            status="ok",
        ),
    ]


def new_question(store: Store, tmp_path: Path, text: str = "Which animal can be heard?"):
    store.recordings.add_audio(audio_ref(tmp_path), size_bytes=201_234)
    conv = store.conversations.create_conversation()
    msg = store.messages.add_message(
        conv.id, "user", text, choices=["dog", "bird", "cat"], audio_id=AUDIO_ID
    )
    return conv, msg


# ---------------------------------------------------------------- schema and engine


def test_migrate_creates_schema_matching_models(db_url: str) -> None:
    migrate(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
            assert {
                "conversations",
                "audio",
                "messages",
                "runs",
                "events",
                "tool_cache",
                "alembic_version",
            } <= tables
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            head = ScriptDirectory.from_config(alembic_config(db_url)).get_current_head()
            assert ctx.get_current_revision() == head
            assert compare_metadata(ctx, Base.metadata) == []
            # The comparison does notice a difference (so the assertion above means something).
            other = MetaData()
            for table in Base.metadata.tables.values():
                table.to_metadata(other)
            Table("extra", other, Column("id", Integer, primary_key=True))
            assert any(d[0] == "add_table" for d in compare_metadata(ctx, other))
    finally:
        engine.dispose()
    migrate(db_url)  # a second run is a no-op


def test_migrate_accepts_an_engine(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate(engine)
        with engine.connect() as conn:
            assert "events" in inspect(conn).get_table_names()
            if engine.dialect.name == "sqlite":
                # foreign keys are back on after the migration
                assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_sqlite_wal_and_foreign_keys_on(sqlite_db: str) -> None:
    store = Store.open(sqlite_db)
    assert Path(sqlite_db.removeprefix("sqlite:///")).is_file()
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar().lower() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000
    store.close()


# ---------------------------------------------------------------- conversations


def test_a_question_its_title_and_its_runs_are_stored_in_one_transaction(
    store: Store, tmp_path: Path
) -> None:
    conv = store.conversations.create_conversation(owner="alice")
    plain = "50% off_sale\x00 · a"  # LIKE's wildcards and a NUL, matched as themselves
    for title, owner in [
        (plain, "alice"), (plain + " (2)", "alice"), ("50X offXsale · a", "alice"),
        ("Other", "alice"), (plain + " (3)", "bob"),
    ]:  # fmt: skip
        store.conversations.create_conversation(title=title, owner=owner)
    assert store.conversations.titles_from("alice", plain, conv.id) == {plain, plain + " (2)"}
    assert store.conversations.titles_from("bob", plain) == {plain + " (3)"}

    store.recordings.add_audio(audio_ref(tmp_path), size_bytes=10)
    first, second = run_id(), run_id()
    message, runs = store.messages.add_question(
        conv.id, "Which sale?", ["A", "B"], AUDIO_ID,
        [(first, "p1", "react"), (second, "p2", "refine")], ["local_events"],
        group_id="g", worker_id="w", title=plain + " (3)",
    )  # fmt: skip
    assert store.conversations.get_conversation(conv.id).title == plain + " (3)"
    assert store.messages.list_messages(conv.id) == [message] and message.choices == ["A", "B"]
    stored = store.runs.runs_for_message(message.id)
    assert [(r.id, r.planner, r.strategy, r.status) for r in stored] == [
        (first, "p1", "react", "running"), (second, "p2", "refine", "running"),
    ]  # fmt: skip
    assert {r.id for r in runs} == {first, second} and stored[0].tools == ["local_events"]
    # a later question keeps the title
    store.messages.add_question(conv.id, "And then?", [], AUDIO_ID, [(run_id(), "p1", "react")], [],
                       title="Not this")  # fmt: skip
    assert store.conversations.get_conversation(conv.id).title == plain + " (3)"

    # A run that cannot be stored (its id is taken) leaves neither the message nor the title.
    other = store.conversations.create_conversation(owner="alice")
    with pytest.raises(IntegrityError):
        store.messages.add_question(
            other.id, "Q", [], AUDIO_ID, [(first, "p", "react")], [], title="T"
        )
    assert store.messages.list_messages(other.id) == []
    assert store.conversations.get_conversation(other.id).title == "New conversation"


def test_conversation_crud_and_cascade(store: Store, tmp_path: Path) -> None:
    a = store.conversations.create_conversation()
    b = store.conversations.create_conversation(title="Birds", owner="alice")
    assert a.title == "New conversation" and a.owner == "local"
    assert a.created_at.tzinfo is not None
    assert [c.id for c in store.conversations.list_conversations()] == [b.id, a.id]
    assert [c.id for c in store.conversations.list_conversations(owner="alice")] == [b.id]

    renamed = store.conversations.rename_conversation(a.id, "Renamed")
    assert renamed is not None and renamed.title == "Renamed"
    assert store.conversations.get_conversation(a.id).title == "Renamed"
    assert [c.id for c in store.conversations.list_conversations()] == [
        a.id,
        b.id,
    ]  # newest updated first
    assert store.conversations.rename_conversation("nope", "x") is None

    store.recordings.add_audio(audio_ref(tmp_path), size_bytes=10)
    msg = store.messages.add_message(a.id, "user", "What is this?", audio_id=AUDIO_ID)
    rid = run_id()
    store.runs.create_run(rid, msg.id, "offline", "react", ["local_events"])
    for ev in sample_events(rid):
        store.runs.append_event(ev)
    store.messages.add_message(a.id, "assistant", "A bird.")
    cache = SqlToolCache(store.tool_cache)
    cache.put("k", "local_events", AUDIO_ID, ToolResult(output="bird"))

    assert store.conversations.delete_conversation(a.id) is True
    assert store.conversations.delete_conversation(a.id) is False
    assert store.conversations.get_conversation(a.id) is None
    assert store.messages.list_messages(a.id) == []
    assert store.runs.get_run(rid) is None
    assert store.runs.run_events(rid) == []
    with store.engine.connect() as conn:
        assert conn.execute(select(EventRow.id)).all() == []
        assert conn.execute(select(Run.id)).all() == []
        assert conn.execute(select(Message.id)).all() == []
    # shared data outlives the conversation
    assert store.recordings.get_audio(AUDIO_ID) is not None
    assert cache.get("k") is not None
    assert [c.id for c in store.conversations.list_conversations()] == [b.id]


def test_messages_positions_and_auto_title(store: Store, tmp_path: Path) -> None:
    conv, first = new_question(store, tmp_path)
    assert first.position == 1 and first.choices == ["dog", "bird", "cat"]
    assert store.conversations.get_conversation(conv.id).title == "Which animal can be heard?"
    answer = store.messages.add_message(conv.id, "assistant", "A bird.")
    second = store.messages.add_message(conv.id, "user", "And how many birds are there?")
    assert (answer.position, second.position) == (2, 3)
    assert answer.choices == [] and answer.audio_id is None
    assert store.conversations.get_conversation(conv.id).title == "Which animal can be heard?"
    assert [m.id for m in store.messages.list_messages(conv.id)] == [first.id, answer.id, second.id]

    long_q = "Please describe   in detail\nevery sound you can hear in this recording, " * 3
    other = store.conversations.create_conversation()
    store.messages.add_message(other.id, "user", long_q)
    title = store.conversations.get_conversation(other.id).title
    assert title == make_title(long_q)
    assert 20 < len(title) <= 61 and "\n" not in title and title.endswith("…")

    named = store.conversations.create_conversation(title="My title")
    store.messages.add_message(named.id, "user", "Something else?")
    assert store.conversations.get_conversation(named.id).title == "My title"

    with pytest.raises(ValueError):
        store.messages.add_message(conv.id, "system", "nope")
    with pytest.raises(LookupError):
        store.messages.add_message("missing", "user", "nope")


def test_audio_is_idempotent(store: Store, tmp_path: Path) -> None:
    ref = audio_ref(tmp_path)
    store.recordings.add_audio(ref, size_bytes=201_234)
    store.recordings.add_audio(ref, size_bytes=999)
    info = store.recordings.get_audio(ref.id)
    assert info is not None
    assert (info.name, info.format, info.duration_s) == ("birds.mp3", "mp3", 12.5)
    assert (info.sample_rate, info.channels, info.size_bytes) == (44_100, 2, 201_234)
    assert info.stored_path == str(ref.path) and info.original_path == str(ref.original_path)
    assert store.recordings.get_audio("0" * 64) is None


# ---------------------------------------------------------------- runs and events


def test_events_round_trip_and_run_totals(store: Store, tmp_path: Path) -> None:
    _, msg = new_question(store, tmp_path)
    rid = run_id()
    created = store.runs.create_run(rid, msg.id, "offline", "react", ["local_events", "local_asr"])
    assert created.status == "running" and created.tools == ["local_events", "local_asr"]

    events = sample_events(rid)
    for ev in events[:-1]:
        store.runs.append_event(ev)
    mid = store.runs.get_run(rid)
    assert mid.status == "running"
    assert (mid.answer_text, mid.answer_choice) == ("A bird can be heard singing.", "bird")
    assert mid.finished_at is None

    store.runs.append_event(events[-1])
    back = store.runs.run_events(rid)
    assert back == events
    assert [type(e) for e in back] == [type(e) for e in events]

    run = store.runs.get_run(rid)
    assert run.status == "ok"
    assert (run.calls, run.input_tokens, run.output_tokens) == (1, 220, 50)
    assert run.cost == pytest.approx(0.0001) and run.wall_s == pytest.approx(1.75)
    assert run.finished_at == events[-1].at
    assert run.error is None
    assert store.runs.runs_for_message(msg.id) == [run]

    with pytest.raises(ValueError):
        store.runs.append_event(events[1])  # seq 2 again
    with pytest.raises(LookupError):
        store.runs.append_event(PlannerDelta(run_id="unknown", seq=1, turn=1, text="x"))


def test_forced_and_failed_runs_and_groups(store: Store, tmp_path: Path) -> None:
    _, msg = new_question(store, tmp_path)
    group = uuid.uuid4().hex
    forced, failed = run_id(), run_id()
    store.runs.create_run(forced, msg.id, "offline", "react", ["local_events"], group_id=group)
    store.runs.create_run(failed, msg.id, "openai:gpt", "caption_first", [], group_id=group)

    store.runs.append_event(Answer(run_id=forced, seq=1, text="bird", choice="bird", forced=True))
    store.runs.append_event(
        RunFinished(
            run_id=forced,
            seq=2,
            calls=6,
            input_tokens=1,
            output_tokens=2,
            cost=0.5,
            wall_s=3.0,
            status="forced",
        )
    )
    store.runs.append_event(
        RunFailed(run_id=failed, seq=1, kind="planner", message="The API key was rejected.")
    )
    runs = {r.id: r for r in store.runs.runs_for_message(msg.id)}
    assert runs[forced].status == "forced" and runs[forced].group_id == group
    assert runs[failed].status == "failed"
    assert runs[failed].error == "The API key was rejected."
    assert runs[failed].error_kind == "planner"
    assert runs[failed].finished_at is not None

    stopped = run_id()
    store.runs.create_run(stopped, msg.id, "offline", "react", [])
    store.runs.append_event(RunFailed(run_id=stopped, seq=1, kind="cancelled", message="Stopped."))
    assert store.runs.get_run(stopped).status == "cancelled"


def test_running_run_is_marked_interrupted(db_url: str, tmp_path: Path) -> None:
    store = Store.open(db_url)
    _, msg = new_question(store, tmp_path)
    done, cut = run_id(), run_id()
    store.runs.create_run(done, msg.id, "offline", "react", [])
    store.runs.create_run(cut, msg.id, "offline", "react", [])
    for ev in sample_events(done):
        store.runs.append_event(ev)
    kept = sample_events(cut)[:5]  # the server dies after the tool call
    for ev in kept:
        store.runs.append_event(ev)
    store.close()

    restarted = Store.open(db_url)  # as at start-up: a fresh engine on the same file
    try:
        assert restarted.runs.mark_interrupted_runs() == [cut]
        run = restarted.runs.get_run(cut)
        assert run.status == "interrupted" and run.error == INTERRUPTED_ERROR
        assert run.finished_at is not None
        events = restarted.runs.run_events(cut)
        assert events[:5] == kept and len(events) == 6
        assert [e.type for e in events][-2:] == ["tool_call", "run_failed"]
        assert events[-1].seq == 6
        assert restarted.runs.get_run(done).status == "ok"
        assert restarted.runs.mark_interrupted_runs() == []
    finally:
        restarted.close()


# ---------------------------------------------------------------- export


def test_export_round_trips_through_json(store: Store, tmp_path: Path) -> None:
    conv, msg = new_question(store, tmp_path)
    rid = run_id()
    store.runs.create_run(rid, msg.id, "offline", "react", ["local_events"])
    events = sample_events(rid)
    for ev in events:
        store.runs.append_event(ev)
    store.messages.add_message(conv.id, "assistant", "A bird can be heard singing.")

    export = store.export.conversation_export(conv.id)
    loaded = json.loads(json.dumps(export))
    assert loaded == export
    assert loaded["format"] == EXPORT_FORMAT == "audio-agent-conversation/1"
    assert loaded["conversation"]["id"] == conv.id
    assert loaded["conversation"]["title"] == "Which animal can be heard?"
    assert [m["role"] for m in loaded["messages"]] == ["user", "assistant"]
    user, assistant = loaded["messages"]
    assert user["choices"] == ["dog", "bird", "cat"] and user["audio_id"] == AUDIO_ID
    assert assistant["text"] == "A bird can be heard singing." and assistant["runs"] == []
    (run,) = user["runs"]
    assert run["id"] == rid and run["status"] == "ok" and run["answer_choice"] == "bird"
    assert run["events"] == [e.model_dump(mode="json") for e in events]
    (audio,) = loaded["audio"]
    assert audio["id"] == AUDIO_ID and audio["duration_s"] == 12.5
    assert "stored_path" not in audio and "original_path" not in audio

    with pytest.raises(LookupError):
        store.export.conversation_export("missing")


# ---------------------------------------------------------------- tool cache


def test_tool_cache_get_put_hits_and_errors(store: Store) -> None:
    cache = SqlToolCache(store.tool_cache)
    key = cache_key(AUDIO_ID, "local_events", {"top_k": 5}, "yamnet")
    assert cache.get(key) is None
    result = ToolResult(
        output="Bird (0.91)",
        data={"events": [{"label": "Bird", "score": 0.91}]},
        usage=Usage(audio_seconds=12.5),
        cost=0.002,
        model="yamnet",
    )
    cache.put(key, "local_events", AUDIO_ID, result)
    assert store.tool_cache.cache_hits(key) == 0
    assert cache.get(key) == result
    assert cache.get(key) == result
    assert store.tool_cache.cache_hits(key) == 2
    cache.put(key, "local_events", AUDIO_ID, result)  # same key again: no error
    assert cache.get(key) == result

    bad_key = cache_key(AUDIO_ID, "gemini_audio", {}, "gemini")
    cache.put(bad_key, "gemini_audio", AUDIO_ID, ToolResult(output="", error="429 quota"))
    assert cache.get(bad_key) is None
    assert store.tool_cache.cache_hits(bad_key) is None

    assert store.tool_cache.clear_tool_cache(audio_id=AUDIO_ID) == 1
    assert cache.get(key) is None


# ---------------------------------------------------------------- threads


def test_threads_append_events_to_different_runs(store: Store, tmp_path: Path) -> None:
    _, msg = new_question(store, tmp_path)
    run_ids = [run_id() for _ in range(4)]
    for rid in run_ids:
        store.runs.create_run(rid, msg.id, "offline", "react", ["local_events"])
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(run_ids))

    def work(rid: str) -> None:
        try:
            barrier.wait()
            seq = 0
            for i in range(25):
                seq += 1
                store.runs.append_event(PlannerDelta(run_id=rid, seq=seq, turn=1, text=f"{i} "))
            for ev in sample_events(rid)[1:]:
                seq += 1
                store.runs.append_event(ev.model_copy(update={"seq": seq}))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(rid,)) for rid in run_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    for rid in run_ids:
        events = store.runs.run_events(rid)
        assert [e.seq for e in events] == list(range(1, 34))
        assert store.runs.get_run(rid).status == "ok"


def test_threads_add_messages_to_one_conversation(store: Store) -> None:
    conv = store.conversations.create_conversation()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                store.messages.add_message(conv.id, "user", f"question {n}-{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert [m.position for m in store.messages.list_messages(conv.id)] == list(range(1, 41))


def test_store_works_with_a_plain_sessionmaker(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        migrate(engine)
        store = Store(session_factory(engine))
        conv = store.conversations.create_conversation("x")
        assert store.conversations.get_conversation(conv.id) == conv
    finally:
        engine.dispose()


# ---------------------------------------------------------------- awkward strings

# NUL (PostgreSQL text refuses it), a lone surrogate (no driver can encode it), the escape
# mark itself, and ordinary non-ASCII text, which must be stored verbatim.
AWKWARD = "a\x00b \ud800 \U0010ffff000000 \U0010ffff é 😀 \x00"


def test_escape_text_round_trips_and_leaves_plain_text_alone() -> None:
    from storage.types import escape_text, unescape_text

    for value in (AWKWARD, "", "plain", "\x00", "\U0010ffff", "\U0010ffff00000", "ß" * 10):
        assert unescape_text(escape_text(value)) == value
    assert escape_text("Which animal? é 😀") == "Which animal? é 😀"
    assert "\x00" not in escape_text(AWKWARD)
    assert escape_text(AWKWARD).encode("utf-8")  # encodable: no lone surrogate left


def test_nul_bytes_and_surrogates_round_trip(store: Store, tmp_path: Path) -> None:
    ref = audio_ref(tmp_path)
    store.recordings.add_audio(
        AudioRef(**{**ref.__dict__, "name": f"bird{AWKWARD}.mp3"}), size_bytes=10
    )
    conv = store.conversations.create_conversation(title=AWKWARD)
    msg = store.messages.add_message(
        conv.id, "user", AWKWARD, choices=[AWKWARD, "b"], audio_id=AUDIO_ID
    )
    assert store.conversations.get_conversation(conv.id).title == AWKWARD
    assert store.messages.list_messages(conv.id)[0].text == AWKWARD
    assert store.messages.get_message(msg.id).choices == [AWKWARD, "b"]
    assert store.recordings.get_audio(AUDIO_ID).name == f"bird{AWKWARD}.mp3"
    assert store.conversations.rename_conversation(conv.id, "x" + AWKWARD).title == "x" + AWKWARD

    rid = run_id()
    store.runs.create_run(rid, msg.id, "offline", "react", ["local_asr"])
    events: list[Event] = [
        RunStarted(
            run_id=rid,
            seq=1,
            question=AWKWARD,
            choices=[AWKWARD, "b"],
            audio_ids=[AUDIO_ID],
            planner="offline",
            tools=["local_asr"],
            strategy="react",
        ),
        ToolResultEvent(
            run_id=rid,
            seq=2,
            call_id="c1",
            tool="local_asr",
            output=AWKWARD,
            data={"key\x00": [AWKWARD]},
        ),
        Answer(run_id=rid, seq=3, text=AWKWARD, choice=AWKWARD),
        RunFailed(run_id=rid, seq=4, kind="planner", message=AWKWARD),
    ]
    for event in events:
        store.runs.append_event(event)
    assert store.runs.run_events(rid) == events
    run = store.runs.get_run(rid)
    assert (run.answer_text, run.answer_choice, run.error) == (AWKWARD, AWKWARD, AWKWARD)

    export = store.export.conversation_export(conv.id)
    assert export["messages"][0]["text"] == AWKWARD
    assert export["messages"][0]["runs"][0]["events"][1]["output"] == AWKWARD
    json.dumps(export)

    cache = SqlToolCache(store.tool_cache)
    result = ToolResult(output=AWKWARD, data={"text": AWKWARD})
    cache.put("k" * 64, "local_asr", AUDIO_ID, result)
    assert cache.get("k" * 64) == result


def test_very_long_strings_round_trip(store: Store, tmp_path: Path) -> None:
    long_text = ("Which of these sounds comes first? " * 60_000)[:2_000_000]  # 2 MB
    conv, msg = new_question(store, tmp_path, text=long_text)
    assert store.messages.get_message(msg.id).text == long_text
    assert len(store.conversations.get_conversation(conv.id).title) <= 61
    long_title = "t" * 100_000
    assert store.conversations.rename_conversation(conv.id, long_title).title == long_title
    rid = run_id()
    store.runs.create_run(rid, msg.id, "offline", "react", [])
    output = "word " * 400_000  # a 2 MB tool output
    event = ToolResultEvent(run_id=rid, seq=1, call_id="c", tool="local_asr", output=output)
    store.runs.append_event(event)
    store.runs.append_event(Answer(run_id=rid, seq=2, text=long_text, choice=None))
    assert store.runs.run_events(rid)[0] == event
    assert store.runs.get_run(rid).answer_text == long_text


def test_postgresql_session_time_zone_does_not_change_times(pg_url: str, tmp_path: Path) -> None:
    # A server (or role) whose time zone is not UTC: times still come back in UTC, equal to
    # what was stored, and the newest-first order still holds.
    url = pg_url.replace("options=-csearch_path", "options=-ctimezone%3DAsia/Kolkata+-csearch_path")
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("show timezone").scalar() == "Asia/Kolkata"
        first = store.conversations.create_conversation("first")
        second = store.conversations.create_conversation("second")
        again = store.conversations.get_conversation(first.id)
        assert again.created_at == first.created_at and again.created_at.utcoffset().seconds == 0
        assert [c.id for c in store.conversations.list_conversations()] == [second.id, first.id]
        _, msg = new_question(store, tmp_path)
        rid = run_id()
        store.runs.create_run(rid, msg.id, "offline", "react", [])
        events = sample_events(rid)
        for event in events:
            store.runs.append_event(event)
        assert store.runs.run_events(rid) == events
        assert store.runs.get_run(rid).finished_at == events[-1].at
    finally:
        store.close()
