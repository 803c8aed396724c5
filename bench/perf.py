"""The performance report, in one run:

    python -m bench.perf [--quick] [--sessions 50] [--skip load,peers,offline]

1. loop and storage overhead per call and per run (1, 5, 20 instant scripted calls);
   1b. the same through the run manager, from bench.run_overhead (the runs part's script)
2. time to first event over SSE, and a 20-call run over HTTP
3. peers (bench.peers): our loop, and the same through the service with every event stored,
   against smolagents' ToolCallingAgent and qwen-agent's Assistant, one cheap model server,
   three tools (instant and 0.5 s), each contender in its own process, interleaved rounds;
   construction inside and outside the timer for every agent alike; the median per-round
   ratio; and the first question in a fresh process against warm ones. The peers live in a
   separate environment:
       python -m venv --system-site-packages .venv-peers
       .venv-peers/bin/pip install -r requirements-peers.txt
   (or set AUDIO_AGENT_PEERS_PYTHON to a Python that has them); ours alone when missing.
4. parallel speed-up: four I/O tools and four CPU-bound model calls in one turn vs one
5. cache speed-up: the same question again (SQLite tool cache)
6. offline time per stage per audio minute (real models on a 60 s clip)
7. load: N concurrent sessions (default 50) against a server this script starts on loopback,
   each a new conversation asking about its own spoken digit (offline default): p50/p95
   latency, errors, degraded runs, server RSS. Bounded by --load-timeout.
8. history: a conversation of 50 answered questions against one of 1 (instant scripted
   planner and tools, real server): open it and ask the next question over REST and through
   the Gradio UI's own queue (time to the first and last update, CPU time, bytes per
   update); the ratios should stay within 1.5x.
9. prompt tokens per question for each strategy: calls, tokens, cacheable prefix, cost at
   the catalogue's prices (bench.prompt_tokens)
10. a real model server (bench.llama_bench, optional requirements-llama.txt): per streamed
   token direct vs through the service; the planner's first token with speculative prefetch

Figures that depend on the machine are also given as ratios. Nothing leaves loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUDIO_AGENT_BENCH_DATA", "/work/shared/data"))
PEERS = ("smolagents", "qwen_agent")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else float("nan")


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


# -- 1. loop and storage overhead -----------------------------------------------------------------


WARM_REPS = 5  # runs left out of a median: the first ones fill caches and start threads


def _silence(folder: Path, seconds: float = 1.0) -> Path:
    import numpy as np
    import soundfile as sf

    path = folder / f"silence_{seconds:g}.wav"
    sf.write(path, np.zeros(int(16_000 * seconds), dtype=np.float32), 16_000)
    return path


def _scripted(calls: int) -> tuple[Any, list[Any]]:
    from agent.planners.base import FinalAnswer
    from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn

    tools = [ScriptedTool(f"t{i}", "ok") for i in range(calls)]

    def turn(messages, specs, force):  # type: ignore[no-untyped-def]
        if any(m.role == "tool" for m in messages):
            return ScriptedTurn(answer=FinalAnswer(text="done"))
        return ScriptedTurn(calls=[(f"t{i}", {"n": i}) for i in range(calls)])

    return ScriptedPlanner([turn], name="scripted"), tools


async def _loop_runs(calls: int, reps: int, folder: Path) -> float:
    from agent.audio import AudioStore
    from agent.run import RunRequest, run_question
    from agent.tools.base import MemoryToolCache

    store = AudioStore(folder / f"audio_loop_{calls}")
    audio = store.add_file(_silence(folder))
    times = []
    for _ in range(reps + 1):
        planner, tools = _scripted(calls)
        request = RunRequest("q?", [audio], planner, tools, budget=calls)
        begun = time.perf_counter()
        async for _ in run_question(request, store=store, cache=MemoryToolCache()):
            pass
        times.append(time.perf_counter() - begun)
    return median(times[1:])


def _service(folder: Path, registry: Any) -> Any:
    """The service as one visitor (``bench``) sees it, as the UI handlers use it."""
    from app import create_service
    from backend.host.settings import Settings
    from backend.service.owned import OwnedService

    service = create_service(Settings(data_dir=folder, warm_up=False), registry)
    return OwnedService(service, "bench")


def _clear_tool_cache(service: Any) -> None:
    """Every run calls its tools (the bench measures them, not the cache)."""
    service._service.store.tool_cache.clear_tool_cache()


def _close(service: Any) -> None:
    """Stop the service's run manager (its heartbeat) and its store's writer."""
    service._service.close()
    service._service.store.close()


async def _stored_runs(calls: int, reps: int, folder: Path) -> float:
    from agent.registry import Registry
    from backend.service import AskRequest

    planner, tools = _scripted(calls)
    registry = Registry()
    registry.register(planner, kind="planner")
    for tool in tools:
        registry.register(tool, kind="tool")
    service = _service(folder / f"stored_{calls}", registry)
    audio_id = service.upload_file(_silence(folder)).id
    times = []
    for _ in range(reps + WARM_REPS):
        conv = service.data.create_conversation()
        _clear_tool_cache(service)
        ask = AskRequest("q?", audio_id=audio_id, planner="scripted", budget=calls)
        begun = time.perf_counter()
        request, _ = await asyncio.to_thread(service.prepare, conv.id, ask)
        async for _ in service.stream(conv.id, request):
            pass
        times.append(time.perf_counter() - begun)
    _close(service)
    return median(times[WARM_REPS:])


def section_overhead(reps: int, folder: Path) -> None:
    heading("1. Loop and storage overhead (instant scripted tools, median of runs)")
    print("calls   loop/run   loop/call  +SQLite/run  +SQLite/call  storage share")
    for calls in (1, 5, 20):
        loop = asyncio.run(_loop_runs(calls, reps, folder))
        stored = asyncio.run(_stored_runs(calls, reps, folder))
        print(
            f"{calls:5}  {ms(loop)} {ms(loop / calls)} {ms(stored)} {ms(stored / calls)}"
            f"   {(stored - loop) / stored:6.0%}",
            flush=True,
        )


def section_run_manager(reps: int) -> None:
    """The run manager's own figures (bench.run_overhead, by the runs part)."""
    try:
        from bench.run_overhead import CALLS, measure
    except ImportError:
        return
    heading("1b. Through the run manager (bench.run_overhead): ms, median / p90")
    figures = measure(reps)
    print("calls      loop alone   loop+storage  HTTP first ev  HTTP whole run")
    for calls in CALLS:
        cells = [figures[k][calls] for k in ("loop", "storage", "http_first", "http_run")]
        print(f"{calls:>5}  " + "  ".join(f"{m:>6.1f} / {p:<6.1f}" for m, p in cells))


# -- 2. time to first event over SSE --------------------------------------------------------------


def section_sse(reps: int, folder: Path) -> None:
    from agent.registry import Registry
    from app import create_app
    from backend.host.settings import Settings
    from tests.servers import serve

    heading("2. Over HTTP (SSE), server on loopback")
    for calls in (1, 20):
        planner, tools = _scripted(calls)
        registry = Registry()
        registry.register(planner, kind="planner")
        for tool in tools:
            registry.register(tool, kind="tool")
        settings = Settings(data_dir=folder / f"sse_{calls}", warm_up=False)
        app = create_app(settings, registry=registry, ui=False)
        firsts, totals = [], []
        with serve(app) as base, httpx.Client(base_url=base, timeout=60) as http:
            with _silence(folder).open("rb") as fh:
                audio_id = http.post("/api/audio", files={"file": ("s.wav", fh)}).json()["id"]
            for _ in range(reps + 1):
                conv = http.post("/api/conversations", json={}).json()["id"]
                app.state.service.store.tool_cache.clear_tool_cache()
                body = {"question": "q?", "audio_id": audio_id, "budget": calls}
                begun = time.perf_counter()
                first = None
                with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
                    for line in resp.iter_lines():
                        if line.startswith("data:") and first is None:
                            first = time.perf_counter() - begun
                totals.append(time.perf_counter() - begun)
                firsts.append(first or float("nan"))
        print(
            f"{calls:2} call(s): first event {ms(median(firsts[1:]))}, "
            f"whole run {ms(median(totals[1:]))}",
            flush=True,
        )


# -- 3. peers -------------------------------------------------------------------------------------


def section_peers(reps: int) -> None:
    from bench import peers

    heading(
        "3. Against peers: one cheap model server, 3 tools asked in one turn, each contender in "
        "its own process, interleaved rounds (bench.peers)"
    )
    python = peers.peers_python()
    contenders = peers.OURS + (peers.PEERS if python else ())
    if python is None:
        print(
            "peers skipped (ours measured alone): smolagents and qwen-agent are not installed. "
            "Install them apart from the app:\n  python -m venv --system-site-packages "
            ".venv-peers\n  .venv-peers/bin/pip install -r requirements-peers.txt"
        )
    for delay in (0.0, 0.5):
        peers.report(peers.compare(python or sys.executable, delay, reps, contenders))
    first, warm = peers.first_run(3)
    print(
        f"through the service, a fresh process: first question {ms(first)}, warm {ms(warm)}: "
        f"x{first / warm:.2f} (median of 3 processes; target x1.5)",
        flush=True,
    )


# -- 4. parallel speed-up -------------------------------------------------------------------------


async def _turn_time(tools: list[Any], calls: list[tuple[str, dict]], folder: Path) -> float:
    from agent.audio import AudioStore
    from agent.planners.base import FinalAnswer
    from agent.run import RunRequest, run_question
    from agent.testing import ScriptedPlanner, ScriptedTurn
    from agent.tools.base import MemoryToolCache

    store = AudioStore(folder / "audio_par")
    clip = DATA / "esc50" / "audio"
    wav = next(iter(sorted(clip.glob("*.wav"))), None) if clip.is_dir() else None
    audio = store.add_file(wav or _silence(folder, 5.0))
    planner = ScriptedPlanner([ScriptedTurn(calls=calls), ScriptedTurn(answer=FinalAnswer("x"))])
    request = RunRequest("q?", [audio], planner, tools)
    begun = time.perf_counter()
    async for event in run_question(request, store=store, cache=MemoryToolCache()):
        if event.type == "tool_result" and event.error:
            raise RuntimeError(event.error)
    return time.perf_counter() - begun


def section_parallel(folder: Path) -> None:
    from agent.local_models import executor
    from agent.testing import ScriptedTool
    from agent.tools.local_events import SoundEventsTool

    heading("4. Parallel speed-up: four calls in one turn vs one")

    def best(tools: list[Any], calls: list[tuple[str, dict]]) -> float:
        return min(asyncio.run(_turn_time(tools, calls, folder)) for _ in range(3))

    io = [ScriptedTool(f"io{i}", delay_s=0.2) for i in range(4)]
    one = best(io, [("io0", {})])
    four = best(io, [(f"io{i}", {}) for i in range(4)])
    print(f"I/O tools (0.2 s each): one {ms(one)}, four {ms(four)}: four take x{four / one:.2f}")
    events = SoundEventsTool()
    asyncio.run(_turn_time([events], [("sound_events", {"top_k": 1})], folder))  # load model
    calls = [("sound_events", {"top_k": k}) for k in (2, 3, 4, 5)]  # distinct: not joined
    one = best([events], calls[:1])
    four = best([events], calls)
    size = executor.get_executor()
    print(
        f"CPU-bound model calls (YAMNet, 5 s clip): one {ms(one)}, four {ms(four)}: four take "
        f"x{four / one:.2f} (executor: {size.workers} workers x {size.threads_per_call} "
        f"thread(s), {executor.cpu_count()} cores)"
    )
    _gil_bound(folder)


def _gil_bound(folder: Path) -> None:
    """Four pitch analyses (pYIN holds the GIL) at once: model threads vs worker processes."""
    import numpy as np

    from agent.audio import load_samples
    from agent.local_models import executor, signal

    clip = DATA / "esc50" / "audio"
    wav = next(iter(sorted(clip.glob("*.wav"))), None) if clip.is_dir() else None
    samples = load_samples(wav or _silence(folder, 5.0))
    samples = np.tile(samples, 4)  # about 20 s

    async def timed(n: int) -> float:
        begun = time.perf_counter()
        await asyncio.gather(*(executor.run_model(signal.facts, samples) for _ in range(n)))
        return time.perf_counter() - begun

    size = executor.sizing()
    for processes in (0, size.workers):
        pool = executor.ModelExecutor(size.workers, size.threads_per_call, processes=processes)
        previous = executor.set_executor(pool)
        try:
            pool.warm_processes([signal.warm_up])
            asyncio.run(timed(1))
            one = min(asyncio.run(timed(1)) for _ in range(2))
            four = min(asyncio.run(timed(4)) for _ in range(2))
        finally:
            executor.set_executor(previous)
            pool.shutdown()
        where = f"{processes} worker process(es)" if processes else "model threads"
        print(
            f"GIL-bound (pYIN, 20 s) in {where}: one {ms(one)}, four at once {ms(four)}: "
            f"x{four / one:.2f}",
            flush=True,
        )


# -- 5. cache -------------------------------------------------------------------------------------


async def _cache_runs(folder: Path) -> tuple[float, float]:
    from agent.registry import Registry
    from backend.service import AskRequest

    service = _service(folder / "cache", Registry(env={}))
    digit = DATA / "fsdd" / "recordings" / "6_theo_4.wav"
    audio_id = service.upload_file(digit if digit.is_file() else _silence(folder)).id
    times = []
    for _ in range(2):
        conv = service.data.create_conversation()
        ask = AskRequest("Which number is spoken?", audio_id=audio_id, planner="offline")
        begun = time.perf_counter()
        request, _ = await asyncio.to_thread(service.prepare, conv.id, ask)
        async for _ in service.stream(conv.id, request):
            pass
        times.append(time.perf_counter() - begun)
    _close(service)
    return times[0], times[1]


def section_cache(folder: Path) -> None:
    heading("5. Cache speed-up: the same question on the same clip again (offline default)")
    first, again = asyncio.run(_cache_runs(folder))
    print(f"first {ms(first)}, again {ms(again)}: x{first / again:.1f} faster from the cache")


# -- 6. offline stages ----------------------------------------------------------------------------


def section_offline(folder: Path) -> None:
    from bench.memory import available, build_clip

    heading("6. Offline time per stage per audio minute (60 s clip: speech then music)")
    if not available():
        print("skipped: the recordings under AUDIO_AGENT_BENCH_DATA are missing")
        return
    from agent.audio import AudioStore
    from agent.local_models import music, signal, vad, whisper_asr, yamnet

    wav = build_clip(60, folder)
    store = AudioStore(folder / "audio_offline")
    begun = time.perf_counter()
    ref = store.add_file(wav)
    samples = store.samples(ref)
    stages = {"decode + store": time.perf_counter() - begun}
    for name, fn in (
        ("voice activity (Silero)", lambda: vad.speech_spans(samples)),
        ("transcribe (whisper tiny.en)", lambda: whisper_asr.transcribe(samples)),
        ("signal facts (pYIN)", lambda: signal.facts(samples)),
        ("sound events (YAMNet)", lambda: yamnet.tag(samples)),
        ("music facts (librosa)", lambda: music.analyze(samples)),
        ("notes (basic-pitch)", lambda: music.notes(samples)),
    ):
        fn() if name.startswith("transcribe") else None  # load whisper outside the timing
        begun = time.perf_counter()
        fn()
        stages[name] = time.perf_counter() - begun
    minutes = len(samples) / 16_000 / 60
    for name, seconds in stages.items():
        print(f"  {name:30} {seconds / minutes:7.2f} s per audio minute")


# -- 7. load --------------------------------------------------------------------------------------


def _rss(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


async def _session(http: httpx.AsyncClient, wav: Path, deadline: float) -> dict[str, Any]:
    begun = time.perf_counter()
    out: dict[str, Any] = {"status": None, "error": None}
    try:
        conv = (await http.post("/api/conversations", json={})).json()["id"]
        files = {"file": (wav.name, wav.read_bytes())}
        audio = await http.post("/api/audio", files=files)
        audio.raise_for_status()
        body = {"question": "Which number is spoken?", "audio_id": audio.json()["id"]}
        async with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
            if resp.status_code != 200:
                out["error"] = f"HTTP {resp.status_code}"
                await resp.aread()
            else:
                async for line in resp.aiter_lines():
                    if line.startswith("data:"):
                        event = json.loads(line[5:])
                        if event.get("type") == "run_finished":
                            out["status"] = event.get("status")
                        elif event.get("type") == "run_failed":
                            out["error"] = event.get("kind")
                    if time.perf_counter() > deadline:
                        out["error"] = "bench deadline"
                        break
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        out["error"] = type(exc).__name__
    out["latency"] = time.perf_counter() - begun
    return out


def section_load(sessions: int, timeout: float, folder: Path) -> None:
    from tests.servers import free_port

    heading(f"7. Load: {sessions} concurrent sessions, offline default, server on loopback")
    recordings = sorted((DATA / "fsdd" / "recordings").glob("*.wav"))
    if not recordings:
        print("skipped: no spoken-digit recordings under AUDIO_AGENT_BENCH_DATA")
        return
    port = free_port()
    env = {
        **os.environ,
        "AUDIO_AGENT_DATA_DIR": str(folder / "load"),
        "AUDIO_AGENT_PORT": str(port),
    }
    server = subprocess.Popen(
        [sys.executable, "app.py"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while time.monotonic() - started < 120:
            try:
                httpx.get(f"{base}/api/catalogue", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.5)

        async def visitor(wav: Path, deadline: float) -> dict[str, Any]:
            # Each session is its own visitor (its own owner cookie), as 50 people would be:
            # one shared client would be one owner, refused past the per-owner limits.
            async with httpx.AsyncClient(base_url=base, timeout=timeout) as http:
                return await _session(http, wav, deadline)

        async def run() -> list[dict[str, Any]]:
            deadline = time.perf_counter() + timeout
            await visitor(recordings[-1], deadline)  # models loaded, warm
            idle, _ = _rss(server.pid)
            wavs = [recordings[i % len(recordings)] for i in range(sessions)]
            results = await asyncio.gather(*(visitor(w, deadline) for w in wavs))
            results[0]["idle_rss"] = idle
            return list(results)

        begun = time.perf_counter()
        results = asyncio.run(run())
        wall = time.perf_counter() - begun
        rss, peak = _rss(server.pid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
    latencies = [r["latency"] for r in results if not r["error"]]
    errors = [r["error"] for r in results if r["error"]]
    degraded = [r for r in results if r["status"] not in (None, "ok", "forced")]
    print(
        f"wall {wall:.1f} s; latency p50 {median(latencies):.2f} s, p95 {p95(latencies):.2f} s; "
        f"errors {len(errors)} {sorted(set(errors)) if errors else ''}; "
        f"degraded runs {len(degraded)}; server RSS idle {results[0]['idle_rss']:.0f} MB, "
        f"after {rss:.0f} MB, peak {peak:.0f} MB"
    )


# -- 8. history -----------------------------------------------------------------------------------

HISTORY_LENGTH = 50  # answered questions in the long conversation
HISTORY_OUTPUT = "word " * 200  # each scripted tool result: about a short transcript's size
HISTORY_TOOLS = ["transcribe", "sound_events", "signal_facts"]
HISTORY_ASK = {"question": "What is said?", "planner": "scripted", "tools": HISTORY_TOOLS}


class _GradioPage:
    """One browser tab's events over Gradio's real queue (``/gradio_api/queue``): join an
    event, then read its server-sent messages; times and sizes of its updates."""

    def __init__(self, http: httpx.Client, session: str) -> None:
        self.http = http
        self.session = session
        config = http.get("/config").json()
        self.prefix = config.get("api_prefix", "/gradio_api")
        self.components = {c["id"]: c for c in config["components"]}
        self.dependencies = {d["api_name"]: d for d in config["dependencies"]}

    def inputs(self, api_name: str, **values: Any) -> list[Any]:
        """The event's inputs at their defaults, with ``values`` by elem_id."""
        out = []
        for component_id in self.dependencies[api_name]["inputs"]:
            props = self.components[component_id]["props"]
            out.append(values.get(props.get("elem_id") or "", props.get("value")))
        return out

    def run(self, api_name: str, data: list[Any], event_data: Any = None) -> dict[str, Any]:
        """Times to the first update and to the end, and the bytes of each update."""
        body = {
            "data": data,
            "event_data": event_data,
            "fn_index": self.dependencies[api_name]["id"],
            "trigger_id": None,
            "session_hash": self.session,
        }
        begun, cpu = time.perf_counter(), time.process_time()
        event_id = self.http.post(f"{self.prefix}/queue/join", json=body).json()["event_id"]
        first, sizes = None, []
        url = f"{self.prefix}/queue/data"
        with self.http.stream("GET", url, params={"session_hash": self.session}) as resp:
            for line in resp.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") != event_id:
                    continue
                if message["msg"] in ("process_generating", "process_completed"):
                    first = first or time.perf_counter() - begun
                    sizes.append(len(line))
                if message["msg"] == "process_completed":
                    if not message.get("success", True):
                        raise RuntimeError(f"{api_name} failed: {message.get('output')}")
                    break
        return {
            "first": first or float("nan"),
            "last": time.perf_counter() - begun,
            "cpu": time.process_time() - cpu,  # server and this client: one process
            "sizes": sizes,
        }


def _history_registry() -> Any:
    """A planner that reasons a little, calls three tools at once, then answers with a
    rationale; tools that return about a short transcript each (about 25 events a run)."""
    from agent.planners.base import FinalAnswer
    from agent.registry import Registry
    from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn

    def turn(messages, specs, force):  # type: ignore[no-untyped-def]
        if any(m.role == "tool" for m in messages):
            rationale = "The transcript and the sound events agree on what is heard."
            return ScriptedTurn("All three agree.", answer=FinalAnswer("done", rationale=rationale))
        text = "I will transcribe the recording, tag its sounds and measure its signal."
        return ScriptedTurn(text, calls=[(name, {}) for name in HISTORY_TOOLS])

    registry = Registry()
    registry.register(ScriptedPlanner([turn], name="scripted"), kind="planner")
    for name in HISTORY_TOOLS:
        registry.register(ScriptedTool(name, HISTORY_OUTPUT), kind="tool")
    return registry


def _history_app(folder: Path) -> Any:
    from app import create_app
    from backend.host.settings import Settings

    settings = Settings(
        data_dir=folder / "history", warm_up=False, owner_runs_per_minute=0, owner_max_runs=0
    )  # no admission limits: this measures the conversation, not the quota
    return create_app(settings, registry=_history_registry())


def _rest_ask(http: httpx.Client, conv: str, audio_id: str) -> tuple[float, float]:
    """Ask over HTTP and stream to the end: (first event, whole run), seconds."""
    body = {**HISTORY_ASK, "audio_id": audio_id}
    begun = time.perf_counter()
    first = None
    with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if line.startswith("data:") and first is None:
                first = time.perf_counter() - begun
    return first or float("nan"), time.perf_counter() - begun


def _conversation_of(http: httpx.Client, audio_id: str, questions: int) -> str:
    conv = http.post("/api/conversations", json={}).json()["id"]
    for _ in range(questions):
        _rest_ask(http, conv, audio_id)
    return conv


def _history_step(
    http: httpx.Client, page: _GradioPage, conv: str, audio_id: str, out: dict[str, list[float]]
) -> None:
    """Open ``conv`` and ask it one more question, over REST and through the UI; adds the
    figures to ``out``."""

    def add(key: str, value: float) -> None:
        out.setdefault(key, []).append(value)

    walls, cpus = [], []
    for _ in range(5):  # the best of five: a GET is short, and stray work in the process is not
        begun, cpu = time.perf_counter(), time.process_time()
        got = http.get(f"/api/conversations/{conv}")
        walls.append(time.perf_counter() - begun)
        cpus.append(time.process_time() - cpu)
    add("rest_open", min(walls))
    add("rest_open_cpu", min(cpus))
    add("rest_open_kb", len(got.content) / 1024)
    walls = []
    for _ in range(5):  # a page from the end, as a client that shows the latest would ask
        begun = time.perf_counter()
        http.get(f"/api/conversations/{conv}", params={"last": 10}).raise_for_status()
        walls.append(time.perf_counter() - begun)
    add("rest_page", min(walls))
    first, whole = _rest_ask(http, conv, audio_id)
    add("rest_first", first)
    add("rest_ask", whole)
    opened = page.run("pick", [], {"id": conv})
    add("ui_open", opened["last"])
    add("ui_open_cpu", opened["cpu"])
    add("ui_open_kb", sum(opened["sizes"]) / 1024)
    asked = page.run("submit", page.inputs("submit", **HISTORY_ASK))
    add("ui_first", asked["first"])
    add("ui_ask", asked["last"])
    add("ui_ask_cpu", asked["cpu"])
    add("ui_update_kb", median([s / 1024 for s in asked["sizes"][1:-1]]))
    add("ui_first_kb", asked["sizes"][0] / 1024)


def section_history(reps: int, folder: Path) -> None:
    from tests.servers import serve

    heading(
        f"8. History: a conversation of {HISTORY_LENGTH} answered questions vs one of 1 "
        "(real server, instant scripted planner and tools)"
    )
    app = _history_app(folder)
    with serve(app) as base, httpx.Client(base_url=base, timeout=120) as http:
        with _silence(folder).open("rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("s.wav", fh)}).json()["id"]
        page = _GradioPage(http, session="bench-history")
        long = _conversation_of(http, audio_id, HISTORY_LENGTH)

        def new() -> str:
            return _conversation_of(http, audio_id, 1)

        _history_step(http, page, new(), audio_id, {})  # warm: imports, first renders
        figures: dict[str, dict[str, list[float]]] = {"new": {}, "long": {}}
        for _ in range(reps):  # alternating, so that a busy moment hits both alike
            _history_step(http, page, new(), audio_id, figures["new"])
            _history_step(http, page, long, audio_id, figures["long"])
    rows = (
        ("REST: GET conversation (best of 5)", "rest_open", "ms"),
        ("REST: GET, CPU time (best of 5)", "rest_open_cpu", "ms"),
        ("REST: its size", "rest_open_kb", "KB"),
        ("REST: GET ?last=10 (best of 5)", "rest_page", "ms"),
        ("REST: ask, first event", "rest_first", "ms"),
        ("REST: ask, whole run", "rest_ask", "ms"),
        ("UI: open from the sidebar", "ui_open", "ms"),
        ("UI: open, CPU time", "ui_open_cpu", "ms"),
        ("UI: bytes sent to open", "ui_open_kb", "KB"),
        ("UI: ask, first update", "ui_first", "ms"),
        ("UI: ask, to the last update", "ui_ask", "ms"),
        ("UI: ask, CPU time", "ui_ask_cpu", "ms"),
        ("UI: ask, first update size", "ui_first_kb", "KB"),
        ("UI: ask, median update size", "ui_update_kb", "KB"),
    )
    print(f"{'median of ' + str(reps):34} {'1 question':>12} {HISTORY_LENGTH:>9} q.   ratio")
    for label, key, unit in rows:
        new, long_ = median(figures["new"][key]), median(figures["long"][key])
        scale = 1000 if unit == "ms" else 1
        print(
            f"{label:34} {new * scale:9.1f} {unit} {long_ * scale:9.1f} {unit}  "
            f"x{long_ / new:5.2f}",
            flush=True,
        )
    print(
        "CPU time: of this process (the server and this client), which other load on the "
        "machine disturbs less than wall time. Target: the 50-question ratios within x1.5."
    )


# -- 9. prompt tokens, 10. a real model server ------------------------------------------------


def section_tokens() -> None:
    from bench import prompt_tokens

    heading("9. Prompt tokens per question, per strategy (bench.prompt_tokens)")
    prompt_tokens.main([])


def section_llama(reps: int) -> None:
    from bench import llama_bench

    heading("10. A real model server on this machine: llama.cpp + Gemma 3 270M (bench.llama_bench)")
    llama_bench.main(["--reps", str(reps)])


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description="Performance report (see module docstring).")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--load-timeout", type=float, default=900.0)
    parser.add_argument(
        "--skip",
        default="",
        help="overhead,runs,sse,peers,parallel,cache,offline,load,history,tokens,llama",
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    reps = 5 if args.quick else 15
    folder = Path(tempfile.mkdtemp(prefix="bench-perf-"))
    print(f"bench.perf on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    try:
        sections = [
            ("overhead", lambda: section_overhead(reps, folder)),
            ("runs", lambda: section_run_manager(reps)),
            ("sse", lambda: section_sse(reps, folder)),
            ("peers", lambda: section_peers(8 if args.quick else 20)),
            ("parallel", lambda: section_parallel(folder)),
            ("cache", lambda: section_cache(folder)),
            ("offline", lambda: section_offline(folder)),
            ("load", lambda: section_load(args.sessions, args.load_timeout, folder)),
            ("history", lambda: section_history(5 if args.quick else 11, folder)),
            ("tokens", section_tokens),
            ("llama", lambda: section_llama(3 if args.quick else 6)),
        ]
        for name, section in sections:
            if name not in skip:
                section()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
