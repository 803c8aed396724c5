"""EChO-Agent: question-type dispatch to a fixed tool set, an evidence step that filters,
reconciles and orders the observations, two answers (different temperature and evidence
order), and a verifier that adopts the shared answer or picks the better-supported one.
Failed tools are retried twice, then marked unavailable for the run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent import events as ev
from agent.answer import match_choice
from agent.context import CallOutcome, RunContext, TurnOutcome
from agent.planners.base import ChatMessage, FinalAnswer, ToolCallRequest
from agent.planners.question_types import DESCRIPTION, classify, tool_arguments
from agent.prompts import question_prompt
from agent.strategies.audio_views import audio_language_model
from agent.strategies.base import final_from_json, parse_json_object, strategy
from agent.strategies.steps import Step

RETRIES = 2

SYSTEM = (
    "You answer questions about an audio recording you cannot hear, from observations made "
    "by audio tools. Tools can be wrong; prefer evidence that several tools support."
)
EVIDENCE = """Question:
{question}

Observations from the tools:
{observations}

Filter, reconcile and order these observations into a short list of evidence relevant to \
the question: drop what is irrelevant, resolve contradictions (say which source you trust \
and why), most important first. Reply with only JSON: {{"evidence": ["...", "..."]}}"""
ANSWER = """Question:
{question}

Evidence (in this order):
{evidence}

Answer from the evidence. {choice_rule}Reply with only JSON: \
{{"answer": "<answer>", "rationale": "<why>"}}"""
# The second answer's extra instruction when the planner's temperature is fixed (reasoning
# models reject any but the default), so the two answers still differ in more than order.
SKEPTIC = (
    "Before answering, name the strongest reason the most obvious answer could be wrong, "
    "and check every choice against the evidence. "
)
VERIFY = """Question:
{question}

Evidence:
{evidence}

Two candidate answers were given:
A: {a} ({a_why})
B: {b} ({b_why})

Which is better supported by the evidence? Reply with only JSON: \
{{"answer": "<the better answer, exactly as written>", "rationale": "<why>"}}"""


def dispatch(ctx: RunContext) -> tuple[str, list[ToolCallRequest], str]:
    """The fixed tool set for the question's type (local tools + any audio model)."""
    qtype = classify(ctx.req.question, ctx.req.choices)
    by_name = {t.name: t for t in ctx.req.tools}
    requests = [
        ToolCallRequest(ctx.new_call_id("echo"), name, tool_arguments(name, qtype, ctx.req.choices))
        for name in qtype.tools
        if name in by_name
    ]
    model = audio_language_model(ctx.req.tools)
    if model is not None:
        asked = question_prompt(ctx.req.question, ctx.req.choices)
        requests.append(ToolCallRequest(ctx.new_call_id("echo"), model.name, {"question": asked}))
    for tool in ctx.req.tools:  # remote speech-to-text for questions about speech
        if (
            not tool.local
            and "transcri" in tool.description.lower()[:40]
            and (qtype.kind in ("speech_content", "speaker"))
        ):
            requests.append(ToolCallRequest(ctx.new_call_id("echo"), tool.name, {}))
    names = ", ".join(r.name for r in requests) or "none"
    text = f"Question type: {DESCRIPTION[qtype.kind]} ({qtype.reason}). Fixed tool set: {names}."
    return qtype.kind, requests, text


@strategy("EChO-Agent (type dispatch, evidence list, two answers, verifier)", compared=True)
class EvidenceStrategy:
    name = "evidence"
    default_budget = 12

    async def run(self, ctx: RunContext) -> AsyncIterator[ev.Event]:
        kind, requests, dispatch_text = dispatch(ctx)
        yield ctx.note(dispatch_text, step="dispatch")
        observations: list[CallOutcome] = []
        async for event in ctx.call_tools(requests, observations):
            yield event
        async for event in self._retry_failures(ctx, observations):
            yield event
        usable = [o for o in observations if not o.result.error]
        question = question_prompt(ctx.req.question, ctx.req.choices)
        step = {
            "question": ctx.req.question,
            "choices": list(ctx.req.choices),
            "kind": kind,
            "sources": [{"tool": o.request.name, "data": o.result.data} for o in usable],
        }

        observed = "\n".join(f"- {o.request.name}: {o.result.output}" for o in usable) or "(none)"
        evidence_turn = TurnOutcome()
        messages = [
            ChatMessage("system", SYSTEM),
            ChatMessage(
                "user",
                EVIDENCE.format(question=question, observations=observed),
                data={**step, "step": Step.EVIDENCE_FILTER},
            ),
        ]
        async for event in ctx.turn(messages, [], evidence_turn, step="evidence"):
            yield event
        evidence = _evidence_list(evidence_turn.text) or [
            f"{o.request.name}: {o.result.output}" for o in usable
        ]

        choice_rule = "The answer must be exactly one of the choices. " if ctx.req.choices else ""
        candidates: list[FinalAnswer] = []
        fixed = bool(getattr(ctx.req.planner, "fixed_temperature", False))
        for index, (order, temperature) in enumerate(((1, 0.2), (-1, 0.9)), start=1):
            listed = "\n".join(f"{i + 1}. {e}" for i, e in enumerate(evidence[::order]))
            rule = choice_rule + (SKEPTIC if fixed and index == 2 else "")
            temperature = None if fixed else temperature  # type: ignore[assignment]
            turn = TurnOutcome()
            messages = [
                ChatMessage("system", SYSTEM),
                ChatMessage(
                    "user",
                    ANSWER.format(question=question, evidence=listed, choice_rule=rule),
                    data={**step, "step": Step.EVIDENCE_ANSWER, "variant": index},
                ),
            ]
            async for event in ctx.turn(
                messages, [], turn, step=f"answer {index}", temperature=temperature
            ):
                yield event
            candidates.append(
                turn.final or final_from_json(turn.text) or FinalAnswer(text=turn.text.strip())
            )

        a, b = candidates
        same, a_label, b_label = _compare(ctx, a, b)

        def verdict(agreement: bool, resolution: str) -> ev.Verification:
            return ctx.emit(
                ev.Verification,
                scope="candidates",
                question=ctx.req.question,
                compared=["answer 1", "answer 2"],
                answers={"answer 1": a_label, "answer 2": b_label},
                agreement=agreement,
                resolution=resolution,
            )

        if same:
            yield verdict(True, f'Both answers agree on "{a_label}"; adopted.')
            yield await ctx.make_answer(a.text, a)
            return
        listed = "\n".join(f"- {e}" for e in evidence)
        turn = TurnOutcome()
        messages = [
            ChatMessage("system", SYSTEM),
            ChatMessage(
                "user",
                VERIFY.format(question=question, evidence=listed, a=a.text, a_why=a.rationale,
                              b=b.text, b_why=b.rationale),
                data={**step, "step": Step.EVIDENCE_VERIFY, "candidates": [a.text, b.text]},
            ),
        ]  # fmt: skip
        async for event in ctx.turn(messages, [], turn, step="verify"):
            yield event
        chosen = turn.final or final_from_json(turn.text) or FinalAnswer(text=turn.text.strip())
        chosen = _candidate_named(chosen, a, b)
        yield verdict(False, f'The verifier chose "{chosen.text}": {chosen.rationale}'.strip())
        yield await ctx.make_answer(chosen.text, chosen)

    async def _retry_failures(
        self, ctx: RunContext, observations: list[CallOutcome]
    ) -> AsyncIterator[ev.Event]:
        """Retry each failed tool twice (not from the cache); then mark it unavailable."""
        for index, outcome in enumerate(observations):
            attempt = 0
            while outcome.result.error and attempt < RETRIES and ctx.calls_left > 0:
                attempt += 1
                request = ToolCallRequest(
                    ctx.new_call_id("retry"), outcome.request.name, outcome.request.arguments
                )
                retried: list[CallOutcome] = []
                async for event in ctx.call_tools([request], retried, use_cache=False):
                    yield event
                outcome = retried[0]
            observations[index] = outcome
            if outcome.result.error:
                yield ctx.note(
                    f"{outcome.request.name} failed {attempt + 1} times and is marked "
                    "unavailable for this run.",
                    step="unavailable",
                )


def _candidate_named(chosen: FinalAnswer, a: FinalAnswer, b: FinalAnswer) -> FinalAnswer:
    """The verifier may name a candidate by its label ("A", "B") instead of its text."""
    label = chosen.text.strip().strip(".()*").upper()
    picked = {"A": a, "B": b, "1": a, "2": b}.get(label.removeprefix("ANSWER ").strip())
    if picked is None:
        return chosen
    return FinalAnswer(
        text=picked.text, choice=picked.choice, confidence=chosen.confidence,
        rationale=chosen.rationale or picked.rationale, guess=chosen.guess or picked.guess,
    )  # fmt: skip


def _evidence_list(text: str) -> list[str]:
    parsed = parse_json_object(text) or {}
    items: Any = parsed.get("evidence", [])
    return [str(item) for item in items if str(item).strip()] if isinstance(items, list) else []


def _compare(ctx: RunContext, a: FinalAnswer, b: FinalAnswer) -> tuple[bool, str, str]:
    if ctx.req.choices:
        first = match_choice(a.choice or a.text, ctx.req.choices, ctx.similarity).choice
        second = match_choice(b.choice or b.text, ctx.req.choices, ctx.similarity).choice
        return first is not None and first == second, first or a.text, second or b.text
    same = " ".join(a.text.lower().split()) == " ".join(b.text.lower().split())
    return same, a.text, b.text
