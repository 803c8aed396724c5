"""The loop with scripted planners and tools: budget, forced answer, concurrency,
cache, tool errors, answer matching."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent import events as ev
from agent.answer import match_choice, token_rule_correct
from agent.audio import AudioStore
from agent.planners.base import FinalAnswer, ToolCallRequest
from agent.run import RunRequest, run_question
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from agent.tools.base import MemoryToolCache


@pytest.fixture
def store(tmp_path: Path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


async def collect(req: RunRequest, store: AudioStore, **kwargs) -> list[ev.Event]:
    return [e async for e in run_question(req, store=store, **kwargs)]


def of_type(events: list[ev.Event], kind: str) -> list:
    return [e for e in events if e.type == kind]


async def test_simple_run_emits_the_spine_in_order(store, tone_wav):
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("sound_events", "Top classes: Dog 0.9")
    planner = ScriptedPlanner(
        [
            ScriptedTurn("I will check the sound.", calls=[("sound_events", {})]),
            ScriptedTurn("The tool heard a dog. <answer>Dog</answer>"),
        ]
    )
    events = await collect(
        RunRequest("What animal?", [audio], planner, [tool], choices=["Cat", "Dog"]), store
    )
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "run_started" and events[-1].type == "run_finished"
    assert "".join(e.text for e in of_type(events, "planner_delta")).startswith("I will check")
    (call,) = of_type(events, "tool_call")
    (result,) = of_type(events, "tool_result")
    assert call.call_id == result.call_id and result.output == "Top classes: Dog 0.9"
    (answer,) = of_type(events, "answer")
    assert answer.choice == "Dog" and answer.match_rule == "exact"
    assert events[-1].calls == 1 and events[-1].status == "ok"
    # the planner saw the tool's result on its second turn
    tool_msgs = [m for m in planner.seen[1].messages if m.role == "tool"]
    assert tool_msgs[0].content == "Top classes: Dog 0.9"


async def test_one_turns_calls_run_concurrently(store, tone_wav):
    audio = store.add_file(tone_wav)
    slow_a = ScriptedTool("a", "A", delay_s=0.5)
    slow_b = ScriptedTool("b", "B", delay_s=0.5)
    planner = ScriptedPlanner(
        [ScriptedTurn("both", calls=[("a", {}), ("b", {})]), ScriptedTurn("<answer>x</answer>")]
    )
    begun = time.monotonic()
    events = await collect(RunRequest("q", [audio], planner, [slow_a, slow_b]), store)
    elapsed = time.monotonic() - begun
    assert elapsed < 0.9, f"two 0.5 s tools took {elapsed:.2f} s: not concurrent"
    assert len(of_type(events, "tool_result")) == 2


async def test_budget_then_forced_answer(store, tone_wav):
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("probe", "nothing conclusive")

    # A planner that would call tools forever; new arguments each time (no cache hits).
    def greedy(messages, tools, force):
        if force:
            return ScriptedTurn("forced: <answer>Cat</answer>")
        return ScriptedTurn("again", calls=[("probe", {"n": len(messages)})])

    planner = ScriptedPlanner([greedy])
    events = await collect(
        RunRequest("q", [audio], planner, [tool], choices=["Cat", "Dog"], budget=3), store
    )
    assert len(tool.calls) == 3
    assert planner.seen[-1].force_answer is True and planner.seen[-1].tools == []
    (answer,) = of_type(events, "answer")
    assert answer.forced and answer.choice == "Cat"
    assert events[-1].type == "run_finished" and events[-1].status == "forced"


async def test_calls_beyond_the_budget_in_one_turn_are_reported_not_run(store, tone_wav):
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("probe", "ok")
    planner = ScriptedPlanner(
        [
            ScriptedTurn("many", calls=[("probe", {"n": i}) for i in range(4)]),
            ScriptedTurn("<answer>done</answer>"),
        ]
    )
    events = await collect(RunRequest("q", [audio], planner, [tool], budget=2), store)
    assert len(tool.calls) == 2
    errors = [r.error for r in of_type(events, "tool_result") if r.error]
    assert len(errors) == 2 and all("budget" in e for e in errors)


async def test_identical_calls_hit_the_cache(store, tone_wav):
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("transcribe", "hello", model="m1")
    cache = MemoryToolCache()
    planner = ScriptedPlanner(
        [
            ScriptedTurn("t1", calls=[("transcribe", {"lang": "en"})]),
            ScriptedTurn("t2", calls=[("transcribe", {"lang": "en", "audio_id": "audio1"})]),
            ScriptedTurn("<answer>hello</answer>"),
        ]
    )
    events = await collect(RunRequest("q", [audio], planner, [tool]), store, cache=cache)
    results = of_type(events, "tool_result")
    assert [r.cached for r in results] == [False, True]
    assert len(tool.calls) == 1
    # a second run on the same audio is served from the same cache
    planner2 = ScriptedPlanner(
        [
            ScriptedTurn("t", calls=[("transcribe", {"lang": "en"})]),
            ScriptedTurn("<answer>x</answer>"),
        ]
    )
    events2 = await collect(RunRequest("q", [audio], planner2, [tool]), store, cache=cache)
    assert of_type(events2, "tool_result")[0].cached and len(tool.calls) == 1


async def test_tool_errors_reach_the_planner_and_the_events(store, tone_wav):
    audio = store.add_file(tone_wav)
    broken = ScriptedTool("broken", raises=RuntimeError("model exploded"))
    slow = ScriptedTool("slow", delay_s=2.0)
    planner = ScriptedPlanner(
        [
            ScriptedTurn(
                "try",
                calls=[("broken", {}), ("slow", {}), ("nonexistent", {})],
                raw_calls=[ToolCallRequest("bad1", "broken", {}, parse_error="Broken JSON: {")],
            ),
            ScriptedTurn("<answer>no evidence</answer>"),
        ]
    )
    events = await collect(
        RunRequest("q", [audio], planner, [broken, slow], tool_timeout_s=0.3), store
    )
    errors = {r.tool: r.error for r in of_type(events, "tool_result")}
    assert "model exploded" in errors["broken"] or "Broken JSON" in errors["broken"]
    assert "timed out" in errors["slow"]
    assert "Unknown tool 'nonexistent'" in errors["nonexistent"]
    shown = [m for m in planner.seen[1].messages if m.role == "tool"]
    assert len(shown) == 4 and all(m.content.startswith("ERROR:") for m in shown)
    assert events[-1].type == "run_finished"


async def test_unknown_audio_id_is_an_error_not_a_path(store, tone_wav):
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("t", "ok")
    planner = ScriptedPlanner(
        [
            ScriptedTurn("x", calls=[("t", {"audio_id": "/etc/passwd"})]),
            ScriptedTurn("<answer>x</answer>"),
        ]
    )
    events = await collect(RunRequest("q", [audio], planner, [tool]), store)
    (result,) = of_type(events, "tool_result")
    assert "Unknown audio id" in result.error and tool.calls == []


async def test_planner_exception_becomes_run_failed(store, tone_wav):
    audio = store.add_file(tone_wav)

    def explode(messages, tools, force):
        raise ValueError("garbage from the planner")

    events = await collect(RunRequest("q", [audio], ScriptedPlanner([explode]), []), store)
    assert events[-1].type == "run_failed" and "garbage" in events[-1].message


async def test_final_answer_chunk_and_history(store, tone_wav):
    audio = store.add_file(tone_wav)
    from agent.context import PriorTurn

    planner = ScriptedPlanner(
        [ScriptedTurn("thinking", answer=FinalAnswer("B", confidence=0.7, rationale="why"))]
    )
    events = await collect(
        RunRequest(
            "and now?",
            [audio],
            planner,
            [],
            choices=["one", "two"],
            history=[PriorTurn("first question", "first answer")],
        ),
        store,
    )
    (answer,) = of_type(events, "answer")
    assert answer.choice == "two" and answer.match_rule == "letter" and answer.confidence == 0.7
    roles = [m.role for m in planner.seen[0].messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert planner.seen[0].messages[2].content == "first answer"


@pytest.mark.parametrize(
    ("text", "choice", "rule"),
    [
        ("B", "Rain", "letter"),
        ("(C)", "Siren wailing", "letter"),
        ("<answer>Option A</answer>", "Dog barking", "letter"),
        ("Answer: (D) Cat", "Cat", "letter"),
        ("dog barking.", "Dog barking", "exact"),
        ("<answer>RAIN</answer>", "Rain", "exact"),
        ("I am fairly sure it is a siren wailing outside", "Siren wailing", "token"),
    ],
)
def test_match_choice_rules(text, choice, rule):
    choices = ["Dog barking", "Rain", "Siren wailing", "Cat"]
    match = match_choice(text, choices)
    assert (match.choice, match.rule) == (choice, rule)


def test_token_rule_is_the_benchmark_rule():
    choices = ["Male vocal", "Female vocal", "Group vocal", "Child vocal"]
    assert token_rule_correct("female vocal", "Female vocal", choices)
    assert not token_rule_correct("female or male vocal", "Female vocal", choices)
    assert not token_rule_correct("vocal", "Female vocal", choices)


def test_embedding_rule_when_nothing_else_matches():
    import numpy as np

    def fake_similarity(text, options):
        return np.array([0.1, 0.9])

    match = match_choice("a canine noise", ["Cat", "Dog"], fake_similarity)
    assert match.choice == "Dog" and match.rule == "embedding"


def test_single_letter_choices_match_their_own_text_first():
    assert match_choice("A", ["C", "G", "D", "A"]).choice == "A"
    assert match_choice("B", ["Dog", "Cat"]).choice == "Cat"


async def test_stopping_a_run_cancels_the_tools_still_running(store, tone_wav):
    import asyncio

    finished: list[dict] = []

    class Tracked(ScriptedTool):
        async def __call__(self, ctx, arguments):
            result = await super().__call__(ctx, arguments)
            finished.append(arguments)
            return result

    audio = store.add_file(tone_wav)
    slow = Tracked("slow", "late", delay_s=1.0)
    fast = ScriptedTool("fast", "early")
    planner = ScriptedPlanner([ScriptedTurn("go", calls=[("slow", {}), ("fast", {})])])
    stream = run_question(RunRequest("q", [audio], planner, [slow, fast]), store=store)
    async for event in stream:
        if event.type == "tool_result":  # the fast one; the slow one is started or queued
            break
    for _ in range(200):  # under load the slow call may start a little after the fast result
        if slow.calls:
            break
        await asyncio.sleep(0.01)
    assert len(slow.calls) == 1
    await stream.aclose()  # what a stopped request does to the generator
    await asyncio.sleep(1.3)
    assert finished == []  # the slow call did not run on unseen after the stop


async def test_repeated_call_ids_and_broken_calls(store, tone_wav):
    audio = store.add_file(tone_wav)
    a, b = ScriptedTool("a", "from a"), ScriptedTool("b", "from b")
    planner = ScriptedPlanner(
        [
            ScriptedTurn(
                "calls",
                raw_calls=[
                    ToolCallRequest("same", "a", {}),
                    ToolCallRequest("same", "b", {}),
                    ToolCallRequest("bad", "a", {}, parse_error="Broken JSON"),
                    ToolCallRequest("nope", "missing", {}),
                ],
            ),
            ScriptedTurn("<answer>x</answer>"),
        ]
    )
    events = await collect(RunRequest("q", [audio], planner, [a, b], budget=2), store)
    results = {r.call_id: r for r in of_type(events, "tool_result")}
    assert results["same"].output == "from a" and results["same_2"].output == "from b"
    # broken and unknown calls are answered with their error and use none of the budget
    assert "Broken JSON" in results["bad"].error and "Unknown tool" in results["nope"].error
    assert events[-1].calls == 2 and len(a.calls) == 1 and len(b.calls) == 1
