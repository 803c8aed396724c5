"""Real server processes (``python app.py``) on one data directory: SIGKILL mid-run and a
restart keep every event the client received and mark the run ``interrupted``; two
processes on one SQLite database leave each other's live runs alone, and a run of a process
that died is found by its expired lease."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.events import parse_event
from tests.servers import ROOT, AppProcess
from tests.sse import sse_frames

ASK = {"question": "What animal?", "planner": "scripted", "tools": ["slow_tool"], "budget": 100}


class Server(AppProcess):
    """The app on its own data directory with the slow scripted registry."""

    def __init__(self, data_dir: Path, log: Path, **env: str) -> None:
        super().__init__(
            log,
            {
                "PYTHONPATH": str(ROOT),
                "AUDIO_AGENT_DATA_DIR": str(data_dir),
                "AUDIO_AGENT_TEST_REGISTRY": "tests.live_registry:slow_registry",
                **env,
            },
        )


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def new_question(base: str, tone_wav: Path) -> tuple[str, dict, dict[str, str]]:
    """A conversation and a question about a recording, and the visitor's cookie (every
    later client is that visitor: the processes share the data directory's secret)."""
    with httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()["id"]
        with open(tone_wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        cookies = dict(http.cookies)
    return conv, {**ASK, "audio_id": audio_id}, cookies


def test_sigkill_mid_run_keeps_every_received_event_and_marks_it_interrupted(
    tmp_path, tone_wav, servers
):
    env = {"AUDIO_AGENT_WORKER_ID": "box:one"}  # the same worker after the restart
    first = Server(tmp_path / "data", tmp_path / "server.log", **env)
    servers.append(first)
    conv, body, cookies = new_question(first.base, tone_wav)
    received = []
    with (
        httpx.Client(base_url=first.base, timeout=30, cookies=cookies) as http,
        http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp,
    ):
        run_id = resp.headers["X-Run-Id"]
        for frame in sse_frames(resp):
            received.append(parse_event(json.loads(frame["data"])))
            if sum(e.type == "tool_result" for e in received) == 3:
                first.kill()  # no shutdown: nothing more is written
                break
    assert received[-1].type == "tool_result"

    second = Server(tmp_path / "data", tmp_path / "server.log", **env)
    servers.append(second)
    with httpx.Client(base_url=second.base, timeout=30, cookies=cookies) as http:
        got = http.get(f"/api/runs/{run_id}").json()
    assert got["run"]["status"] == "interrupted"
    stored = [parse_event(e) for e in got["events"]]
    assert stored[: len(received)] == received  # every event the client had is stored
    assert stored[-1].type == "run_failed" and stored[-1].kind == "interrupted"
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))


def test_two_processes_on_one_database(tmp_path, tone_wav, servers):
    env = {
        "AUDIO_AGENT_HEARTBEAT_S": "0.3",
        "AUDIO_AGENT_LEASE_S": "1.5",
        "AUDIO_AGENT_TEST_CALLS": "100000",  # runs until stopped or killed
        # 100 calls (the budget): 100 s, for B to start (on a loaded machine) while it runs
        "AUDIO_AGENT_TEST_DELAY_S": "1.0",
    }
    a = Server(tmp_path / "data", tmp_path / "a.log", **env)
    servers.append(a)
    conv, body, cookies = new_question(a.base, tone_wav)
    with httpx.Client(base_url=a.base, timeout=60, cookies=cookies) as http:
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            run_id = resp.headers["X-Run-Id"]
            next(f for f in sse_frames(resp) if f["event"] == "tool_result")
        # a second process starts on the same database while A's run is live
        b = Server(tmp_path / "data", tmp_path / "b.log", **env)
        servers.append(b)
        with httpx.Client(base_url=b.base, timeout=60, cookies=cookies) as via_b:
            assert via_b.get(f"/api/runs/{run_id}").json()["run"]["status"] == "running"
            before = len(via_b.get(f"/api/runs/{run_id}/events").json())
            time.sleep(3)  # two leases: B's sweeps leave A's live run alone
            got = via_b.get(f"/api/runs/{run_id}").json()
            assert got["run"]["status"] == "running" and len(got["events"]) > before
            # B follows A's run from the store, live
            with via_b.stream(
                "GET",
                f"/api/runs/{run_id}/events",
                params={"after": len(got["events"])},
                headers={"Accept": "text/event-stream"},
            ) as followed:
                ids = []
                for frame in sse_frames(followed):
                    ids.append(int(frame["id"]))
                    if len(ids) == 5:
                        break
            assert ids == list(range(len(got["events"]) + 1, len(got["events"]) + 6))
            # B cannot stop a run of A; A can
            assert via_b.post(f"/api/runs/{run_id}/stop").status_code == 409
            assert http.post(f"/api/runs/{run_id}/stop").json()["stopped"] is True
            deadline = time.monotonic() + 120  # generous: a loaded machine
            while via_b.get(f"/api/runs/{run_id}").json()["run"]["status"] == "running":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert via_b.get(f"/api/runs/{run_id}").json()["run"]["status"] == "cancelled"

        # A dies mid-run: B finds the expired lease and closes the run; its follower ends
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            run_id = resp.headers["X-Run-Id"]
            received = []
            for frame in sse_frames(resp):
                received.append(parse_event(json.loads(frame["data"])))
                if frame["event"] == "tool_result":
                    a.kill()
                    break
    with httpx.stream(
        "GET",
        f"{b.base}/api/runs/{run_id}/events",
        headers={"Accept": "text/event-stream"},
        timeout=60,
        cookies=cookies,
    ) as followed:
        events = [parse_event(json.loads(f["data"])) for f in sse_frames(followed)]
    assert events[: len(received)] == received
    assert events[-1].type == "run_failed" and events[-1].kind == "interrupted"
    got = httpx.get(f"{b.base}/api/runs/{run_id}", cookies=cookies).json()["run"]
    assert got["status"] == "interrupted"
