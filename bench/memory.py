"""Memory of the offline default on long audio: RSS idle and at peak, per strategy and length.

    python -m bench.memory [--seconds 10 60 300] [--strategies react caption_first ...]
    python -m bench.memory --tools --seconds 300     # each local tool alone

Clips are built from the real recordings in /work/shared/data/librosa (LibriSpeech readings
followed by music, repeated to the length), resampled to 16 kHz. Each measurement runs in a
fresh process: RSS after loading every model (idle) and the process's peak (VmHWM) after one
question with the offline planner. GIL-bound models (pYIN, librosa's music analysis) run in
worker processes (agent.local_models.executor), so the figures cover the whole tree: the main
process's RSS, plus the pages the fork server shares with its workers (copy-on-write, counted
once), plus each worker's private pages; idle after warm-up, and the peak of that sum sampled
every 20 ms during the question (also the main process's own peak RSS, VmHWM).
``AUDIO_AGENT_MODEL_PROCESSES=0`` measures the threads-only setting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agent.strategies.options import add_strategies_option
from agent.tools.base import local_tools

DATA = Path(os.environ.get("AUDIO_AGENT_BENCH_DATA", "/work/shared/data")) / "librosa"
SOURCES = [  # speech first, then music
    "198-209-0000.ogg",
    "3436-172162-0000.ogg",
    "5703-47212-0000.ogg",
    "147793__setuniman__sweet-waltz-0i-22mi.ogg",
    "442789__lena-orsa__happy-music-pistachio-ice-cream-ragtime.ogg",
    "Karissa_Hobbs_-_Lets_Go_Fishin.ogg",
]
QUESTION = "What can be heard in this recording?"
CHOICES = ["A man reading aloud, then music", "Rain on a roof", "A dog barking", "Silence"]


def available() -> bool:
    return all((DATA / name).is_file() for name in SOURCES)


def build_clip(seconds: float, folder: Path) -> Path:
    """A ``seconds`` long 16 kHz wav of speech then music (the sources, repeated)."""
    import librosa
    import numpy as np
    import soundfile as sf

    path = folder / f"clip_{int(seconds)}s.wav"
    if path.is_file():
        return path
    parts = [librosa.load(DATA / name, sr=16_000, mono=True)[0] for name in SOURCES]
    joined = np.concatenate(parts)
    need = int(seconds * 16_000)
    reps = -(-need // joined.size)
    sf.write(path, np.tile(joined, reps)[:need], 16_000, subtype="PCM_16")
    return path


def _tree() -> list[int]:
    """This process and its descendants (the model worker processes and their fork server)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    pids, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(parents.get(pid, []))
    return pids


def _field_mb(path: Path, key: str) -> float:
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0]) / 1024
    return 0.0


def _tree_mb() -> float:
    """Memory of the tree in MB: see the module doc (shared library pages counted once, in
    the main process)."""
    main, *children = _tree()
    total = _field_mb(Path(f"/proc/{main}/status"), "VmRSS")
    shared_among_children = 0.0
    for pid in children:
        rollup = Path(f"/proc/{pid}/smaps_rollup")
        total += _field_mb(rollup, "Private_Clean") + _field_mb(rollup, "Private_Dirty")
        shared_among_children = max(shared_among_children, _field_mb(rollup, "Shared_Dirty"))
    return total + shared_among_children


class _PeakSampler:
    """The highest memory of the process tree, sampled in a thread while a question runs."""

    def __init__(self, every_s: float = 0.02) -> None:
        import threading

        self.peak = _tree_mb()
        self._stop = threading.Event()
        self._every = every_s
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, _tree_mb())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, _tree_mb())


def _reset_peak() -> None:
    """Start VmHWM again from the current RSS (Linux >= 4.0)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _child(mode: str, wav: str, what: str) -> dict:
    """Runs in the measured process."""
    import asyncio

    from agent.audio import AudioStore
    from agent.registry import Registry
    from agent.run import RunRequest, run_question

    registry = Registry(env={})
    tools = registry.tools()
    planner = registry.planner("offline")
    from agent.registry import warm_up

    warm_up()  # every local model loaded, as the app does at start-up
    store = AudioStore(Path(tempfile.mkdtemp(prefix="bench-mem-")))
    ref = store.add_file(wav)
    store.samples(ref)
    idle = _tree_mb()
    _reset_peak()
    sampler = _PeakSampler()

    async def question() -> str:
        request = RunRequest(
            QUESTION, [ref], planner, tools, choices=CHOICES, strategy=what, tool_timeout_s=900
        )
        last = None
        async for event in run_question(request, store=store, similarity=registry.similarity):
            last = event
        return last.type if last else "none"

    async def one_tool() -> str:
        from agent.tools.base import ToolContext

        tool = next(t for t in tools if t.name == what)
        ctx = ToolContext(audio=ref, samples=store.samples(ref))
        result = await tool(ctx, {})
        return result.error or "ok"

    status = asyncio.run(question() if mode == "strategy" else one_tool())
    peak = sampler.stop()
    main_peak = _field_mb(Path("/proc/self/status"), "VmHWM")
    return {
        "idle_mb": round(idle),
        "peak_mb": round(peak),
        "main_peak_mb": round(main_peak),
        "processes": len(_tree()),
        "status": status,
    }


def measure(mode: str, wav: Path, what: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--child", mode, str(wav), what],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[10, 60, 300])
    add_strategies_option(parser)
    parser.add_argument("--tools", action="store_true", help="each local tool alone")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    if not available():
        print(f"skipped: the recordings in {DATA} are missing")
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-clips-"))
    if args.tools:
        names = [  # the local tools that need no arguments
            name
            for name, tool in local_tools().items()
            if not getattr(tool, "parameters", {}).get("required")
        ]
        for seconds in args.seconds:
            wav = build_clip(seconds, folder)
            for name in names:
                print(f"{seconds:5.0f} s  {name:16} {measure('tool', wav, name)}", flush=True)
        return
    print("clip   strategy        idle MB  peak MB  (main process peak RSS, processes)  status")
    for seconds in args.seconds:
        wav = build_clip(seconds, folder)
        for strategy in args.strategies:
            r = measure("strategy", wav, strategy)
            if "error" in r:
                print(f"{seconds:4.0f} s {strategy:15} error: {r['error']}")
                continue
            print(
                f"{seconds:4.0f} s {strategy:15} {r['idle_mb']:7} {r['peak_mb']:8}  "
                f"({r['main_peak_mb']} MB, {r['processes']})  {r['status']}",
                flush=True,
            )


if __name__ == "__main__":
    main()
