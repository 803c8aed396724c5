"""The model executor (bounds, queue, timeouts that exclude queue time), joined in-flight
calls and prefetch on question arrival. Behaviour only; timings are in bench/perf.py."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from agent import inflight
from agent.audio import AudioStore
from agent.local_models import executor as ex
from agent.planners.base import FinalAnswer
from agent.run import RunRequest, run_question
from agent.testing import ScriptedPlanner, ScriptedTurn
from agent.tools.base import MemoryToolCache, ToolContext, ToolResult
from tests.waiting import wait_for

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def pool():
    """A fresh two-worker executor installed as the process-wide one."""
    executor = ex.ModelExecutor(workers=2, threads_per_call=1)
    previous = ex.set_executor(executor)
    yield executor
    ex.set_executor(previous)
    executor.shutdown()


def test_sizing_never_asks_for_more_threads_than_cores(monkeypatch):
    monkeypatch.delenv(ex.WORKERS_ENV, raising=False)
    monkeypatch.delenv(ex.THREADS_ENV, raising=False)
    for cores in (1, 2, 4, 8):
        size = ex.sizing(cores)
        assert size.workers >= 1 and size.threads_per_call >= 1
        assert size.workers * size.threads_per_call <= cores
    monkeypatch.setenv(ex.WORKERS_ENV, "1")
    assert ex.sizing(4) == ex.Sizing(workers=1, threads_per_call=4)
    monkeypatch.setenv(ex.WORKERS_ENV, "zero")
    with pytest.raises(ValueError, match="whole number"):
        ex.sizing(2)


def test_whisper_takes_twice_the_share_of_threads_up_to_the_cores(monkeypatch, pool):
    """Whisper's encoder is the one model allowed past the share (see whisper_asr.cpu_threads);
    never past the cores, and the variable overrides it."""
    from agent.local_models import whisper_asr

    monkeypatch.delenv(whisper_asr.THREADS_ENV, raising=False)
    monkeypatch.setattr(ex, "cpu_count", lambda: 2)
    assert whisper_asr.cpu_threads() == 2  # the pool: 2 workers x 1 thread
    monkeypatch.setattr(ex, "cpu_count", lambda: 1)
    assert whisper_asr.cpu_threads() == 1
    monkeypatch.setenv(whisper_asr.THREADS_ENV, "3")
    assert whisper_asr.cpu_threads() == 3
    monkeypatch.setenv(whisper_asr.THREADS_ENV, "none")
    with pytest.raises(ValueError, match="AUDIO_AGENT_WHISPER_THREADS"):
        whisper_asr.cpu_threads()


async def test_executor_runs_at_most_workers_jobs_and_queues_the_rest(pool):
    release = threading.Event()

    def job(i: int) -> int:
        release.wait(5)
        return i

    tasks = [asyncio.ensure_future(ex.run_model(job, i)) for i in range(5)]
    await wait_for(lambda: pool.running == 2, what="two jobs running")
    assert pool.queued == 3 == ex.queue_depth()
    release.set()
    assert await asyncio.gather(*tasks) == [0, 1, 2, 3, 4]
    assert pool.peak_running == 2
    assert pool.queued == 0 and pool.running == 0


async def test_a_cancelled_queued_job_never_runs(pool):
    release = threading.Event()
    ran: list[str] = []

    def block() -> None:
        release.wait(5)

    blockers = [asyncio.ensure_future(ex.run_model(block)) for _ in range(2)]
    queued = asyncio.ensure_future(ex.run_model(ran.append, "late"))
    await wait_for(lambda: pool.running == 2 and pool.queued == 1, what="one job queued")
    queued.cancel()
    await asyncio.gather(queued, return_exceptions=True)
    assert pool.queued == 0
    release.set()
    await asyncio.gather(*blockers)
    # Nothing is queued or running any more: whatever was going to run has run.
    assert pool.queued == 0 and pool.running == 0
    assert ran == [] and pool.calls == 2  # only the two blockers ever started


async def test_local_tools_run_on_the_model_executor_not_the_default_pool(pool, tone_wav):
    import soundfile as sf

    from agent.tools.local_signal import SignalTool

    names = await asyncio.gather(
        *(ex.run_model(lambda: threading.current_thread().name) for _ in range(3))
    )
    assert all(n.startswith("model") for n in names)
    samples, _ = sf.read(tone_wav, dtype="float32")
    before = pool.calls
    result = await SignalTool()(ToolContext(audio=None, samples=samples), {})  # type: ignore[arg-type]
    assert result.error is None and pool.calls == before + 1


class ModelTool:
    """A tool whose work is a blocking model call of ``seconds`` on the executor."""

    local = True
    model = "fake-model"
    description = "A blocking model call (tests)."
    parameters: dict = {"type": "object", "properties": {}}

    def __init__(self, name: str, seconds: float) -> None:
        self.name = self.label = name
        self.seconds = seconds
        self.invocations = 0

    def _work(self) -> str:
        self.invocations += 1
        time.sleep(self.seconds)
        return "done"

    async def __call__(self, ctx: ToolContext, arguments: dict) -> ToolResult:
        return ToolResult(output=await ex.run_model(self._work))


def _one_call_run(store, audio, tool, *, timeout: float, run_id: str | None = None):
    planner = ScriptedPlanner(
        [
            ScriptedTurn(calls=[(tool.name, {})]),
            ScriptedTurn(answer=FinalAnswer(text="yes")),
        ]
    )
    extra = {"run_id": run_id} if run_id else {}
    return RunRequest(
        "q?", [audio], planner, [tool], tool_timeout_s=timeout, **extra
    ), MemoryToolCache()


async def _results(request, store, cache):
    events = [e async for e in run_question(request, store=store, cache=cache)]
    return [e for e in events if e.type == "tool_result"]


async def test_timeout_counts_execution_not_the_wait_in_the_queue(tmp_path, tone_wav, pool):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    release = threading.Event()
    # Both workers are busy for longer than the tool's timeout...
    blockers = [asyncio.ensure_future(ex.run_model(release.wait, 5)) for _ in range(2)]
    asyncio.get_running_loop().call_later(2.0, release.set)
    tool = ModelTool("short", 0.05)  # a timeout with room for a loaded machine's scheduling
    request, cache = _one_call_run(store, audio, tool, timeout=1.0)
    results = await _results(request, store, cache)
    await asyncio.gather(*blockers)
    # ...yet the call, which itself runs 0.05 s, is not timed out by its 2 s in the queue.
    assert results[0].error is None, results[0].error
    assert results[0].output == "done"
    assert results[0].duration_s >= 1.9


async def test_a_call_that_runs_too_long_still_times_out(tmp_path, tone_wav, pool):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    tool = ModelTool("slow", 0.8)
    request, cache = _one_call_run(store, audio, tool, timeout=0.2)
    results = await _results(request, store, cache)
    assert results[0].error and "slow timed out" in results[0].error


async def test_identical_calls_in_flight_are_joined_across_runs(tmp_path, tone_wav, pool):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    tool = ModelTool("analyse", 0.3)
    started = inflight.CALLS.started
    cache = MemoryToolCache()  # shared, as the service shares its SQL cache
    runs = []
    for _ in range(4):
        request, _ = _one_call_run(store, audio, tool, timeout=10)
        runs.append(_results(request, store, cache))
    results = await asyncio.gather(*runs)
    assert tool.invocations == 1
    assert inflight.CALLS.started - started == 1
    flags = sorted(r[0].cached for r in results)
    assert flags == [False, True, True, True]  # one run paid; three shared its result
    assert all(r[0].output == "done" for r in results)


async def test_calls_in_flight_are_joined_only_within_one_owner(tmp_path, tone_wav, pool):
    from storage import SqlToolCache, Store

    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    db = Store.open(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    try:
        tool = ModelTool("analyse", 0.3)
        caches = [SqlToolCache(db.tool_cache, owner=o) for o in ("alice", "alice", "bob")]
        runs = []
        for cache in caches:
            request, _ = _one_call_run(store, audio, tool, timeout=10)
            runs.append(_results(request, store, cache))
        results = await asyncio.gather(*runs)
    finally:
        db.close()
    assert tool.invocations == 2  # alice's two runs share one call; bob's is his own
    assert sorted(r[0].cached for r in results) == [False, False, True]


async def test_a_stopped_run_does_not_cancel_the_call_its_sibling_waits_for(
    tmp_path, tone_wav, pool
):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    tool = ModelTool("analyse", 0.3)
    cache = MemoryToolCache()
    first, _ = _one_call_run(store, audio, tool, timeout=10)
    second, _ = _one_call_run(store, audio, tool, timeout=10)
    stopped = asyncio.ensure_future(_results(first, store, cache))
    survivor = asyncio.ensure_future(_results(second, store, cache))
    await wait_for(lambda: tool.invocations == 1, what="the shared call to start")
    stopped.cancel()
    results = await survivor
    assert results[0].output == "done" and results[0].error is None
    assert tool.invocations == 1


async def test_voice_activity_and_signal_facts_start_before_the_planner_asks(
    tmp_path, tone_wav, pool
):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)

    class Prefetched(ModelTool):
        prefetch = True

    vad = Prefetched("speech_activity", 0.2)
    other = ModelTool("other", 0.0)

    def first_turn(messages, tools, force):
        # By the time the planner's first turn ends, the prefetch is already running.
        return ScriptedTurn(calls=[("speech_activity", {})])

    planner = ScriptedPlanner(
        [
            first_turn,
            ScriptedTurn(answer=FinalAnswer(text="yes")),
        ],
        delay_s=0.0,
    )
    request = RunRequest("q?", [audio], planner, [vad, other])
    events = [e async for e in run_question(request, store=store, cache=MemoryToolCache())]
    results = [e for e in events if e.type == "tool_result"]
    assert vad.invocations == 1  # the prefetched call served the planner's request
    assert other.invocations == 0  # only tools marked for prefetch start early
    assert results[0].cached is False and results[0].error is None
    assert [e.type for e in events].count("tool_call") == 1  # prefetch is not a visible call


async def test_an_unclaimed_prefetch_is_withdrawn_when_the_run_ends(tmp_path, tone_wav):
    executor = ex.ModelExecutor(workers=1)
    previous = ex.set_executor(executor)
    try:
        store = AudioStore(tmp_path / "audio")
        audio = store.add_file(tone_wav)
        release = threading.Event()
        blocker = asyncio.ensure_future(ex.run_model(release.wait, 5))

        class Prefetched(ModelTool):
            prefetch = True

        vad = Prefetched("speech_activity", 0.0)
        planner = ScriptedPlanner([ScriptedTurn(answer=FinalAnswer(text="yes"))])
        request = RunRequest("q?", [audio], planner, [vad])
        events = [e async for e in run_question(request, store=store, cache=MemoryToolCache())]
        assert events[-1].type == "run_finished"
        # withdrawn, not left to occupy the (blocked) worker later
        await wait_for(lambda: executor.queued == 0, what="the prefetch to leave the queue")
        release.set()
        await blocker
        assert executor.queued == 0 and executor.running == 0
        assert vad.invocations == 0 and executor.calls == 1  # only the blocker ever started
    finally:
        ex.set_executor(previous)
        executor.shutdown()


@pytest.mark.models
async def test_compare_mode_transcribes_a_clip_once_for_four_strategies(tmp_path, monkeypatch):
    from agent.local_models import whisper_asr
    from agent.registry import Registry

    real = whisper_asr.transcribe
    seen: list[tuple] = []

    def counting(samples, **kwargs):
        seen.append(tuple(sorted(kwargs.items())))
        return real(samples, **kwargs)

    monkeypatch.setattr(whisper_asr, "transcribe", counting)
    registry = Registry(env={})
    store = AudioStore(tmp_path / "audio")
    clip = store.add_file(FIXTURES / "digit_6_theo_4.wav")
    cache = MemoryToolCache()
    runs = [
        RunRequest(
            "Which number is spoken?",
            [clip],
            registry.planner("offline"),
            registry.tools(),
            choices=["three", "six", "nine"],
            strategy=strategy,
        )
        for strategy in ("react", "caption_first", "refine", "evidence")
    ]

    async def play(request):
        return [
            e
            async for e in run_question(
                request, store=store, cache=cache, similarity=registry.similarity
            )
        ]

    outcomes = await asyncio.gather(*(play(r) for r in runs))
    assert all(events[-1].type == "run_finished" for events in outcomes)
    asked = [
        e for events in outcomes for e in events if e.type == "tool_call" and e.tool == "transcribe"
    ]
    assert len(asked) >= 2  # several strategies asked for the transcript...
    # ...and each distinct transcription (same arguments) ran exactly once.
    assert len(seen) == len(set(seen)), seen


async def test_a_costly_prefetch_waits_for_the_planner_on_long_audio(tmp_path, tone_wav, pool):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)

    class Costly(ModelTool):
        prefetch = True
        prefetch_max_s = audio.duration_s / 2  # this clip counts as long

    class Cheap(ModelTool):
        prefetch = True

    costly = Costly("signal_stats", 0.0)
    cheap = Cheap("speech_activity", 0.0)  # the control: prefetched on the same clip

    class Waiting(ScriptedPlanner):
        async def stream_turn(self, *args, **kwargs):
            # The planner answers only once the control's prefetch has run (unasked), so a
            # prefetch of the costly tool, started with it, would have run by then too.
            await wait_for(lambda: cheap.invocations == 1, what="the control's prefetch")
            async for chunk in super().stream_turn(*args, **kwargs):
                yield chunk

    planner = Waiting([ScriptedTurn(answer=FinalAnswer(text="yes"))])
    request = RunRequest("q?", [audio], planner, [costly, cheap])
    events = [e async for e in run_question(request, store=store, cache=MemoryToolCache())]
    assert events[-1].type == "run_finished"
    await wait_for(lambda: pool.queued == 0 and pool.running == 0, what="an idle executor")
    assert costly.invocations == 0 and pool.calls == 1  # only the control's prefetch ran


# -- GIL-bound models in worker processes ---------------------------------------------------------


@ex.holds_gil
def _pid_of_worker(parent: int) -> tuple[int, bool]:
    """Module level (the worker imports it by name): where it ran."""
    import os

    return os.getpid(), os.getpid() != parent


@ex.holds_gil
def _raises_in_worker() -> None:
    raise ValueError("bad pitch range")


@ex.holds_gil
def _dies_in_worker(parent: int) -> str:
    import os

    if os.getpid() != parent:
        os._exit(3)  # a worker killed mid-call (out of memory, say)
    return "ran in the calling thread"


@pytest.fixture
def process_pool():
    executor = ex.ModelExecutor(workers=2, threads_per_call=1, processes=2)
    previous = ex.set_executor(executor)
    yield executor
    ex.set_executor(previous)
    executor.shutdown()


async def test_gil_bound_models_run_in_worker_processes_within_the_bound(process_pool):
    import os

    results = await asyncio.gather(*(ex.run_model(_pid_of_worker, os.getpid()) for _ in range(4)))
    assert all(elsewhere for _, elsewhere in results)
    assert len({pid for pid, _ in results}) <= 2  # two workers, reused
    assert process_pool.peak_running <= 2 and process_pool.calls == 4
    # unmarked functions stay in this process's model threads
    assert await ex.run_model(os.getpid) == os.getpid()


async def test_errors_in_a_worker_process_reach_the_caller_as_they_were(process_pool):
    with pytest.raises(ValueError, match="bad pitch range"):
        await ex.run_model(_raises_in_worker)


async def test_a_dead_worker_falls_back_to_threads(process_pool, caplog):
    import os

    assert await ex.run_model(_dies_in_worker, os.getpid()) == "ran in the calling thread"
    assert "GIL-bound models run in threads" in caplog.text
    assert not process_pool.processes


def test_worker_processes_follow_the_cores_and_the_environment(monkeypatch):
    monkeypatch.delenv(ex.PROCESSES_ENV, raising=False)
    assert [ex.process_count(c) for c in (1, 2, 4, 8)] == [0, 0, 2, 4]
    monkeypatch.setenv(ex.PROCESSES_ENV, "0")
    assert ex.process_count(8) == 0
    monkeypatch.setenv(ex.PROCESSES_ENV, "3")
    assert ex.process_count(2) == 3
    monkeypatch.setenv(ex.PROCESSES_ENV, "many")
    with pytest.raises(ValueError, match="whole number"):
        ex.process_count()


def test_the_pitch_and_music_analyses_are_marked_gil_bound():
    from agent.local_models import music, signal

    assert getattr(signal.facts, "holds_gil", False) and getattr(music.analyze, "holds_gil", False)
