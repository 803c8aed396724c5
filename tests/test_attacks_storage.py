"""A full disk in the middle of a run (issue 30, attack 7): once in three the client was told
``run_finished: ok`` that was never stored, and after the disk was freed the run stayed
"running", Stop answered 409 "running in another server process" and resuming its event
stream hung.

The disk is SQLite's own "database or disk is full" (``max_page_count``, as in
``tests/test_attacks_server.py``), on a real server with real followers over HTTP. The one
attack that lost the race is made certain here: the disk fills just before the batch that
holds the run's end is written, and that batch is larger than a database page.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_app
from backend.host.settings import Settings
from tests.servers import serve
from tests.sse import read_sse, sse_frames
from tests.test_attacks_server import (
    ask_while_the_disk_fills,
    fill_the_disk,
    full_disk_app,
    page_limit,
    slow_question,
)

SSE = {"Accept": "text/event-stream"}


def long_ending_registry() -> Registry:
    """Two quick tool calls, then an answer whose reasoning fills more than a database page:
    storing the run's last batch needs new pages."""
    registry = Registry()
    registry.register(ScriptedTool("slow_tool", "a dog barks", delay_s=1.2), kind="tool")

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "tool")
        if done >= 2 or force:
            return ScriptedTurn("Heard-it-" + "x" * 6000 + " <answer>Dog</answer>")
        return ScriptedTurn(f"Listening ({done + 1}).", calls=[("slow_tool", {"n": done + 1})])

    registry.register(ScriptedPlanner([turn]), kind="planner")
    return registry


def free_the_disk(data_dir: Path, limit: dict[str, int]) -> None:
    """The operator makes room: the database may grow again and the filler is gone."""
    limit["pages"] = 0
    with closing(sqlite3.connect(data_dir / "audio_agent.sqlite3", timeout=30)) as db:
        db.execute("DROP TABLE IF EXISTS filler")
        db.commit()


def kinds(frames: list[dict[str, str]]) -> list[str]:
    return [f["event"] for f in frames]


def assert_ends_storage_full(frames: list[dict[str, str]]) -> None:
    assert "run_finished" not in kinds(frames), kinds(frames)
    assert frames and frames[-1]["event"] == "run_failed", kinds(frames)
    assert json.loads(frames[-1]["data"])["kind"] == "storage_full"


def ended_row(http: httpx.Client, run_id: str, within_s: float = 60) -> dict[str, Any]:
    """The run as stored, once it is no longer "running" (fails after ``within_s``)."""
    deadline = time.monotonic() + within_s
    while True:
        stored = http.get(f"/api/runs/{run_id}").json()
        if stored["run"]["status"] != "running" or time.monotonic() > deadline:
            return stored
        time.sleep(0.2)


def assert_closed_after_the_disk_is_freed(http: httpx.Client, run_id: str) -> None:
    """Once storage works again the run's row ends as the followers were told; Stop answers
    as for any ended run and resuming its stream ends at once."""
    stored = ended_row(http, run_id)
    assert stored["run"]["status"] == "failed", stored["run"]
    assert stored["run"]["error_kind"] == "storage_full"
    types = [e["type"] for e in stored["events"]]
    assert "run_finished" not in types and types[-1] == "run_failed", types
    stop = http.post(f"/api/runs/{run_id}/stop")
    assert stop.status_code == 200, stop.text
    assert stop.json()["status"] == "failed"
    with http.stream("GET", f"/api/runs/{run_id}/events", headers=SSE) as resp:
        assert_ends_storage_full(read_sse(resp))


def test_a_run_whose_end_cannot_be_stored_never_tells_anyone_it_finished(tmp_path, tone_wav):
    app = create_app(
        Settings(data_dir=tmp_path, warm_up=False), registry=long_ending_registry(), ui=False
    )
    engine = app.state.service.store.engine
    limit = page_limit(engine)
    # a batch gathers up to 0.8 s: the last turn's events are all in the run's last batch
    app.state.service.runs.writer.gather_s = 0.8
    filled = threading.Event()

    @event.listens_for(engine, "before_execute")
    def fill_before_the_end(conn, _clause, multiparams, params, _options):  # type: ignore[no-untyped-def]
        batches = [*multiparams, params]
        ends = any(isinstance(p, dict) and p.get("p_status") == "ok" for p in batches)
        if ends and not filled.is_set():  # the disk fills just before the run's end is stored
            filled.set()
            fill_the_disk(tmp_path, limit)
            conn.connection.dbapi_connection.execute(f"PRAGMA max_page_count = {limit['pages']}")

    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv, body = slow_question(http, tone_wav)
        other: list[dict[str, str]] = []

        def follow(run_id: str) -> None:  # a second follower: another tab, /v1, MCP alike
            path = f"/api/runs/{run_id}/events"
            with (
                httpx.Client(base_url=base, timeout=30, cookies=http.cookies) as client,
                client.stream("GET", path, headers=SSE) as resp,
            ):
                other.extend(sse_frames(resp))

        frames = []
        follower = None
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            for frame in sse_frames(resp):
                frames.append(frame)
                if follower is None:
                    run_id = json.loads(frame["data"])["run_id"]
                    follower = threading.Thread(target=follow, args=(run_id,), daemon=True)
                    follower.start()
        assert follower is not None
        follower.join(timeout=60)
        assert filled.is_set()
        assert_ends_storage_full(frames)
        assert_ends_storage_full(other)
        # nothing stored says it finished either
        stored = http.get(f"/api/runs/{run_id}").json()
        assert "run_finished" not in [e["type"] for e in stored["events"]]
        assert stored["run"]["status"] in ("running", "failed")

        free_the_disk(tmp_path, limit)
        assert_closed_after_the_disk_is_freed(http, run_id)


def test_a_run_cut_by_a_full_disk_is_closed_by_stop_once_storage_is_back(tmp_path, tone_wav):
    # no heartbeat within the test: only Stop can store the run's end (the first test has
    # the heartbeat store it)
    with (
        full_disk_app(tmp_path, heartbeat_s=600.0) as (base, limit),
        httpx.Client(base_url=base, timeout=30) as http,
    ):
        conv, body = slow_question(http, tone_wav)
        frames = ask_while_the_disk_fills(http, conv, body, tmp_path, limit)
        assert_ends_storage_full(frames)
        run_id = json.loads(frames[0]["data"])["run_id"]

        # While the disk is still full: resuming the stream ends as the run did (it hung),
        # and Stop says the disk is full (it said "running in another server process").
        with http.stream("GET", f"/api/runs/{run_id}/events?after=1", headers=SSE) as resp:
            assert_ends_storage_full(read_sse(resp))
        stop = http.post(f"/api/runs/{run_id}/stop")
        assert stop.status_code == 507, stop.text
        assert "disk is full" in stop.json()["detail"]

        free_the_disk(tmp_path, limit)
        stop = http.post(f"/api/runs/{run_id}/stop")
        assert stop.status_code == 200, stop.text
        assert stop.json() == {"run_id": run_id, "stopped": True, "status": "failed"}
        assert_closed_after_the_disk_is_freed(http, run_id)
