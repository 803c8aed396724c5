"""Prompt-cache reads as a user meets them: the planner's provider reports cached input
tokens (OpenAI's ``prompt_tokens_details.cached_tokens``); each turn is priced with them at
the cache price, the run's totals count them, and the trace and the answer's footnote say
how many of the input tokens were cached."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from agent.audio import AudioStore
from agent.events import RunFinished, Thought
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.remote import ModelConfig
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from frontend.answer_text import footnote
from frontend.trace_calls import trace_rows, trace_totals
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

PRICES = {"input_per_mtok": 2.0, "cache_read_per_mtok": 0.5, "output_per_mtok": 8.0}


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serve(server.app) as base:
        yield server, f"{base}/v1"


async def test_cached_prompt_tokens_are_priced_counted_and_shown(fake, tmp_path: Path) -> None:
    server, url = fake
    server.chat.extend(
        [
            Reply(tool_calls=[("events", "{}")], usage=(1_500, 30), cached_tokens=0),
            Reply(text="<answer>Dog</answer>", usage=(1_700, 10), cached_tokens=1_280),
        ]
    )
    entry = {"name": "gpt", "provider": "openai_compatible", "model": "fake-model",
             "base_url": url, "prices": PRICES, "price_ref": False}  # fmt: skip
    planner = OpenAICompatPlanner(ModelConfig.from_entry(entry))
    wav = tmp_path / "tone.wav"
    sf.write(wav, np.zeros(16_000, dtype=np.float32), 16_000)
    store = AudioStore(tmp_path / "audio")
    request = RunRequest("Which animal?", [store.add_file(wav)], planner, [ScriptedTool("events")])
    events = [e async for e in run_question(request, store=store)]

    turns = [e for e in events if isinstance(e, Thought)]
    assert [t.usage.cache_read_tokens for t in turns] == [0, 1_280]
    fresh, cached = 1_700 - 1_280, 1_280  # the second turn: 420 fresh + 1,280 cache reads
    assert turns[1].cost == pytest.approx((fresh * 2.0 + cached * 0.5 + 10 * 8.0) / 1e6)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.input_tokens, finished.cache_read_tokens) == (3_200, 1_280)

    assert "3,200 in, 1,280 cached · 40 out" in footnote(finished)
    assert "tokens 3,200 in, 1,280 cached · 40 out" in trace_totals(events)


def test_a_tool_call_with_cached_input_shows_it_in_its_row() -> None:
    from agent.events import ToolCall, ToolResultEvent, Usage

    usage = Usage(input_tokens=2_000, output_tokens=50, cache_read_tokens=1_536)
    events = [
        ToolCall(run_id="r", seq=1, call_id="c1", tool="gpt_audio", model="gpt-audio"),
        ToolResultEvent(run_id="r", seq=2, call_id="c1", tool="gpt_audio", output="a dog",
                        usage=usage, cost=0.001),
    ]  # fmt: skip
    (row,) = trace_rows(events)
    assert "2,050 (1,536 cached)" in row


@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_compatible_api_reports_cached_prompt_tokens(tmp_path: Path, stream) -> None:
    """``/v1/chat/completions`` answers with the run's cached input tokens in OpenAI's own
    place, ``usage.prompt_tokens_details.cached_tokens``, streamed or not."""
    import openai
    from fastapi.testclient import TestClient

    from agent.events import Usage
    from agent.planners.base import FinalAnswer
    from agent.registry import Registry
    from agent.testing import ScriptedPlanner, ScriptedTurn
    from app import create_app
    from backend.host.settings import Settings
    from tests.client_kit import audio_message

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        if any(m.role == "tool" for m in messages):
            return ScriptedTurn(answer=FinalAnswer(text="Dog"))
        return ScriptedTurn(calls=[("audio_model", {})])

    registry = Registry()
    registry.register(ScriptedPlanner([turn]), kind="planner")
    usage = Usage(input_tokens=2_000, output_tokens=12, cache_read_tokens=1_536)
    registry.register(ScriptedTool("audio_model", "A dog barks.", usage=usage), kind="tool")
    settings = Settings(data_dir=tmp_path / "data", warm_up=False)
    with TestClient(create_app(settings, registry=registry, ui=False)) as http:
        client = openai.OpenAI(base_url="http://testserver/v1", api_key="x", http_client=http)
        asked = {"model": "scripted/react", "messages": [audio_message()]}
        if stream:
            options = {"stream": True, "stream_options": {"include_usage": True}}
            reported = list(client.chat.completions.create(**asked, **options))[-1].usage
        else:
            reported = client.chat.completions.create(**asked).usage
    assert reported is not None and reported.prompt_tokens == 2_000
    assert reported.prompt_tokens_details.cached_tokens == 1_536
