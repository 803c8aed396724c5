"""The tool cache in the database, written behind the runs (storage.cache_writes): a run
does not wait for a commit per tool call, results are visible to every run of the process at
once, a turn's calls are looked up in one read, and nothing is lost or left behind."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from sqlalchemy import event

from agent import events as ev
from agent.audio import AudioStore
from agent.run import RunRequest, run_question
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from agent.tools.base import ToolResult, cache_key
from storage import SqlToolCache, Store
from storage.cleanup import purge_conversation

AUDIO = "cd" * 32


@pytest.fixture
def store(any_db_url: str):
    s = Store.open(any_db_url)
    yield s
    s.close()


def _statements(engine, sink: list[str]):
    caller = threading.get_ident()

    def before(conn, cursor, statement, parameters, context, executemany):
        sink.append(f"{'loop' if threading.get_ident() == caller else 'other'}: {statement}")

    event.listen(engine, "before_cursor_execute", before)
    return lambda: event.remove(engine, "before_cursor_execute", before)


def _turns(*calls: list[tuple[str, dict]]) -> ScriptedPlanner:
    return ScriptedPlanner(
        [*(ScriptedTurn("t", calls=c) for c in calls), ScriptedTurn("<answer>x</answer>")]
    )


async def _run(audio_store: AudioStore, ref, planner, tools, cache) -> list[ev.Event]:
    req = RunRequest("q", [ref], planner, tools, budget=50)
    return [e async for e in run_question(req, store=audio_store, cache=cache)]


def test_put_is_visible_at_once_and_written_in_one_transaction(store: Store) -> None:
    cache = SqlToolCache(store.tool_cache, owner="alice")
    keys = [cache_key(AUDIO, "t", {"n": i}, None) for i in range(20)]
    for i, key in enumerate(keys):
        cache.put(key, "t", AUDIO, ToolResult(output=f"r{i}"))
    # visible before (or whether or not) the writer got to it
    assert cache.get(keys[3]).output == "r3"
    assert store.tool_cache.cache_writes.flush()
    # another owner's view of the same keys: nothing (keys are scoped)
    assert SqlToolCache(store.tool_cache, owner="bob").get_many(keys) == {}
    # after a fresh store (another process) they are in the database
    other = Store.open(store.engine.url)
    try:
        found = SqlToolCache(other.tool_cache, owner="alice").get_many(keys)
        assert {k: r.output for k, r in found.items()} == {k: f"r{i}" for i, k in enumerate(keys)}
    finally:
        other.close()


def test_the_writer_gathers_and_a_flush_does_not_wait_for_it() -> None:
    """Results handed over while the writer gathers go in one write; ``flush`` cuts the
    gathering short."""
    from storage.cache_writes import CacheWrites

    writes: list[int] = []
    done = threading.Event()

    def write(rows, hits):  # type: ignore[no-untyped-def]
        writes.append(len(rows))
        done.set()

    gathering = CacheWrites(write, gather_s=0.3)
    for i in range(3):  # a turn's three tools, moments apart
        gathering.put(f"k{i}", "t", AUDIO, ToolResult(output="r"))
    assert not done.wait(0.1)  # nothing written while it gathers
    assert done.wait(5) and writes == [3]
    patient = CacheWrites(write, gather_s=60.0)
    patient.put("k", "t", AUDIO, ToolResult(output="r"))
    assert patient.flush(timeout_s=5) and writes == [3, 1]  # not after a minute
    gathering.close()
    patient.close()


def test_hits_are_counted_behind_and_errors_never_stored(store: Store) -> None:
    cache = SqlToolCache(store.tool_cache)
    key = cache_key(AUDIO, "t", {}, None)
    cache.put(key, "t", AUDIO, ToolResult(output="ok"))
    for _ in range(3):
        assert cache.get(key).output == "ok"
    assert cache.get_many([key, "missing"]).keys() == {key}
    assert store.tool_cache.cache_hits(key) == 4  # flushes first
    bad = cache_key(AUDIO, "t", {"bad": 1}, None)
    cache.put(bad, "t", AUDIO, ToolResult(output="", error="timed out"))
    assert cache.get(bad) is None and store.tool_cache.cache_hits(bad) is None


def test_a_failed_write_is_logged_and_the_writer_goes_on(store: Store, caplog) -> None:
    cache = SqlToolCache(store.tool_cache)
    real = store.tool_cache.cache_writes._write
    calls = []

    def flaky(rows, hits):
        calls.append(len(rows))
        if len(calls) == 1:
            raise RuntimeError("disk full")
        real(rows, hits)

    store.tool_cache.cache_writes._write = flaky
    with caplog.at_level(logging.WARNING, logger="audio_agent.cache"):
        cache.put("a" * 64, "t", AUDIO, ToolResult(output="lost"))
        assert store.tool_cache.cache_writes.flush()
        cache.put("b" * 64, "t", AUDIO, ToolResult(output="kept"))
        assert store.tool_cache.cache_writes.flush()
    assert "disk full" in caplog.text
    other = Store.open(store.engine.url)  # another process: only what was written
    try:
        assert other.tool_cache.cache_get("a" * 64) is None  # dropped: computed again there
        assert other.tool_cache.cache_get("b" * 64).output == "kept"
    finally:
        other.close()
    assert store.tool_cache.cache_get("a" * 64).output == "lost"  # still in this process's memory


async def test_a_turn_reads_the_cache_once_and_never_writes_on_the_loop(
    store: Store, tmp_path: Path, tone_wav
) -> None:
    audio_store = AudioStore(tmp_path / "audio")
    ref = audio_store.add_file(tone_wav)
    tool = ScriptedTool("t")
    cache = SqlToolCache(store.tool_cache, owner="alice")
    calls = [("t", {"n": i}) for i in range(20)]
    seen: list[str] = []
    stop = _statements(store.engine, seen)
    try:
        events = await _run(audio_store, ref, _turns(calls), [tool], cache)
    finally:
        stop()
    assert events[-1].type == "run_finished" and len(tool.calls) == 20
    reads = [s for s in seen if "FROM tool_cache" in s]
    writes = [s for s in seen if "INSERT INTO tool_cache" in s]
    assert len(reads) == 1  # the turn's 20 keys in one read
    assert not [s for s in seen if s.startswith("loop:")]  # nothing on the event loop
    assert len(writes) <= 20  # written by the writer thread, in few transactions

    # the same 20 calls again, before anything was flushed: all from the cache, from memory
    seen.clear()
    stop = _statements(store.engine, seen)
    try:
        events = await _run(audio_store, ref, _turns(calls), [tool], cache)
    finally:
        stop()
    results = [e for e in events if e.type == "tool_result"]
    assert all(r.cached for r in results) and len(tool.calls) == 20
    assert not [s for s in seen if "FROM tool_cache" in s]  # no read at all


def test_clearing_forgets_what_memory_holds(store: Store) -> None:
    cache = SqlToolCache(store.tool_cache)
    cache.put("k" * 64, "t", AUDIO, ToolResult(output="x"))
    assert store.tool_cache.clear_tool_cache(audio_id=AUDIO) == 1
    assert cache.get("k" * 64) is None and cache.peek("k" * 64) is None


async def test_deleting_a_conversation_removes_cache_rows_still_being_written(
    store: Store, tmp_path: Path, tone_wav
) -> None:
    audio_store = AudioStore(tmp_path / "audio")
    ref = audio_store.add_file(tone_wav)
    store.recordings.add_audio(ref, size_bytes=tone_wav.stat().st_size)
    conv = store.conversations.create_conversation("c")
    store.messages.add_message(conv.id, "user", "q", audio_id=ref.id)
    gate = threading.Event()
    real = store.tool_cache.cache_writes._write

    def slow(rows, hits):
        gate.wait(5)
        real(rows, hits)

    store.tool_cache.cache_writes._write = slow
    cache = SqlToolCache(store.tool_cache)
    await _run(
        audio_store, ref, _turns([("t", {"n": 1}), ("t", {"n": 2})]), [ScriptedTool("t")], cache
    )
    threading.Timer(0.2, gate.set).start()
    purged = purge_conversation(store, conv.id)  # waits for the writer, then deletes
    assert purged is not None and purged.cache_entries == 2
    assert store.tool_cache.cache_get_many([cache_key(ref.id, "t", {"n": 1}, None)]) == {}
