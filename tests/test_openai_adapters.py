"""OpenAI-compatible planner, audio-chat tool and transcription tool, driven through the
official ``openai`` SDK against a local server that speaks the wire protocol."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from agent.audio import AudioStore
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.remote import ModelConfig, Prices
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from agent.tools.base import ToolContext
from agent.tools.openai_audio import OpenAIAudioChatTool
from agent.tools.transcribe import RemoteTranscribeTool
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serve(server.app) as base:
        yield server, f"{base}/v1"


@pytest.fixture
def store(tmp_path: Path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", SECRET)


def config(url: str, name: str = "gpt", **options) -> ModelConfig:
    return ModelConfig.from_entry(
        {
            "name": name,
            "provider": "openai_compatible",
            "model": options.pop("model", "fake-model"),
            "base_url": url,
            "key_env": "FAKE_OPENAI_KEY",
            "prices": options.pop("prices", {"input_per_mtok": 2.0, "output_per_mtok": 8.0}),
            "max_retries": options.pop("max_retries", 3),
            "retry_base_delay_s": 0.01,
            **options,
        }
    )


async def run(planner, tools, store, audio, **kwargs):
    request = RunRequest(kwargs.pop("question", "What is it?"), [audio], planner, tools, **kwargs)
    return [e async for e in run_question(request, store=store)]


async def test_native_function_calling_with_an_audio_tool(fake, store, tone_wav):
    server, url = fake
    server.chat.extend(
        [
            Reply(
                text="I will ask the audio model.",
                tool_calls=[
                    ("omni", '{"question": "What animal is heard?", "audio_id": "audio1"}')
                ],
                usage=(300, 40),
            ),
            Reply(text="It barks. <answer>Dog</answer>", usage=(500, 10)),
        ]
    )
    tool_server = FakeOpenAI()
    tool_server.chat.append(Reply(text="A dog barking twice.", usage=(120, 8), audio_tokens=50))
    with serve(tool_server.app) as tool_base:
        omni = OpenAIAudioChatTool(
            config(
                f"{tool_base}/v1",
                "omni",
                model="Qwen/Qwen2.5-Omni-7B",
                prices={"input_per_mtok": 1.0, "audio_input_per_mtok": 10.0},
            )
        )
        audio = store.add_file(tone_wav)
        events = await run(
            OpenAICompatPlanner(config(url)), [omni], store, audio, choices=["Cat", "Dog"]
        )
    types = [e.type for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished", types
    answer = next(e for e in events if e.type == "answer")
    assert answer.choice == "Dog"
    result = next(e for e in events if e.type == "tool_result")
    assert result.output == "A dog barking twice." and result.error is None
    # audio tokens priced as audio: 70 text tokens at $1/M + 50 audio tokens at $10/M
    assert result.cost == pytest.approx(70e-6 + 50 * 10e-6)
    finished = events[-1]
    assert finished.input_tokens == 300 + 500 + 120 and finished.output_tokens == 40 + 10 + 8
    assert finished.cost == pytest.approx((800 * 2 + 50 * 8) / 1e6 + result.cost)

    first, second = server.chat_bodies()
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    schema = first["tools"][0]["function"]
    assert schema["name"] == "omni"
    assert "audio_id" not in schema["parameters"]["properties"]  # one recording: no choice
    assert "question" in schema["parameters"]["required"]
    # the tool result goes back as a tool message tied to the call id
    tool_msg = second["messages"][-1]
    assert tool_msg == {"role": "tool", "tool_call_id": "call_0", "content": "A dog barking twice."}
    assistant = second["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "omni"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["question"]

    (tool_body,) = tool_server.chat_bodies()
    parts = tool_body["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "What animal is heard?"}
    audio_part = parts[1]["input_audio"]
    assert audio_part["format"] == "wav"
    wav = base64.b64decode(audio_part["data"])
    samples, rate = sf.read(io.BytesIO(wav))
    assert rate == 16_000 and len(samples) == 16_000


async def test_reasoning_deltas_and_broken_arguments(fake, store, tone_wav):
    server, url = fake
    server.chat.extend(
        [
            Reply(reasoning="Hmm, think first.", text="Calling.", tool_calls=[("t", '{"x": ')]),
            Reply(text="<answer>done</answer>"),
        ]
    )
    tool = ScriptedTool("t")
    events = await run(OpenAICompatPlanner(config(url)), [tool], store, store.add_file(tone_wav))
    reasoning = [e.text for e in events if e.type == "planner_delta" and e.kind == "reasoning"]
    assert "".join(reasoning) == "Hmm, think first."
    thought = next(e for e in events if e.type == "thought")
    assert thought.reasoning == "Hmm, think first." and thought.text == "Calling."
    result = next(e for e in events if e.type == "tool_result")
    assert "not valid JSON" in result.error and tool.calls == []
    shown = server.chat_bodies()[1]["messages"][-1]
    assert shown["role"] == "tool" and shown["content"].startswith("ERROR:")


async def test_tag_protocol_for_endpoints_without_function_calling(fake, store, tone_wav):
    server, url = fake
    server.chat.extend(
        [
            Reply(
                text='Two checks. <tool_call>{"name": "a", "arguments": {"k": 1}}</tool_call>\n'
                '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
            ),
            Reply(text="Both agree. <answer>B</answer>"),
        ]
    )
    a, b = ScriptedTool("a", "from a"), ScriptedTool("b", "from b")
    planner = OpenAICompatPlanner(config(url, function_calling=False))
    events = await run(planner, [a, b], store, store.add_file(tone_wav), choices=["x", "y"])
    assert a.calls == [{"k": 1}] and b.calls == [{}]
    first, second = server.chat_bodies()
    assert "tools" not in first
    assert "<tool_call>" in first["messages"][0]["content"]  # instructions in the system prompt
    results = second["messages"][-1]
    assert results["role"] == "user"
    assert '<tool_result name="a"' in results["content"] and "from b" in results["content"]
    assert next(e for e in events if e.type == "answer").choice == "y"


async def test_retries_429_and_500_then_succeeds(fake, store, tone_wav):
    server, url = fake
    server.chat.extend([Reply(status=429), Reply(status=500), Reply(text="<answer>fine</answer>")])
    events = await run(OpenAICompatPlanner(config(url)), [], store, store.add_file(tone_wav))
    assert events[-1].type == "run_finished"
    assert len(server.chat_bodies()) == 3


async def test_gives_up_after_retries_with_a_clear_message(fake, store, tone_wav):
    server, url = fake
    server.chat.extend([Reply(status=503)] * 3)
    planner = OpenAICompatPlanner(config(url, max_retries=2))
    events = await run(planner, [], store, store.add_file(tone_wav))
    assert events[-1].type == "run_failed" and "503" in events[-1].message
    assert len(server.chat_bodies()) == 3


async def test_wrong_key_is_one_clear_message_without_the_key(fake, store, tone_wav):
    server, url = fake
    server.chat.append(Reply(status=401, error=f"Incorrect API key provided: {SECRET}"))
    events = await run(OpenAICompatPlanner(config(url)), [], store, store.add_file(tone_wav))
    failed = events[-1]
    assert failed.type == "run_failed" and failed.kind == "auth"
    assert "FAKE_OPENAI_KEY" in failed.message
    assert len(server.chat_bodies()) == 1  # a wrong key is not retried
    assert all(SECRET not in e.model_dump_json() for e in events)
    # the key did travel in the Authorization header, and only there
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_tool_errors_after_retries_reach_the_planner(fake, store, tone_wav):
    server, url = fake
    tool_server = FakeOpenAI()
    tool_server.chat.extend([Reply(status=429)] * 2)
    server.chat.extend(
        [
            Reply(tool_calls=[("omni", '{"question": "what?"}')]),
            Reply(text="The tool failed; guessing. <answer>Cat</answer>"),
        ]
    )
    with serve(tool_server.app) as tool_base:
        omni = OpenAIAudioChatTool(config(f"{tool_base}/v1", "omni", max_retries=1))
        events = await run(
            OpenAICompatPlanner(config(url)), [omni], store, store.add_file(tone_wav)
        )
    result = next(e for e in events if e.type == "tool_result")
    assert "429" in result.error
    assert server.chat_bodies()[1]["messages"][-1]["content"].startswith("ERROR:")


async def test_long_audio_is_split_into_windows_not_truncated(store, tone_wav):
    tool_server = FakeOpenAI()
    tool_server.chat_fn = lambda body: Reply(text="a tone")
    with serve(tool_server.app) as tool_base:
        omni = OpenAIAudioChatTool(config(f"{tool_base}/v1", "omni", max_audio_s=0.4))
        audio = store.add_file(tone_wav)
        result = await omni(ToolContext(audio, store.samples(audio)), {"question": "What?"})
    bodies = tool_server.chat_bodies()
    assert len(bodies) == 3 and result.data["windows"] == 3
    stated = [b["messages"][-1]["content"][0]["text"] for b in bodies]
    assert any("from 0.0 s to 0.3 s" in s for s in stated)
    assert any("to 1.0 s of a 1.0 s recording" in s for s in stated)
    assert "[0.3–0.7 s] a tone" in result.output
    total = sum(
        len(
            sf.read(
                io.BytesIO(base64.b64decode(b["messages"][-1]["content"][1]["input_audio"]["data"]))
            )[0]
        )
        for b in bodies
    )
    assert abs(total - 16_000) <= 3


async def test_transcription_with_segments_and_windows(store, tmp_path):
    # first half silent, second half a tone: the fake tells the windows apart by their bytes
    t = np.arange(8_000) / 16_000
    samples = np.concatenate([np.zeros(8_000), 0.3 * np.sin(2 * np.pi * 440 * t)])
    path = tmp_path / "half.wav"
    sf.write(path, samples, 16_000)
    # windows of at most 0.6 s: the cut falls at the quietest moment of 0.4..0.6 s

    def by_content(wav: bytes) -> dict:
        silent = not np.any(sf.read(io.BytesIO(wav))[0])
        word, start, end = ("hello", 0.0, 0.4) if silent else ("world", 0.1, 0.5)
        return {"text": word, "segments": [{"id": 0, "start": start, "end": end, "text": word}]}

    server = FakeOpenAI()
    server.transcript_fn = by_content
    with serve(server.app) as base:
        tool = RemoteTranscribeTool(
            config(
                f"{base}/v1",
                "whisper",
                model="whisper-1",
                max_audio_s=0.6,
                prices={"per_audio_minute": 0.006},
            )
        )
        audio = store.add_file(path)
        result = await tool(ToolContext(audio, store.samples(audio)), {"language": "en"})
    assert result.data["text"] == "hello world"
    first, second = result.data["segments"]
    assert first == {"start": 0.0, "end": 0.4, "text": "hello"}
    assert second["text"] == "world" and 0.5 <= second["start"] <= 0.55  # cut + 0.1 s
    assert result.cost == pytest.approx(0.006 / 60 * 1.0)
    fields = server.requests[0].body
    assert fields["model"] == "whisper-1" and fields["response_format"] == "verbose_json"
    assert fields["language"] == "en" and fields["_file_head"] == "RIFF"
    assert fields["timestamp_granularities[]"] == "segment"


def test_prices_cost():
    from agent.events import Usage

    prices = Prices(input_per_mtok=1, output_per_mtok=4, per_audio_minute=0.5, per_request=0.01)
    usage = Usage(input_tokens=1_000_000, output_tokens=250_000, audio_seconds=120)
    assert prices.cost(usage) == pytest.approx(1 + 1 + 1 + 0.01)


def test_error_bodies_of_any_shape_are_classified_without_leaking_credentials():
    import httpx
    import openai

    from agent.openai_client import classify_error

    cfg = ModelConfig(
        name="x", provider="openai_compatible", model="m",
        base_url="https://user:s3cret-token@models.example:8000/v1",
    )  # fmt: skip
    response = httpx.Response(502, request=httpx.Request("POST", "https://models.example"))
    error = classify_error(
        openai.InternalServerError("bad gateway", response=response, body={"error": "upstream"}),
        cfg,
    )
    assert error.kind == "http_502" and "upstream" in str(error) and "'x'" in str(error)
    assert "s3cret" not in str(error) and "models.example:8000" in str(error)
