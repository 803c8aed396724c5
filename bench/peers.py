"""One contender of the peer comparison, timed in its own process (``bench.perf`` runs it).

    python -m bench.peers CONTENDER BASE_URL DELAY_S REPS

CONTENDER is ``ours`` (run_question + the OpenAI-compatible planner), ``ours_stored`` (the
same through the service, every event written to SQLite), ``smolagents`` (ToolCallingAgent)
or ``qwen_agent`` (Assistant). Each answers one question with three tools that the fake
server asks for in one turn; each tool sleeps DELAY_S (0 = instant). Prints a JSON list of
wall times in seconds, one per repetition, after one warm-up run.

The peers are installed in a separate environment (requirements-peers.txt); this module
imports them only when asked for them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = ("tool_a", "tool_b", "tool_c")
QUESTION = "Use all three tools, then answer."


def _ours(base_url: str, delay: float, reps: int, stored: bool) -> list[float]:
    from agent.audio import AudioStore
    from agent.remote import ModelConfig
    from agent.run import RunRequest, run_question
    from agent.testing import ScriptedTool

    config = ModelConfig(name="bench", provider="openai_compatible", model="m", base_url=base_url)
    tools = [ScriptedTool(name, "ok", delay_s=delay) for name in TOOLS]
    tmp = Path(tempfile.mkdtemp(prefix="bench-peers-"))

    async def main() -> list[float]:
        from agent.planners.openai_compat import OpenAICompatPlanner

        planner = OpenAICompatPlanner(config)
        if not stored:
            store = AudioStore(tmp / "audio")
            audio = store.add_file(_silence_wav(tmp))

            async def once() -> None:
                request = RunRequest(QUESTION, [audio], planner, tools, strategy="react")
                async for _ in run_question(request, store=store):
                    pass
        else:
            from agent.registry import Registry
            from app import create_service
            from backend.owned import OwnedService
            from backend.service import AskRequest
            from backend.settings import Settings

            registry = Registry()
            registry.register(planner, kind="planner")
            for tool in tools:
                registry.register(tool, kind="tool")
            raw = create_service(Settings(data_dir=tmp, warm_up=False), registry)
            service = OwnedService(raw, "bench")
            wav = _silence_wav(tmp)
            audio_id = service.upload_file(wav).id

            async def once() -> None:
                raw.store.clear_tool_cache()  # every run calls its tools
                conv = service.store.create_conversation()  # no history: the same first turn
                ask = AskRequest(QUESTION, audio_id=audio_id, planner="bench", tools=list(TOOLS))
                request, _ = await asyncio.to_thread(service.prepare, conv.id, ask)
                async for _ in service.stream(conv.id, request):
                    pass

        await once()  # warm-up: connection pool, imports
        times = []
        for _ in range(reps):
            begun = time.perf_counter()
            await once()
            times.append(time.perf_counter() - begun)
        return times

    return asyncio.run(main())


def _silence_wav(folder: Path) -> Path:
    import numpy as np
    import soundfile as sf

    path = folder / "silence.wav"
    sf.write(path, np.zeros(16_000, dtype=np.float32), 16_000)
    return path


def _smolagents(base_url: str, delay: float, reps: int) -> list[float]:
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

    def once() -> None:
        agent = ToolCallingAgent(tools=tools, model=model, max_steps=4, verbosity_level=-1)
        agent.run(QUESTION)

    return _timed(once, reps)


def _qwen_agent(base_url: str, delay: float, reps: int) -> list[float]:
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

    def once() -> None:
        bot = Assistant(llm=llm, function_list=tools)
        for _ in bot.run(messages=[{"role": "user", "content": QUESTION}]):
            pass

    return _timed(once, reps)


def _timed(once: Any, reps: int) -> list[float]:
    once()  # warm-up
    times = []
    for _ in range(reps):
        begun = time.perf_counter()
        once()
        times.append(time.perf_counter() - begun)
    return times


def main(argv: list[str]) -> None:
    contender, base_url, delay, reps = argv[0], argv[1], float(argv[2]), int(argv[3])
    if contender == "ours":
        times = _ours(base_url, delay, reps, stored=False)
    elif contender == "ours_stored":
        times = _ours(base_url, delay, reps, stored=True)
    elif contender == "smolagents":
        times = _smolagents(base_url, delay, reps)
    elif contender == "qwen_agent":
        times = _qwen_agent(base_url, delay, reps)
    else:
        raise SystemExit(f"unknown contender {contender!r}")
    print(json.dumps(times))


if __name__ == "__main__":
    main(sys.argv[1:])
