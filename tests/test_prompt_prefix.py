"""The planner's prompt: the same prefix for every turn and question (the system prompt and
the tool list), so that providers' prompt caching applies; what varies comes after it; and
the request body goes to the server as built."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import openai
import pytest
import soundfile as sf

from agent.audio import AudioStore
from agent.chat_request import create_chat
from agent.context import tool_specs
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.remote import ModelConfig
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serve(server.app) as base:
        yield server, f"{base}/v1"


def _wav(path: Path, seconds: float) -> Path:
    sf.write(path, np.zeros(int(16_000 * seconds), dtype=np.float32), 16_000)
    return path


def _planner(url: str) -> OpenAICompatPlanner:
    config = ModelConfig.from_entry(
        {"name": "p", "provider": "openai_compatible", "model": "m", "base_url": url}
    )
    return OpenAICompatPlanner(config)


async def _ask(planner, store, wav: Path, question: str, budget: int) -> None:
    tools = [ScriptedTool("listen", "a dog"), ScriptedTool("measure", "3 s")]
    request = RunRequest(question, [store.add_file(wav)], planner, tools, budget=budget)
    async for _ in run_question(request, store=store):
        pass


async def test_every_turn_and_question_starts_with_the_same_prefix(fake, tmp_path):
    server, url = fake
    for _ in range(2):  # each question: a tool call, then the answer
        server.chat.append(Reply(tool_calls=[("listen", "{}")]))
        server.chat.append(Reply(text="<answer>A dog</answer>"))
    store = AudioStore(tmp_path / "audio")
    planner = _planner(url)
    await _ask(planner, store, _wav(tmp_path / "a.wav", 1.0), "What animal is heard?", 5)
    await _ask(planner, store, _wav(tmp_path / "b.wav", 2.5), "How long is it?", 9)
    first, second, third, _ = server.chat_bodies()

    # across questions (other recording, other budget): system prompt and tools unchanged
    assert third["messages"][0] == first["messages"][0]
    assert third["tools"] == first["tools"]
    # the recording and budget come with the question, after it
    question = first["messages"][-1]["content"]
    assert question.startswith("What animal is heard?")
    assert "1.0 s" in question and "5 calls" in question
    assert (
        "2.5 s" in third["messages"][-1]["content"]
        and "9 calls" in third["messages"][-1]["content"]
    )
    # within a run a turn only appends to the previous request
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["tools"] == first["tools"]


def test_the_audio_id_parameter_only_when_there_is_a_choice(tmp_path):
    store = AudioStore(tmp_path / "audio")
    one = store.add_file(_wav(tmp_path / "a.wav", 1.0))
    two = store.add_file(_wav(tmp_path / "b.wav", 2.0))
    tools = [ScriptedTool("listen", "a dog")]
    (single,) = tool_specs(tools, [one])
    assert "audio_id" not in single.parameters["properties"]
    (double,) = tool_specs(tools, [one, two])
    assert double.parameters["properties"]["audio_id"]["enum"] == ["audio1", "audio2"]


async def test_the_body_goes_as_built(fake):
    server, url = fake
    server.chat.append(Reply(text="hi"))
    client = openai.AsyncOpenAI(api_key="x", base_url=url, max_retries=0)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    request = {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
        "tools": tools,
        "temperature": 0.2,
        "extra_body": {"seed": 7},
    }
    response = await create_chat(client, request)
    assert response.choices[0].message.content == "hi"
    (body,) = server.chat_bodies()
    assert body == {
        "model": "m",
        "messages": request["messages"],
        "tools": tools,
        "temperature": 0.2,
        "seed": 7,
    }
    assert json.dumps(body)  # plain JSON all through
