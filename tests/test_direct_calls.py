"""A tool called directly by another program, run through the loop by ``DirectCallPlanner``:
exactly the call asked for, its result as the answer, a failure as a degraded run, and the
daily spend check when the call uses a priced model."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agent import events as ev
from agent.audio import AudioStore
from agent.planners.direct import DIRECT_BUDGET, DirectCallPlanner
from agent.remote import Prices
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool


@pytest.fixture
def store(tmp_path: Path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


async def run(store: AudioStore, audio_file: Path, tool: ScriptedTool, arguments: dict):
    request = RunRequest(
        question=f"{tool.name} call",
        audio=[store.add_file(audio_file)],
        planner=DirectCallPlanner(tool.name, arguments, caller="a test"),
        tools=[tool],
        budget=DIRECT_BUDGET,
    )
    return [e async for e in run_question(request, store=store)]


async def test_exactly_the_call_asked_for_and_its_output_as_the_answer(store, tone_wav):
    tool = ScriptedTool("transcribe", "hello there", data={"segments": [{"start": 0.1}]})
    events = await run(store, tone_wav, tool, {"language": "en"})
    assert [e.type for e in events] == [
        "run_started", "planner_delta", "thought", "tool_call", "tool_result", "thought",
        "answer", "run_finished",
    ]  # fmt: skip
    assert tool.calls == [{"language": "en"}]
    started, call, answer, finished = events[0], events[3], events[6], events[-1]
    assert started.planner == "direct" and started.planner_label.startswith(
        "Tool called directly by a test"
    )
    assert call.tool == "transcribe" and call.arguments == {"language": "en"}
    assert isinstance(answer, ev.Answer) and answer.text == "hello there" and not answer.forced
    assert finished.status == "ok" and finished.calls == 1


async def test_a_failing_tool_is_a_degraded_run_with_the_error_as_answer(store, tone_wav):
    tool = ScriptedTool("transcribe", error="the model is missing")
    events = await run(store, tone_wav, tool, {})
    answer = next(e for e in events if e.type == "answer")
    assert answer.text == "Failed: transcribe: the model is missing"
    assert events[-1].status == "degraded" and events[-1].degraded_tools == ["transcribe"]


def test_priced_only_when_the_call_uses_a_priced_model():
    """The planner carries the priced model's configuration (what the spend check reads);
    the MCP test of the daily limit shows the refusal end to end."""
    priced = SimpleNamespace(config=SimpleNamespace(prices=Prices(per_request=0.01)))
    assert DirectCallPlanner("gpt_audio", {}, priced=priced).config is priced.config
    assert not hasattr(DirectCallPlanner("transcribe", {}, priced=ScriptedTool("t")), "config")
