"""Each strategy's control flow, proven with scripted planners and tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import events as ev
from agent.audio import AudioStore
from agent.run import RunRequest, run_question
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn

CHOICES = ["Dog barking", "Rain", "Siren"]


@pytest.fixture
def store(tmp_path: Path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


def audio_model(name: str = "omni", answer: str = "A dog barks twice.") -> ScriptedTool:
    """A scripted stand-in for a remote audio-language model (takes a question)."""
    tool = ScriptedTool(
        name,
        answer,
        model=f"{name}-model",
        parameters={"type": "object", "properties": {"question": {"type": "string"}}},
    )
    tool.local = False
    return tool


async def run(store, tone_wav, planner, tools, strategy, **kwargs) -> list[ev.Event]:
    request = RunRequest(
        "Which sound is heard?",
        [store.add_file(tone_wav)],
        planner,
        tools,
        choices=CHOICES,
        strategy=strategy,
        **kwargs,
    )
    return [e async for e in run_question(request, store=store)]


def of(events, kind):
    return [e for e in events if e.type == kind]


def step_of(messages) -> str | None:
    return next((m.data.get("step") for m in reversed(messages) if m.data.get("step")), None)


# -- caption_first -----------------------------------------------------------------------


async def test_caption_first_calls_the_caption_before_the_planner_speaks(store, tone_wav):
    omni = audio_model()
    planner = ScriptedPlanner(
        [
            ScriptedTurn("Check once more.", calls=[("ask_audio", {"question": "Is it a dog?"})]),
            ScriptedTurn('{"answer": "Dog barking", "reasoning": "caption and QA agree"}'),
        ]
    )
    events = await run(store, tone_wav, planner, [omni], "caption_first")
    assert events[0].strategy == "caption_first" and events[0].settings["budget"] == 4
    first_call = of(events, "tool_call")[0]
    assert first_call.tool == "caption"
    assert events.index(first_call) < events.index(of(events, "thought")[0])
    # the planner only ever sees the two interfaces
    assert {t.name for t in planner.seen[0].tools} == {"caption", "ask_audio"}
    assert omni.calls[0]["question"].startswith("Describe this recording")
    assert omni.calls[1] == {"question": "Is it a dog?"}
    answer = of(events, "answer")[0]
    assert answer.choice == "Dog barking" and answer.rationale == "caption and QA agree"


async def test_caption_first_budget_forces_the_json_answer(store, tone_wav):
    def greedy(messages, tools, force):
        if force:
            return ScriptedTurn('Done. {"answer": "Rain", "reasoning": "budget spent"}')
        return ScriptedTurn("more", calls=[("ask_audio", {"question": f"q{len(messages)}"})])

    omni = audio_model()
    events = await run(store, tone_wav, ScriptedPlanner([greedy]), [omni], "caption_first")
    assert len(omni.calls) == 4  # caption + 3 questions = the default budget of 4
    answer = of(events, "answer")[0]
    assert answer.forced and answer.choice == "Rain"
    assert events[-1].status == "forced"


# -- refine ------------------------------------------------------------------------------


def refine_planner(sufficient_at: int | None) -> ScriptedPlanner:
    plans = {"n": 0}

    def respond(messages, tools, force):
        step = step_of(messages)
        if step == "refine.plan":
            plans["n"] += 1
            enough = sufficient_at is not None and plans["n"] >= sufficient_at
            return ScriptedTurn(json.dumps({"sufficient": enough, "missing": ["loudness"]}))
        if step == "refine.interact":
            question = f"How loud, take {plans['n']}?"
            return ScriptedTurn(json.dumps({"action": "audio_qa", "question": question}))
        return ScriptedTurn(
            json.dumps({"answer": "Siren", "confidence": 0.8, "rationale": "the document"})
        )

    return ScriptedPlanner([respond])


async def test_refine_stops_when_the_document_is_sufficient(store, tone_wav):
    omni = audio_model()
    events = await run(store, tone_wav, refine_planner(sufficient_at=1), [omni], "refine")
    documents = of(events, "document")
    assert [d.iteration for d in documents] == [0]
    assert documents[0].text == "A dog barks twice."
    steps = [t.step for t in of(events, "thought")]
    assert steps == ["plan 1", "answer"]
    answer = of(events, "answer")[0]
    assert (answer.choice, answer.confidence) == ("Siren", 0.8)


async def test_refine_without_an_audio_model_captions_with_what_the_question_needs(store, tone_wav):
    local = [ScriptedTool(n, f"{n} says") for n in ("sound_events", "transcribe", "music_analysis")]
    events = await run(store, tone_wav, refine_planner(sufficient_at=1), local, "refine")
    first = of(events, "tool_call")[0]
    assert (first.tool, first.arguments) == ("caption", {"focus": "Which sound is heard?"})
    document = of(events, "document")[0].text
    assert "sound_events says" in document
    assert "music_analysis" not in document and "transcribe" not in document  # not asked


async def test_refine_runs_at_most_three_iterations(store, tone_wav):
    omni = audio_model()
    events = await run(store, tone_wav, refine_planner(sufficient_at=None), [omni], "refine")
    documents = of(events, "document")
    assert [d.iteration for d in documents] == [0, 1, 2, 3]
    assert "[Iteration 3, audio QA: How loud, take 3?]" in documents[-1].text
    assert len(omni.calls) == 4  # caption + three audio-QA augmentations
    steps = [t.step for t in of(events, "thought")]
    assert steps == ["plan 1", "interact 1", "plan 2", "interact 2", "plan 3", "interact 3",
                     "answer"]  # fmt: skip


# -- evidence ----------------------------------------------------------------------------


def evidence_planner(first: str, second: str, verdict: str = "Rain") -> ScriptedPlanner:
    def respond(messages, tools, force):
        step = step_of(messages)
        if step == "evidence.filter":
            return ScriptedTurn(json.dumps({"evidence": ["tool A: dog", "tool B: rain"]}))
        if step == "evidence.answer":
            variant = messages[-1].data["variant"]
            text = first if variant == 1 else second
            return ScriptedTurn(json.dumps({"answer": text, "rationale": f"variant {variant}"}))
        return ScriptedTurn(json.dumps({"answer": verdict, "rationale": "better supported"}))

    return ScriptedPlanner([respond])


async def test_evidence_two_candidates_that_agree_are_adopted(store, tone_wav):
    planner = evidence_planner("Dog barking", "dog barking")
    events = await run(
        store, tone_wav, planner, [ScriptedTool("sound_events", "Dog 0.9"), audio_model()],
        "evidence",
    )  # fmt: skip
    dispatch = of(events, "thought")[0]
    assert dispatch.step == "dispatch" and "sound_events" in dispatch.text
    answers = [s for s in planner.seen if step_of(s.messages) == "evidence.answer"]
    assert [s.temperature for s in answers] == [0.2, 0.9]
    first_order = answers[0].messages[-1].content
    second_order = answers[1].messages[-1].content
    assert first_order.index("tool A") < first_order.index("tool B")
    assert second_order.index("tool B") < second_order.index("tool A")
    (check,) = of(events, "verification")
    assert check.scope == "candidates" and check.agreement
    assert of(events, "answer")[0].choice == "Dog barking"
    assert not any(step_of(s.messages) == "evidence.verify" for s in planner.seen)


async def test_evidence_verifier_arbitrates_a_disagreement(store, tone_wav):
    planner = evidence_planner("Dog barking", "Rain", verdict="Rain")
    events = await run(
        store, tone_wav, planner, [ScriptedTool("sound_events", "mixed")], "evidence"
    )
    (check,) = of(events, "verification")
    assert not check.agreement
    assert check.answers == {"answer 1": "Dog barking", "answer 2": "Rain"}
    assert "Rain" in check.resolution
    assert of(events, "answer")[0].choice == "Rain"


async def test_evidence_retries_failed_tools_twice_then_marks_them_unavailable(store, tone_wav):
    broken = ScriptedTool("sound_events", raises=RuntimeError("model crashed"))
    planner = evidence_planner("Rain", "Rain")
    events = await run(store, tone_wav, planner, [broken], "evidence")
    assert len(broken.calls) == 3
    notes = [t for t in of(events, "thought") if t.step == "unavailable"]
    assert len(notes) == 1 and "marked unavailable" in notes[0].text
    filter_turn = next(s for s in planner.seen if step_of(s.messages) == "evidence.filter")
    assert "model crashed" not in filter_turn.messages[-1].content
    assert events[-1].type == "run_finished"


# -- react: verification across tools ----------------------------------------------------


async def test_react_records_and_cross_checks_disagreeing_tools(store, tone_wav):
    a = audio_model("omni", "It is rain on a roof.")
    b = audio_model("flamingo", "A dog barking.")
    planner = ScriptedPlanner(
        [
            ScriptedTurn(
                "Ask both.",
                calls=[
                    ("omni", {"question": "What sound?"}),
                    ("flamingo", {"question": "What sound?"}),
                ],
            ),
            ScriptedTurn("They disagree; <answer>Dog barking</answer>"),
        ]
    )
    events = await run(store, tone_wav, planner, [a, b], "react")
    (check,) = of(events, "verification")
    assert check.scope == "tools" and not check.agreement
    assert set(check.compared) == {"omni", "flamingo"}
    assert check.answers["omni"] == "It is rain on a roof."
    told = planner.seen[1].messages[-1]
    assert told.role == "user" and "Cross-check" in told.content


async def test_unknown_strategy_fails_clearly(store, tone_wav):
    events = await run(store, tone_wav, ScriptedPlanner([]), [], "astrology")
    assert events[-1].type == "run_failed" and "Unknown strategy 'astrology'" in events[-1].message


async def test_evidence_verifier_naming_a_candidate_by_its_label(store, tone_wav):
    planner = evidence_planner("Dog barking", "Rain", verdict="B")  # "B" is candidate B
    events = await run(store, tone_wav, planner, [ScriptedTool("sound_events", "x")], "evidence")
    assert of(events, "answer")[0].choice == "Rain"  # not choice B of the question


async def test_inner_results_served_from_the_cache_cost_nothing_twice(store, tone_wav):
    from agent.tools.base import MemoryToolCache

    omni = audio_model()
    omni.cost = 0.5
    cache = MemoryToolCache()
    costs = []
    for strategy in ("caption_first", "caption_first"):
        planner = ScriptedPlanner([ScriptedTurn('{"answer": "Rain", "reasoning": "r"}')])
        request = RunRequest(
            "Which sound?", [store.add_file(tone_wav)], planner, [omni], choices=CHOICES,
            strategy=strategy,
        )  # fmt: skip
        events = [e async for e in run_question(request, store=store, cache=cache)]
        costs.append(events[-1].cost)
    assert costs == [0.5, 0.0] and len(omni.calls) == 1
