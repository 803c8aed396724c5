"""Overhead of the loop and of storing a run's events, with instant scripted tools.

    python -m bench.run_overhead [--repeat 30]

Prints, in milliseconds (median and p90 of ``--repeat`` runs, after a warm-up):

- loop alone: ``run_question`` with an in-memory cache, nothing stored;
- loop + events stored: the same run through the run manager (``backend.runs.manager``) on a SQLite
  file, from start until a follower has received the last event (every event stored before
  it is published), the tool cache in memory;
- loop + storage: the same with the tool cache in the database, as in the app (each call
  looks its result up, and stores it);
- over HTTP (a real uvicorn server on loopback, ``POST /api/conversations/{id}/ask``): time
  to the first server-sent event, and to the last.

An N-call run is N planner turns of one tool call each, then the answer (2 + 5 N events).
Targets (issue 9): loop + storage under 10 ms for 1 call and under 50 ms for 20; over HTTP,
first event under 50 ms and a 20-call run under 60 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import uvicorn  # noqa: E402

from agent.audio import AudioStore  # noqa: E402
from agent.registry import Registry  # noqa: E402
from agent.run import RunRequest, run_question  # noqa: E402
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn  # noqa: E402
from agent.tools.base import MemoryToolCache  # noqa: E402
from backend.runs.manager import RunLimits, RunManager  # noqa: E402
from storage import SqlToolCache, Store  # noqa: E402

CALLS = (1, 5, 20)


def planner(calls: int) -> ScriptedPlanner:
    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "tool")
        if done >= calls or force:
            return ScriptedTurn("Done. <answer>Dog</answer>")
        return ScriptedTurn(f"Calling tool {done + 1}.", calls=[("instant", {"n": done + 1})])

    return ScriptedPlanner([turn], name="scripted")


def instant_tool() -> ScriptedTool:
    return ScriptedTool("instant", "a dog barks", data={"labels": ["dog"]})


def tone(path: Path) -> Path:
    t = np.arange(16_000) / 16_000
    sf.write(path, 0.3 * np.sin(2 * np.pi * 440 * t), 16_000)
    return path


def stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


async def loop_alone(audio: AudioStore, ref, calls: int) -> float:  # type: ignore[no-untyped-def]
    req = RunRequest("What animal?", [ref], planner(calls), [instant_tool()], budget=100)
    begun = time.perf_counter()
    async for _ in run_question(req, store=audio, cache=MemoryToolCache()):
        pass
    return (time.perf_counter() - begun) * 1000


async def with_storage(  # type: ignore[no-untyped-def]
    manager: RunManager, store: Store, conv_id: str, ref, calls: int
) -> float:
    req = RunRequest("What animal?", [ref], planner(calls), [instant_tool()], budget=100)
    message = store.messages.add_message(conv_id, "user", "What animal?", audio_id=ref.id)
    store.runs.create_run(req.run_id, message.id, "scripted", "react", ["instant"],
                     worker_id=manager.worker_id)  # fmt: skip
    begun = time.perf_counter()
    manager.start([req], owner="bench")
    async for event in manager.follow([req.run_id]):
        last = event
    elapsed = (time.perf_counter() - begun) * 1000
    assert last.type == "run_finished", last
    return elapsed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve(app) -> Iterator[str]:  # type: ignore[no-untyped-def]
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def over_http(data_dir: Path, wav: Path, repeat: int) -> dict[int, tuple[list[float], list[float]]]:
    from app import create_app
    from backend.host.settings import Settings

    registry = Registry()
    registry.register(instant_tool(), kind="tool")
    for calls in CALLS:
        registry.register(
            ScriptedPlanner([planner(calls).turns[0]], name=f"scripted{calls}"), kind="planner"
        )
    settings = Settings(data_dir=data_dir, warm_up=False, owner_runs_per_minute=0, owner_max_runs=0)
    app = create_app(settings, registry=registry, ui=False)
    results: dict[int, tuple[list[float], list[float]]] = {}
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()["id"]
        with open(wav, "rb") as fh:
            audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        for calls in CALLS:
            body = {
                "question": "What animal?",
                "audio_id": audio_id,
                "planner": f"scripted{calls}",
                "tools": ["instant"],
                "budget": 100,
            }
            first, total = [], []
            for i in range(repeat + 5):
                begun = time.perf_counter()
                ttfe = None
                with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
                    assert resp.status_code == 200, resp.read()
                    for line in resp.iter_lines():
                        if ttfe is None and line.startswith("data: "):
                            ttfe = (time.perf_counter() - begun) * 1000
                        last = line
                elapsed = (time.perf_counter() - begun) * 1000
                assert last == "" or "run_finished" in last or last.startswith("data: ")
                if i >= 5:  # warm-up
                    first.append(ttfe or elapsed)
                    total.append(elapsed)
            results[calls] = (first, total)
    return results


async def in_process(data_dir: Path, wav: Path, repeat: int) -> dict[str, dict[int, list[float]]]:
    audio = AudioStore(data_dir / "audio")
    ref = audio.add_file(wav)
    store = Store.open(f"sqlite:///{data_dir / 'bench.sqlite3'}")
    store.recordings.add_audio(ref, size_bytes=wav.stat().st_size)
    conv = store.conversations.create_conversation("bench")
    limits = RunLimits(owner_runs_per_minute=0, owner_max_running=0)
    managers = {
        "events": RunManager(store, audio=audio, cache=MemoryToolCache(), limits=limits),
        "storage": RunManager(
            store, audio=audio, cache=SqlToolCache(store.tool_cache), limits=limits
        ),
    }
    out: dict[str, dict[int, list[float]]] = {"loop": {}, "events": {}, "storage": {}}
    try:
        for calls in CALLS:
            for kind in ("loop", "events", "storage"):
                samples = []
                for i in range(repeat + 5):
                    if kind == "loop":
                        ms = await loop_alone(audio, ref, calls)
                    else:
                        ms = await with_storage(managers[kind], store, conv.id, ref, calls)
                    if i >= 5:
                        samples.append(ms)
                out[kind][calls] = samples
    finally:
        for manager in managers.values():
            manager.close()
        store.close()
    return out


def measure(repeat: int = 30) -> dict[str, dict[int, tuple[float, float]]]:
    """Milliseconds (median, p90) per number of calls, for ``loop``, ``events`` (loop + events
    stored through the run manager, tool cache in memory), ``storage`` (the same with the tool
    cache in the database), ``http_first`` and ``http_run``. For bench/perf.py."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wav = tone(root / "tone.wav")
        local = asyncio.run(in_process(root / "local", wav, repeat))
        http = over_http(root / "http", wav, repeat)
    return {
        "loop": {n: stats(local["loop"][n]) for n in CALLS},
        "events": {n: stats(local["events"][n]) for n in CALLS},
        "storage": {n: stats(local["storage"][n]) for n in CALLS},
        "http_first": {n: stats(http[n][0]) for n in CALLS},
        "http_run": {n: stats(http[n][1]) for n in CALLS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    figures = measure(args.repeat)
    print(f"Run overhead with instant scripted tools (ms, median / p90 of {args.repeat} runs)")
    print(f"{'calls':>5}  {'loop alone':>14}  {'loop+events':>14}  {'loop+storage':>14}  "
          f"{'HTTP first ev':>14}  {'HTTP whole run':>14}")  # fmt: skip
    for calls in CALLS:
        keys = ("loop", "events", "storage", "http_first", "http_run")
        cells = [figures[k][calls] for k in keys]
        print(f"{calls:>5}  " + "  ".join(f"{m:>6.1f} / {p:<5.1f}" for m, p in cells))
    print("loop+events: tool cache in memory; loop+storage: tool cache in the database (the app)")
    checks = {
        "loop+events, 1 call": (figures["events"][1][0], 10.0),
        "loop+events, 20 calls": (figures["events"][20][0], 50.0),
        "loop+storage, 1 call": (figures["storage"][1][0], 10.0),
        "loop+storage, 20 calls": (figures["storage"][20][0], 50.0),
        "HTTP first event": (figures["http_first"][20][0], 50.0),
        "HTTP 20-call run": (figures["http_run"][20][0], 60.0),
    }
    for name, (value, target) in checks.items():
        verdict = "meets" if value < target else "MISSES"
        print(f"  {name}: {value:.1f} ms (median), {verdict} the target of {target:.0f} ms")


if __name__ == "__main__":
    main()
