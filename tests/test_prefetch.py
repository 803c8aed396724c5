"""Speculative prefetch never delays the planner's first token: with a planner served on
this machine, prefetched analyses wait for the end of its first turn; with any other
planner they start when the question arrives."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from agent.audio import AudioStore
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.prefetch import shares_this_machine
from agent.remote import ModelConfig
from agent.run import RunRequest, run_question
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from agent.tools.base import ToolContext, ToolResult
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve


class StartClock(ScriptedTool):
    """A prefetched tool that notes when it started."""

    prefetch = True

    def __init__(self) -> None:
        super().__init__("facts", "loud")
        self.started: list[float] = []

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        self.started.append(time.monotonic())
        return await super().__call__(ctx, arguments)


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    with serve(server.app) as base:
        yield server, base


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    path = tmp_path / "a.wav"
    sf.write(path, np.zeros(16_000, dtype=np.float32), 16_000)
    return path


async def _first_thought_and_start(planner, wav: Path, tmp_path: Path) -> tuple[float, float]:
    store = AudioStore(tmp_path / "audio")
    tool = StartClock()
    request = RunRequest("Is it loud?", [store.add_file(wav)], planner, [tool])
    thought = None
    async for event in run_question(request, store=store):
        if event.type == "thought" and thought is None:
            thought = time.monotonic()
    assert thought is not None and tool.started, "the planner answered and the tool ran"
    return thought, tool.started[0]


async def test_a_planner_on_this_machine_gets_the_cores_for_its_first_turn(fake, wav, tmp_path):
    server, base = fake
    # its prompt processing takes a while, then it asks for the prefetched analysis
    server.chat.append(Reply(text="Let me measure.", tool_calls=[("facts", "{}")], delay_s=0.4))
    server.chat.append(Reply(text="<answer>Yes</answer>"))
    config = ModelConfig.from_entry(
        {"name": "local", "provider": "openai_compatible", "model": "m", "base_url": f"{base}/v1"}
    )
    thought, started = await _first_thought_and_start(OpenAICompatPlanner(config), wav, tmp_path)
    assert started >= thought - 0.01  # the prefetched analysis waited for the first turn


async def test_with_any_other_planner_prefetch_starts_at_once(wav, tmp_path):
    planner = ScriptedPlanner(
        [ScriptedTurn("Thinking.", calls=[("facts", {})]), ScriptedTurn("<answer>Yes</answer>")],
        delay_s=0.2,
    )
    thought, started = await _first_thought_and_start(planner, wav, tmp_path)
    assert started < thought  # started while the planner was still thinking


def _llm(url: str | None) -> Any:
    return SimpleNamespace(is_llm=True, config=SimpleNamespace(url=lambda: url))


def test_which_planners_share_this_machine():
    assert shares_this_machine(_llm("http://127.0.0.1:8080/v1"))
    assert shares_this_machine(_llm("http://localhost:11434/v1"))
    assert shares_this_machine(_llm("http://[::1]:8000/v1"))
    assert not shares_this_machine(_llm("https://api.deepseek.com"))
    assert not shares_this_machine(_llm("http://10.0.0.5:8000/v1"))
    assert not shares_this_machine(_llm(None))  # the provider's default endpoint
    assert not shares_this_machine(SimpleNamespace(is_llm=False))  # the offline rule planner
