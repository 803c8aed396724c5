"""The run manager (backend/runs/manager.py) on a real SQLite file with scripted planners and tools:
runs outlive their followers, stop vs shutdown, the queue and its ``queued`` events, the
per-owner limits, the daily spend, leases of several workers, ``degraded`` runs."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import update

from agent.audio import AudioStore
from agent.remote import Prices
from agent.run import RunRequest
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from backend.runs.manager import RunLimits, RunManager, RunRefused
from frontend import answer_text, render
from storage import Store
from storage.models import Run, utc_now
from tests.waiting import wait_for

OPEN = RunLimits(max_running=8, max_queued=8, owner_runs_per_minute=0, owner_max_running=0)


class World:
    def __init__(self, tmp_path: Path, tone_wav: Path) -> None:
        self.url = f"sqlite:///{tmp_path / 'runs.sqlite3'}"
        self.store = Store.open(self.url)
        self.audio = AudioStore(tmp_path / "audio")
        self.ref = self.audio.add_file(tone_wav)
        self.store.recordings.add_audio(self.ref, size_bytes=tone_wav.stat().st_size)
        self.conv = self.store.conversations.create_conversation("t")
        self.managers: list[RunManager] = []

    def manager(self, limits: RunLimits = OPEN, **kwargs) -> RunManager:
        manager = RunManager(self.store, audio=self.audio, limits=limits, **kwargs)
        self.managers.append(manager)
        return manager

    def request(self, manager: RunManager, planner=None, tools=None, **kwargs) -> RunRequest:
        tools = tools if tools is not None else [ScriptedTool("slow", "heard a dog", delay_s=0.3)]
        planner = planner or ScriptedPlanner(
            [
                ScriptedTurn("Listening.", calls=[("slow", {})]),
                ScriptedTurn("A dog. <answer>Dog</answer>"),
            ]
        )
        req = RunRequest("What animal?", [self.ref], planner, tools, choices=["Cat", "Dog"],
                         **kwargs)  # fmt: skip
        message = self.store.messages.add_message(
            self.conv.id, "user", "What animal?", audio_id=self.ref.id
        )
        self.store.runs.create_run(
            req.run_id, message.id, planner.name, "react", [t.name for t in tools],
            worker_id=manager.worker_id,
        )  # fmt: skip
        return req

    def close(self) -> None:
        for manager in self.managers:
            manager.close()
        self.store.close()


@pytest.fixture
def world(tmp_path: Path, tone_wav: Path):
    w = World(tmp_path, tone_wav)
    yield w
    w.close()


def status(world: World, run_id: str) -> str:
    info = world.store.runs.get_run(run_id)
    assert info is not None
    return info.status


async def test_run_outlives_its_follower_and_is_picked_up_after_seq(world):
    manager = world.manager()
    req = world.request(manager)
    (run_id,) = manager.start([req], owner="a")
    seen = []
    async for event in manager.follow([run_id]):
        seen.append(event)
        if event.type == "tool_call":
            break  # the client goes away mid-run
    assert status(world, run_id) == "running"
    rest = [e async for e in manager.follow([run_id], after=seen[-1].seq)]
    assert rest[-1].type == "run_finished" and rest[-1].status == "ok"
    events = seen + rest
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert world.store.runs.run_events(run_id) == events  # everything seen was stored
    assert status(world, run_id) == "ok"
    # followers hear the end from the last write, before the manager lets the run go
    await wait_for(lambda: not manager.is_live(run_id))


async def test_stop_is_cancelled_and_shutdown_is_interrupted(world):
    manager = world.manager()
    stopped = world.request(manager)
    cut = world.request(manager)
    manager.start([stopped], owner="a")
    manager.start([cut], owner="a")
    await wait_for(
        lambda: any(e.type == "tool_call" for e in world.store.runs.run_events(cut.run_id))
    )
    assert manager.stop(stopped.run_id)
    await wait_for(lambda: status(world, stopped.run_id) != "running")
    assert status(world, stopped.run_id) == "cancelled"
    await wait_for(lambda: not manager.is_live(stopped.run_id))
    assert manager.close() == [cut.run_id]
    info = world.store.runs.get_run(cut.run_id)
    assert info.status == "interrupted" and info.error_kind == "interrupted"
    events = world.store.runs.run_events(cut.run_id)
    assert [e.type for e in events][:2] == ["run_started", "planner_delta"]
    assert events[-1].type == "run_failed" and events[-1].kind == "interrupted"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert not manager.stop(cut.run_id)  # nothing live any more


async def test_a_full_server_queues_runs_with_queued_events(world):
    manager = world.manager(RunLimits(max_running=1, max_queued=2, owner_runs_per_minute=0,
                                      owner_max_running=0))  # fmt: skip
    requests = [world.request(manager) for _ in range(3)]
    tickets = [manager.admit("a") for _ in range(3)]
    ids = [
        manager.start([r], owner="a", ticket=t)[0] for r, t in zip(requests, tickets, strict=True)
    ]
    with pytest.raises(RunRefused) as refused:  # a fourth would be the third waiting
        manager.admit("a")
    assert refused.value.retry_after_s >= 1 and "busy" in str(refused.value)
    events = [e async for e in manager.follow(ids)]
    by_run = {i: [e for e in events if e.run_id == i] for i in ids}
    for run_id, run_events in by_run.items():
        assert [e.seq for e in run_events] == list(range(1, len(run_events) + 1))
        assert run_events[-1].type == "run_finished"
        assert world.store.runs.run_events(run_id) == run_events
    assert not [e for e in by_run[ids[0]] if e.type == "queued"]
    second = [e for e in by_run[ids[1]] if e.type == "queued"]
    third = [e for e in by_run[ids[2]] if e.type == "queued"]
    assert [(q.position, q.ahead) for q in second] == [(1, 0)]
    assert [(q.position, q.ahead) for q in third] == [(2, 1), (1, 0)]
    assert by_run[ids[2]][0].type == "queued" and by_run[ids[2]][2].type == "run_started"
    # the chat shows the waiting state
    shown = render.render_run(by_run[ids[2]][:1])
    assert shown[-1]["metadata"]["title"] == "Queued: 1 ahead"
    # a stored queue position is folded like any other event
    assert status(world, ids[2]) == "ok"


async def test_stopping_a_queued_run(world):
    manager = world.manager(RunLimits(max_running=1, max_queued=4, owner_runs_per_minute=0,
                                      owner_max_running=0))  # fmt: skip
    first, waiting = world.request(manager), world.request(manager)
    manager.start([first], owner="a")
    manager.start([waiting], owner="a")
    await wait_for(
        lambda: any(e.type == "queued" for e in world.store.runs.run_events(waiting.run_id))
    )
    manager.stop(waiting.run_id)
    await wait_for(lambda: status(world, waiting.run_id) == "cancelled")
    assert [e.type for e in world.store.runs.run_events(waiting.run_id)] == ["queued", "run_failed"]
    await wait_for(lambda: status(world, first.run_id) == "ok")


async def test_owner_limits_refuse_with_retry_after(world):
    manager = world.manager(RunLimits(max_running=8, max_queued=8, owner_runs_per_minute=2,
                                      owner_max_running=0))  # fmt: skip
    for _ in range(2):  # still running when `busy` counts them below, however loaded the machine
        long = [ScriptedTool("slow", "heard a dog", delay_s=30)]
        manager.start([world.request(manager, tools=long)], owner="local")
    with pytest.raises(RunRefused) as refused:
        manager.admit("local")
    assert "2 runs per minute" in str(refused.value) and 1 <= refused.value.retry_after_s <= 60
    other = world.store.conversations.create_conversation("b's", owner="b")
    assert other.owner == "b"
    manager.release(manager.admit("b"))  # another owner is not affected

    busy = world.manager(RunLimits(max_running=8, max_queued=8, owner_runs_per_minute=0,
                                   owner_max_running=3))  # fmt: skip
    ticket = busy.admit("local", 1)  # two running plus one reserved
    with pytest.raises(RunRefused) as refused:
        busy.admit("local", 1)
    assert "at most 3 at once" in str(refused.value)
    busy.release(ticket)
    busy.release(busy.admit("local", 1))


async def test_daily_spend_refuses_paid_calls_not_free_ones(world):
    manager = world.manager(RunLimits(max_running=8, max_queued=8, owner_runs_per_minute=0,
                                      owner_max_running=0, owner_daily_usd=0.4))  # fmt: skip
    paid = SimpleNamespace(prices=Prices(per_request=0.01))
    planner = ScriptedPlanner(
        [
            ScriptedTurn("Listening.", calls=[("slow", {})], cost=0.5),
            ScriptedTurn("A dog. <answer>Dog</answer>", cost=0.5),
        ]
    )
    planner.config = paid  # type: ignore[attr-defined]
    req = world.request(manager, planner=planner)
    (run_id,) = manager.start([req], owner="local")
    events = [e async for e in manager.follow([run_id])]
    assert events[-1].type == "run_failed" and events[-1].kind == "spend_limit"
    assert "$0.40" in events[-1].message and "$0.50 spent" in events[-1].message
    info = world.store.runs.get_run(run_id)
    assert info.status == "failed" and info.cost == pytest.approx(0.5)
    with pytest.raises(RunRefused) as refused:
        manager.admit("local", paid=True)
    assert "daily limit" in str(refused.value) and refused.value.retry_after_s > 0
    manager.release(manager.admit("local", paid=False))  # the offline stack costs nothing

    # a paid tool is refused (the run goes on with the offline ones)
    tool = ScriptedTool("remote_tool", "paid result", cost=0.1)
    tool.config = paid  # type: ignore[attr-defined]
    free_planner = ScriptedPlanner(
        [ScriptedTurn("Asking.", calls=[("remote_tool", {})]), ScriptedTurn("<answer>Dog</answer>")]
    )
    req = world.request(manager, planner=free_planner, tools=[tool])
    (run_id,) = manager.start([req], owner="local")
    events = [e async for e in manager.follow([run_id])]
    (result,) = [e for e in events if e.type == "tool_result"]
    assert "not run" in result.error and "daily limit" in result.error and not tool.calls
    assert events[-1].type == "run_finished" and events[-1].status == "ok"


async def test_a_failed_or_timed_out_tool_makes_the_run_degraded(world):
    manager = world.manager()
    broken = ScriptedTool("broken", raises=RuntimeError("model crashed"))
    slow = ScriptedTool("sleepy", delay_s=5)
    planner = ScriptedPlanner(
        [
            ScriptedTurn("Both.", calls=[("broken", {}), ("sleepy", {})]),
            ScriptedTurn("Unsure. <answer>Dog</answer>"),
        ]
    )
    req = world.request(manager, planner=planner, tools=[broken, slow], tool_timeout_s=0.2)
    (run_id,) = manager.start([req], owner="a")
    events = [e async for e in manager.follow([run_id])]
    finished = events[-1]
    assert finished.type == "run_finished" and finished.status == "degraded"
    assert sorted(finished.degraded_tools) == ["broken", "sleepy"]
    assert status(world, run_id) == "degraded"
    note = answer_text.footnote(finished)
    assert "degraded" in note and "broken" in note and "sleepy" in note


async def test_leases_two_workers_and_a_dead_one(world):
    alive = world.manager(heartbeat_s=0.1, lease_s=0.5)
    req = world.request(alive)
    alive.start([req], owner="a")
    # a run of a process that died: its heartbeat stopped long ago
    dead = world.request(alive)
    with world.store.engine.begin() as conn:
        conn.execute(
            update(Run)
            .where(Run.id == dead.run_id)
            .values(worker_id="gone:1:x", heartbeat_at=utc_now() - timedelta(seconds=60))
        )
    second = world.manager(heartbeat_s=0.1, lease_s=0.5)
    # the dead run is closed by the new worker, or already by the live one's own sweep
    assert second.recover() in ([dead.run_id], [])  # never the live worker's run
    assert status(world, dead.run_id) == "interrupted"
    await asyncio.sleep(1.0)  # several leases: heartbeats keep the live run's lease fresh
    assert status(world, req.run_id) in ("running", "ok")
    # the other worker follows it by polling the store
    events = [e async for e in second.follow([req.run_id])]
    assert events[-1].type == "run_finished" and status(world, req.run_id) == "ok"


async def test_a_worker_whose_lease_expired_loses_its_run(world):
    manager = world.manager(heartbeat_s=0.1, lease_s=0.5)
    req = world.request(manager)
    manager.start([req], owner="a")
    await wait_for(
        lambda: any(e.type == "tool_call" for e in world.store.runs.run_events(req.run_id))
    )
    # another process decided this worker was dead (e.g. it stalled past its lease)
    with world.store.engine.begin() as conn:
        conn.execute(
            update(Run).where(Run.id == req.run_id).values(heartbeat_at=utc_now() - timedelta(1))
        )
    assert world.store.runs.mark_interrupted_runs(None, 0.5, unowned=False) == [req.run_id]
    await wait_for(lambda: not manager.is_live(req.run_id))
    events = world.store.runs.run_events(req.run_id)
    assert events[-1].kind == "interrupted"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # nothing written after


async def test_a_follower_gets_the_end_of_a_run_closed_between_its_two_reads(world, monkeypatch):
    """Following another process's run polls its status and its events: a run closed while
    it is polled (status and run_failed are stored in one transaction) still ends the
    stream with its run_failed, not with the last event read before."""
    follower = world.manager(heartbeat_s=0.1, lease_s=0.5)
    req = world.request(follower)  # created, never started here: "another process" runs it
    with world.store.engine.begin() as conn:
        conn.execute(update(Run).where(Run.id == req.run_id).values(worker_id="other:1:x"))
    real_get_run = world.store.runs.get_run

    def closed_just_before(run_id):  # the other process's sweep wins the race
        world.store.runs.mark_interrupted_runs()
        return real_get_run(run_id)

    monkeypatch.setattr(world.store.runs, "get_run", closed_just_before)
    events = [e async for e in follower.follow([req.run_id])]
    assert [(e.type, getattr(e, "kind", None)) for e in events] == [("run_failed", "interrupted")]


async def test_text_deltas_gather_longer_and_any_other_event_cuts_the_wait_short(
    world, monkeypatch
):
    """A model streaming a token every 40 ms: the first of its text deltas is written within
    ``gather_s`` (a reply's first words show at once), the rest gather for ``delta_gather_s``
    (in one write instead of one write each, as a 10 ms gather would make them), and the
    tool call that follows them cuts the wait short: written at once, not after 5 s."""
    manager = world.manager(gather_s=0.01, delta_gather_s=5.0)
    writes: list[tuple[float, list[str]]] = []
    append = world.store.runs.append_events
    loop = asyncio.get_running_loop()

    def timed(events, **kwargs):
        writes.append((loop.time(), [e.type for e in events]))
        return append(events, **kwargs)

    monkeypatch.setattr(world.store.runs, "append_events", timed)
    planner = ScriptedPlanner(
        [
            ScriptedTurn("one two three four five six", calls=[("slow", {})]),
            ScriptedTurn("A dog. <answer>Dog</answer>"),
        ],
        delay_s=0.04,
    )
    req = world.request(manager, planner=planner, tools=[ScriptedTool("slow", "a dog")])
    (run_id,) = manager.start([req], owner="a")
    events = [e async for e in manager.follow([run_id])]
    types = [t for _, t in writes]
    assert types[:3] == [
        ["run_started"],
        ["planner_delta"],
        ["planner_delta"] * 5 + ["thought", "tool_call"],
    ]
    assert writes[1][0] - writes[0][0] < 1.0  # the first words did not wait out the 5 s
    assert writes[2][0] - writes[0][0] < 2.5  # nor did the tool call
    assert types[-1][-1] == "run_finished" and writes[-1][0] - writes[0][0] < 4.0
    assert world.store.runs.run_events(run_id) == events


async def test_a_run_is_written_in_batches_that_gather_and_its_end_is_not_kept_waiting(
    world, monkeypatch
):
    """Group commit: events gather for ``gather_s`` before a write, but a run's last event
    is written at once, with the question's ``on_end`` in the same trip (given the run as
    that write left it), before any follower hears the end."""
    manager = world.manager(gather_s=1.0)
    batches: list[list[str]] = []
    append = world.store.runs.append_events

    def counted(events, **kwargs):
        batches.append([e.type for e in events])
        return append(events, **kwargs)

    monkeypatch.setattr(world.store.runs, "append_events", counted)
    req = world.request(manager, tools=[ScriptedTool("slow", "heard a dog")])  # instant
    reads: list[str] = []
    get_run = world.store.runs.get_run
    monkeypatch.setattr(
        world.store.runs, "get_run", lambda *a, **k: reads.append(a[0]) or get_run(*a, **k)
    )
    ended: list[list[str]] = []
    began = asyncio.get_running_loop().time()
    (run_id,) = manager.start(
        [req], owner="a", on_end=lambda infos: ended.append([i.status for i in infos])
    )
    events = [e async for e in manager.follow([run_id])]
    assert asyncio.get_running_loop().time() - began < 1.0  # the end did not wait to gather
    assert ended == [["ok"]]  # stored before the follower saw the end
    assert reads == []  # on_end had the run as its last write left it, without a read
    assert batches == [[e.type for e in events]]  # one write for the whole run
    assert world.store.runs.run_events(run_id) == events
