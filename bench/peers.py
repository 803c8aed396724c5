"""The peer comparison: our loop against smolagents and qwen-agent, timed alike.

    python -m bench.peers [--reps 20] [--delays 0 0.5]       (also section 3 of bench.perf)

Each contender lives in its own process (a *worker*) for the whole comparison and answers
one question per ``run`` line on its standard input: three tools that the model server
(``bench.peer_server``) asks for in one turn, then the answer. Contenders:

- ``ours``: ``run_question`` with the OpenAI-compatible planner, streamed as in production;
- ``ours_stored``: the same through the service, every event stored in SQLite, the tool
  cache in the database, as the app runs it (the path of ``POST /api/.../ask``);
- ``smolagents``: its ``ToolCallingAgent`` over ``OpenAIServerModel``;
- ``qwen_agent``: its ``Assistant``.

Every worker times two things per question, the same way: the construction of what a caller
builds per question (our ``RunRequest``; smolagents' agent; qwen-agent's ``Assistant``: each
framework's model client is built once and reused, as ours is) and the run itself. Both are
reported, so the comparison reads the same with construction outside the timer or inside it.
Repetitions are interleaved (one question per contender per round, the order rotated each
round), and each of ours is divided by the same round's peer: the median of those ratios is
the figure, which a busy moment of the machine disturbs far less than absolute times.

The peers are installed apart from the app (requirements-peers.txt); a worker imports them
only when asked for them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peer_server import TOOLS

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Use all three tools, then answer."
PEERS = ("smolagents", "qwen_agent")
OURS = ("ours", "ours_stored")

# A worker's question: build what a caller builds per question, then run it. Bookkeeping of
# the bench itself (a fresh conversation, an empty tool cache) is done before the timer.
Question = tuple[Callable[[], Any], Callable[[Any], None]]
Setup = Callable[[], None]


# -- the workers (one per contender, each in its own process) ----------------------------------


def _silence_wav(folder: Path) -> Path:
    import numpy as np
    import soundfile as sf

    path = folder / "silence.wav"
    sf.write(path, np.zeros(16_000, dtype=np.float32), 16_000)
    return path


def _ours(base_url: str, delay: float, stored: bool) -> tuple[Question, Setup, Callable[[], None]]:
    """Our question, the bench's bookkeeping before each, and what closes the worker."""
    import asyncio

    from agent.audio import AudioStore
    from agent.planners.openai_compat import OpenAICompatPlanner
    from agent.remote import ModelConfig
    from agent.run import RunRequest, run_question
    from agent.testing import ScriptedTool

    config = ModelConfig(name="bench", provider="openai_compatible", model="m", base_url=base_url)
    tools = [ScriptedTool(name, "ok", delay_s=delay) for name in TOOLS]
    tmp = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    loop = asyncio.new_event_loop()
    planner = OpenAICompatPlanner(config)  # built once, as the registry builds it
    if not stored:
        store = AudioStore(tmp / "audio")
        audio = store.add_file(_silence_wav(tmp))

        def build() -> Any:
            return RunRequest(QUESTION, [audio], planner, tools, strategy="react")

        async def answer(request: Any) -> None:
            async for _ in run_question(request, store=store):
                pass

        question = (build, lambda request: loop.run_until_complete(answer(request)))
        return question, lambda: None, loop.close

    from agent.registry import Registry
    from app import create_service
    from backend.host.settings import Settings
    from backend.service import AskRequest
    from backend.service.owned import OwnedService

    registry = Registry()
    registry.register(planner, kind="planner")
    for tool in tools:
        registry.register(tool, kind="tool")
    settings = Settings(data_dir=tmp, owner_runs_per_minute=0, owner_max_runs=0)
    raw = create_service(settings, registry)
    raw.runs.warmed.result(timeout=120)  # start-up over: what it warms in the background
    service = OwnedService(raw, "bench")
    audio_id = service.upload_file(_silence_wav(tmp)).id
    conversations: list[str] = []

    def setup() -> None:
        raw.store.tool_cache.clear_tool_cache()  # every question calls its tools
        conversations.append(service.data.create_conversation().id)  # no history

    def build_stored() -> Any:
        ask = AskRequest(QUESTION, audio_id=audio_id, planner="bench", tools=[*TOOLS])
        return conversations[-1], ask

    async def answer_stored(built: Any) -> None:
        # As ``POST /api/conversations/{id}/ask`` answers (backend.http.api): the checks and the
        # question stored in one thread trip, the run started from the loop, then followed.
        conv_id, ask = built
        request, _ = await asyncio.to_thread(raw.prepare, conv_id, ask, owner=service.owner)
        run_ids = raw.start_runs(conv_id, [request], owner=service.owner)
        async for _ in raw.follow(run_ids):
            pass

    def close() -> None:
        raw.close()
        raw.store.close()
        loop.close()

    question = (build_stored, lambda built: loop.run_until_complete(answer_stored(built)))
    return question, setup, close


def _smolagents(base_url: str, delay: float) -> Question:
    from smolagents import OpenAIServerModel, Tool, ToolCallingAgent

    def make(tool_name: str) -> Tool:
        class Sleepy(Tool):
            name = tool_name
            description = f"Bench tool {tool_name}."
            inputs: dict[str, Any] = {}
            output_type = "string"

            def forward(self) -> str:
                if delay:
                    time.sleep(delay)
                return "ok"

        return Sleepy()

    model = OpenAIServerModel(model_id="m", api_base=base_url, api_key="EMPTY")
    tools = [make(name) for name in TOOLS]

    def build() -> Any:
        return ToolCallingAgent(tools=tools, model=model, max_steps=4, verbosity_level=-1)

    return build, lambda agent: agent.run(QUESTION)


def _qwen_agent(base_url: str, delay: float) -> Question:
    from qwen_agent.agents import Assistant
    from qwen_agent.tools.base import BaseTool

    def make(tool_name: str) -> BaseTool:
        class Sleepy(BaseTool):
            name = tool_name
            description = f"Bench tool {tool_name}."
            parameters: list[Any] = []

            def call(self, params: Any, **kwargs: Any) -> str:
                if delay:
                    time.sleep(delay)
                return "ok"

        return Sleepy()

    llm = {
        "model": "m",
        "model_server": base_url,
        "api_key": "EMPTY",
        # Its default function-calling prompt (tools described in the system message, calls
        # parsed from the text): its raw-API mode sends tool messages the OpenAI API rejects.
        "generate_cfg": {"max_retries": 0, "parallel_function_calls": True},
    }
    tools = [make(name) for name in TOOLS]

    def build() -> Any:
        return Assistant(llm=llm, function_list=tools)

    def run(bot: Any) -> None:
        for _ in bot.run(messages=[{"role": "user", "content": QUESTION}]):
            pass

    return build, run


def worker(contender: str, base_url: str, delay: float, warm: bool) -> None:
    """Answer one question per ``run`` line; print its times as JSON (seconds)."""
    close: Callable[[], None] = lambda: None  # noqa: E731
    setup: Setup = lambda: None  # noqa: E731
    if contender in OURS:
        question, setup, close = _ours(base_url, delay, stored=contender == "ours_stored")
    elif contender == "smolagents":
        question = _smolagents(base_url, delay)
    elif contender == "qwen_agent":
        question = _qwen_agent(base_url, delay)
    else:
        raise SystemExit(f"unknown contender {contender!r}")
    build, run = question
    if warm:  # one question first: lazy imports, the first connection
        setup()
        run(build())
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        setup()
        begun, cpu = time.perf_counter(), time.process_time()
        built = build()
        constructed = time.perf_counter()
        run(built)
        done = time.perf_counter()
        times = {"construct": constructed - begun, "run": done - constructed}
        print(json.dumps({**times, "cpu": time.process_time() - cpu}), flush=True)
    close()


# -- the comparison (in the bench's process) ----------------------------------------------------


def peers_python() -> str | None:
    """A Python that can import both peers, or None."""
    candidates = [os.environ.get("AUDIO_AGENT_PEERS_PYTHON"), str(ROOT / ".venv-peers/bin/python")]
    candidates.append(sys.executable)
    for python in candidates:
        if not python or not Path(python).exists():
            continue
        probe = subprocess.run(
            [python, "-c", "import smolagents, qwen_agent"], capture_output=True, cwd=ROOT
        )
        if probe.returncode == 0:
            return python
    return None


class Worker:
    """One contender's process; ``ask`` runs one question and returns its times."""

    def __init__(self, python: str, contender: str, base: str, delay: float, warm: bool = True):
        self.name = contender
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        args = [python, "-m", "bench.peers", "--worker", contender, base, str(delay)]
        self.proc = subprocess.Popen(
            args + ([] if warm else ["--cold"]),
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._read()  # ready

    def _read(self) -> dict[str, float]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        stderr = self.proc.stderr.read() if self.proc.stderr else ""
        raise RuntimeError(f"{self.name} worker ended: {stderr.strip()[-600:]}")

    def ask(self) -> dict[str, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@dataclass
class Comparison:
    """Times per contender (seconds, one per round) for one tool delay."""

    delay: float
    runs: dict[str, list[float]] = field(default_factory=dict)
    constructs: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)  # the worker's CPU, both parts
    server_connections: int = 0
    server_requests: int = 0

    def totals(self, name: str) -> list[float]:
        return [r + c for r, c in zip(self.runs[name], self.constructs[name], strict=True)]

    def ratio(self, ours: str, peer: str, inside: bool) -> float:
        """Median over rounds of ours / peer (construction inside the timer or not)."""
        pick = self.totals if inside else self.runs.__getitem__
        pairs = zip(pick(ours), pick(peer), strict=True)
        return statistics.median(a / b for a, b in pairs)


def compare(python: str, delay: float, reps: int, contenders: tuple[str, ...]) -> Comparison:
    """Interleaved rounds of one question per contender against one ``PeerServer``."""
    from bench.peer_server import PeerServer
    from tests.servers import serve

    server = PeerServer()
    out = Comparison(delay)
    with serve(server) as base:
        url = f"{base}/v1"
        workers = [
            Worker(sys.executable if name in OURS else python, name, url, delay)
            for name in contenders
        ]
        try:
            for round_ in range(reps):
                shift = round_ % len(workers)
                for w in workers[shift:] + workers[:shift]:
                    times = w.ask()
                    out.runs.setdefault(w.name, []).append(times["run"])
                    out.constructs.setdefault(w.name, []).append(times["construct"])
                    out.cpu.setdefault(w.name, []).append(times["cpu"])
        finally:
            for w in workers:
                w.close()
    out.server_connections, out.server_requests = server.connections, server.requests
    return out


def first_run(reps: int, delay: float = 0.0) -> tuple[float, float]:
    """Through the service in fresh processes: the first question's time and the median of
    the warm ones after it (seconds), medians over ``reps`` processes."""
    from bench.peer_server import PeerServer
    from tests.servers import serve

    firsts, warms = [], []
    with serve(PeerServer()) as base:
        for _ in range(reps):
            w = Worker(sys.executable, "ours_stored", f"{base}/v1", delay, warm=False)
            try:
                times = [w.ask() for _ in range(6)]
            finally:
                w.close()
            firsts.append(times[0]["run"] + times[0]["construct"])
            warms.append(statistics.median(t["run"] + t["construct"] for t in times[1:]))
    return statistics.median(firsts), statistics.median(warms)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def report(result: Comparison) -> None:
    label = "instant tools" if not result.delay else f"{result.delay:g} s tools"
    print(f"{label} ({len(next(iter(result.runs.values())))} interleaved rounds):")
    print(f"  {'':12} {'run, median':>14} {'p95':>11} {'construction':>13} {'CPU, both':>11}")
    for name, runs in result.runs.items():
        ordered = sorted(runs)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        construct = statistics.median(result.constructs[name])
        cpu = statistics.median(result.cpu[name])
        print(
            f"  {name:12} {_ms(statistics.median(runs)):>14} {_ms(p95):>11} {_ms(construct):>13}"
            f" {_ms(cpu):>11}"
        )
    for ours in (n for n in OURS if n in result.runs):
        for peer in (p for p in PEERS if p in result.runs):
            outside = result.ratio(ours, peer, inside=False)
            inside = result.ratio(ours, peer, inside=True)
            print(
                f"  {ours} / {peer}: x{outside:.3f} (construction outside the timer), "
                f"x{inside:.3f} (inside); median of per-round ratios"
            )
    print(
        f"  model server: {result.server_requests} requests on {result.server_connections} "
        "connections (one per worker when clients keep them alive)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Our loop against smolagents and qwen-agent.")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--delays", type=float, nargs="+", default=[0.0, 0.5])
    parser.add_argument("--contenders", default=",".join(OURS + PEERS))
    parser.add_argument("--first-run", type=int, default=0, help="fresh processes to measure")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--cold", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        contender, base, delay = args.worker
        worker(contender, base, float(delay), warm=not args.cold)
        return
    contenders = tuple(filter(None, args.contenders.split(",")))
    python = peers_python()
    if python is None and any(c in PEERS for c in contenders):
        print(
            "peers skipped: smolagents and qwen-agent are not installed. Install them apart "
            "from the app:\n  python -m venv --system-site-packages .venv-peers\n"
            "  .venv-peers/bin/pip install -r requirements-peers.txt\n"
            "(or point AUDIO_AGENT_PEERS_PYTHON at a Python that has them)"
        )
        contenders = tuple(c for c in contenders if c in OURS)
    for delay in args.delays:
        report(compare(python or sys.executable, delay, args.reps, contenders))
    if args.first_run:
        first, warm = first_run(args.first_run)
        print(
            f"through the service, fresh process: first question {_ms(first)}, warm "
            f"{_ms(warm)}: x{first / warm:.2f} (median of {args.first_run} processes)"
        )


if __name__ == "__main__":
    main()
