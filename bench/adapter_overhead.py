"""Time the remote adapters' own overhead against a local server that answers instantly.

    python -m bench.adapter_overhead [--n 50]

For each operation it prints mean / median / p95 milliseconds, next to a bare HTTP POST
of the same request to the same server, so the difference is what the adapter (SDK,
message building, base64/wav encoding of the audio, parsing) costs. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from agent.audio import SAMPLE_RATE, AudioRef
from agent.planners.base import ChatMessage, ToolSpec
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.remote import ModelConfig
from agent.tools.base import ToolContext
from agent.tools.openai_audio import OpenAIAudioChatTool
from agent.tools.transcribe import RemoteTranscribeTool
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return (
        f"mean {statistics.mean(ms):7.2f}  median {statistics.median(ms):7.2f}  p95 {p95:7.2f} ms"
    )


async def timed(n: int, make) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        begun = time.perf_counter()
        await make()
        out.append(time.perf_counter() - begun)
    return out


async def main_async(n: int) -> None:
    server = FakeOpenAI()
    server.chat_fn = lambda body: Reply(
        text="Checking.", tool_calls=[("omni", '{"question": "what is heard?"}')]
    )
    server.transcripts.extend(
        [{"text": "hi", "segments": [{"start": 0, "end": 1, "text": "hi"}]}] * (n * 4)
    )
    with serve(server.app) as base:
        url = f"{base}/v1"
        config = ModelConfig(name="bench", provider="openai_compatible", model="m", base_url=url)
        planner = OpenAICompatPlanner(config)
        spec = ToolSpec("omni", "ask", {"type": "object", "properties": {"question": {}}})
        history = [ChatMessage("system", "You answer."), ChatMessage("user", "What is it?")]

        async def planner_turn() -> None:
            async for _ in planner.stream_turn(history, [spec]):
                pass

        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
        async with httpx.AsyncClient() as raw:

            async def bare_stream() -> None:
                async with raw.stream("POST", f"{url}/chat/completions", json=body) as resp:
                    async for _ in resp.aiter_bytes():
                        pass

            await planner_turn()  # warm the connection pools
            await bare_stream()
            print(f"planner turn (stream + tool call)   {stats(await timed(n, planner_turn))}")
            print(f"  bare HTTP stream, same server     {stats(await timed(n, bare_stream))}")

            omni = OpenAIAudioChatTool(config)
            whisper = RemoteTranscribeTool(config)
            server.chat_fn = lambda body: Reply(text="a sound")
            for seconds in (5, 60):
                ctx = noise_context(seconds)
                chat = await timed(n, lambda c=ctx: omni(c, {"question": "what is heard?"}))
                stt = await timed(n, lambda c=ctx: whisper(c, {}))
                print(f"audio chat, {seconds:>2} s audio             {stats(chat)}")
                print(f"transcription, {seconds:>2} s audio          {stats(stt)}")


def noise_context(seconds: int) -> ToolContext:
    rng = np.random.default_rng(0)
    samples = (0.1 * rng.standard_normal(seconds * SAMPLE_RATE)).astype(np.float32)
    folder = Path(tempfile.gettempdir())
    ref = AudioRef("0" * 64, folder, folder, float(seconds), "wav", SAMPLE_RATE, 1)
    return ToolContext(ref, samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=50, help="repetitions per operation")
    asyncio.run(main_async(parser.parse_args().n))


if __name__ == "__main__":
    main()
