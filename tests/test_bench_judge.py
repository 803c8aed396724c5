"""MMAU-Pro's open-ended items judged by a configured LLM judge, through the official SDK
against a local server speaking the OpenAI protocol; not scored without one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.planners.base import FinalAnswer
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.registry import Registry
from agent.remote import ModelConfig
from agent.testing import ScriptedPlanner, ScriptedTurn
from bench import run_command
from bench.__main__ import parser
from storage import Store
from storage.benchmarks import BenchRecords
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

FIXTURES = Path(__file__).parent / "fixtures"
ROWS = [
    {"id": "open1", "audio_path": ["dog_bark_esc50.wav"], "question": "What happens?",
     "choices": [], "answer": "A dog barks several times.", "category": "open"},
    {"id": "multi1", "audio_path": ["dog_bark_esc50.wav", "digit_6_theo_4.wav"],
     "question": "Which recording has speech?", "choices": ["the first", "the second"],
     "answer": "the second", "category": "multi"},
    {"id": "if1", "audio_path": ["digit_6_theo_4.wav"], "question": "Say the number in capitals.",
     "choices": [], "answer": "", "category": "instruction following",
     "task_identifier": "All Uppercase", "kwargs": {}},
]  # fmt: skip


@pytest.fixture
def judge_server() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI()
    server.chat_fn = lambda body: Reply(
        text="CORRECTNESS: 4 - right\nRELEVANCE: 5 - on topic\nCOMPLETENESS: 3 - short\n"
        "CLARITY: 4 - clear\nOVERALL: 4 - good"
    )
    with serve(server.app) as base:
        yield server, f"{base}/v1"


def registry(judge_url: str | None) -> Registry:
    reg = Registry()
    answers = {"What happens?": "A dog barks.", "Which recording has speech?": "the second",
               "Say the number in capitals.": "SIX"}  # fmt: skip

    def answer(messages, tools, force) -> ScriptedTurn:
        question = next(m.data["question"] for m in messages if "question" in m.data)
        text = answers[question]
        return ScriptedTurn(text, answer=FinalAnswer(text))

    reg.register(ScriptedPlanner([answer], name="scripted"), kind="planner")
    if judge_url:
        config = ModelConfig.from_entry(
            {"name": "judge", "provider": "openai_compatible", "model": "qwen2.5-7b-instruct",
             "base_url": judge_url, "max_retries": 0}, {},
        )  # fmt: skip
        reg.register(OpenAICompatPlanner(config), kind="planner")
    return reg


def run(tmp_path: Path, reg: Registry, *extra: str) -> dict:
    questions = tmp_path / "pro.json"
    questions.write_text(json.dumps(ROWS))
    args = parser().parse_args([
        "run", "--questions", str(questions), "--audio-dir", str(FIXTURES),
        "--data-dir", str(tmp_path / "data"), "--executor", "inline", "--planner", "scripted",
        "--tools", "none", "--quiet", *extra,
    ])  # fmt: skip
    return run_command.run(args, registry=reg)


def test_open_item_judged_and_weighted_with_the_others(tmp_path: Path, judge_server) -> None:
    server, url = judge_server
    report = run(tmp_path, registry(url), "--judge", "judge")
    pro = report["configurations"][0]["mmau_pro"]
    assert pro["categories"]["open"] == {"n": 1, "score": 0.8}  # overall 4 of 5
    assert pro["categories"]["multi"]["score"] == 1.0
    assert pro["categories"]["instruction following"]["score"] == 1.0
    assert pro["not_scored"] == {}
    assert pro["weighted_performance"] == pytest.approx((0.8 + 1 + 1) / 3, abs=1e-4)
    (body,) = server.chat_bodies()
    prompt = body["messages"][-1]["content"]
    assert "A dog barks several times." in prompt and "A dog barks." in prompt
    assert body["model"] == "qwen2.5-7b-instruct" and body["temperature"] == 0.1


def test_without_a_judge_open_items_are_reported_not_scored(tmp_path: Path) -> None:
    report = run(tmp_path, registry(None))
    config = report["configurations"][0]
    assert config["mmau_pro"]["not_scored"] == {"open": 1}
    assert "open" not in config["mmau_pro"]["categories"]
    assert config["scored"] == 2 and config["not_scored"] == 1 and config["accuracy"] == 100.0


def test_a_judge_that_fails_leaves_the_item_not_scored_with_the_reason(tmp_path, judge_server):
    server, url = judge_server
    server.chat_fn = lambda body: Reply(status=500, error="judge overloaded")
    report = run(tmp_path, registry(url), "--judge", "judge")
    assert report["configurations"][0]["mmau_pro"]["not_scored"] == {"open": 1}
    store = Store.open(f"sqlite:///{tmp_path / 'data' / 'audio_agent.sqlite3'}")
    try:
        rows = BenchRecords(store).results(report["bench_run"])
    finally:
        store.close()
    (open_row,) = [r for r in rows if r.item_id == "open1"]
    assert "the judge failed" in open_row.score["not_scored"]  # type: ignore[index]
