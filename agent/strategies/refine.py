"""AudioGenie-Reasoner: caption the audio into a document, then up to three times judge
whether it suffices, plan one augmentation (audio QA, a focused re-caption, or a transcript
with timestamps) and merge its result; finally answer with confidence and rationale.
Every version of the document is a ``document`` event in the trace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agent import events as ev
from agent.context import CallOutcome, RunContext, TurnOutcome
from agent.planners.base import ChatMessage, ToolCallRequest
from agent.prompts import question_prompt
from agent.strategies.audio_views import AskAudioTool, CaptionTool
from agent.strategies.base import as_bool, final_from_json, parse_json_object, strategy
from agent.strategies.steps import Step
from agent.tools.base import Tool

MAX_ITERATIONS = 3

SYSTEM = (
    "You answer questions about an audio recording you cannot hear, from a document that "
    "describes it. The document is improved step by step with more evidence from audio tools."
)
PLAN = """Question:
{question}

Document about the audio:
{document}

Is the document sufficient to answer the question with confidence? Reply with only JSON:
{{"sufficient": true or false, "missing": ["<detail that is missing>", ...], \
"questions": ["<question to ask about the audio>", ...]}}"""
INTERACT = """Plan one step to get the missing details. Actions:
- "audio_qa": ask an audio model one question;
- "recaption": describe the audio again with a focus;
- "transcribe": a transcript of the speech with timestamps (optionally with a prompt of
  words the speech may contain).
Reply with only JSON: {"action": "audio_qa" | "recaption" | "transcribe", \
"question": "<for audio_qa>", "focus": "<for recaption>", "prompt": "<for transcribe>"}"""
ANSWER = """Question:
{question}

Document about the audio:
{document}

Answer the question from the document. {choice_rule}Reply with only JSON:
{{"answer": "<answer>", "confidence": <0 to 1>, "rationale": "<why>"}}"""


@strategy("AudioGenie-Reasoner (caption document refined up to 3 times)")
class Refine:
    name = "refine"
    default_budget = 8

    async def run(self, ctx: RunContext) -> AsyncIterator[ev.Event]:
        caption, ask = CaptionTool(ctx.req.tools), AskAudioTool(ctx.req.tools)
        transcriber = _transcriber(ctx.req.tools)
        views: list[Tool] = [caption, ask] + ([transcriber] if transcriber else [])
        question = question_prompt(ctx.req.question, ctx.req.choices)
        step_data = {"question": ctx.req.question, "choices": list(ctx.req.choices)}

        outcomes: list[CallOutcome] = []
        # Without an audio-language model the caption is assembled from local tools: focused
        # on the question (as caption_first's), it costs the tools the question needs instead
        # of the whole stack (music and pitch analysis on every clip).
        focus = {"focus": ctx.req.question} if caption.backend is None else {}
        first = ToolCallRequest(ctx.new_call_id("caption"), "caption", focus)
        async for event in ctx.call_tools([first], outcomes, tools=views):
            yield event
        document, sources = _merge("", [], outcomes[0], "caption")
        yield ctx.emit(ev.DocumentUpdate, iteration=0, text=document, note="caption")

        for iteration in range(1, MAX_ITERATIONS + 1):
            plan_msgs = [
                ChatMessage("system", SYSTEM),
                ChatMessage(
                    "user",
                    PLAN.format(question=question, document=document),
                    data={**step_data, "step": Step.REFINE_PLAN, "sources": sources},
                ),
            ]
            plan = TurnOutcome()
            async for event in ctx.turn(plan_msgs, [], plan, step=f"plan {iteration}"):
                yield event
            judged = parse_json_object(plan.text) or {}
            if as_bool(judged.get("sufficient", False)) or ctx.calls_left == 0:
                break
            interact_msgs = [
                *plan_msgs,
                ChatMessage("assistant", plan.text),
                ChatMessage(
                    "user",
                    INTERACT,
                    data={**step_data, "step": Step.REFINE_INTERACT, "sources": sources,
                          "plan": judged},
                ),
            ]  # fmt: skip
            action = TurnOutcome()
            async for event in ctx.turn(interact_msgs, [], action, step=f"interact {iteration}"):
                yield event
            request, note = _augmentation(ctx, parse_json_object(action.text) or {}, transcriber)
            outcomes = []
            async for event in ctx.call_tools([request], outcomes, tools=views):
                yield event
            document, sources = _merge(document, sources, outcomes[0], note, iteration)
            yield ctx.emit(ev.DocumentUpdate, iteration=iteration, text=document, note=note)

        answer_msgs = [
            ChatMessage("system", SYSTEM),
            ChatMessage(
                "user",
                ANSWER.format(
                    question=question,
                    document=document,
                    choice_rule="The answer must be exactly one of the choices. "
                    if ctx.req.choices
                    else "",
                ),
                data={**step_data, "step": Step.REFINE_ANSWER, "sources": sources},
            ),
        ]
        final_turn = TurnOutcome()
        async for event in ctx.turn(answer_msgs, [], final_turn, step="answer"):
            yield event
        yield await ctx.make_answer(
            final_turn.text, final_turn.final or final_from_json(final_turn.text)
        )


def _transcriber(tools: list[Tool]) -> Tool | None:
    """An enabled speech-to-text tool (local or remote), for 'transcribe' augmentations."""
    for tool in tools:
        if tool.name == "transcribe" or "transcri" in tool.description.lower()[:40]:
            return tool
    return None


def _augmentation(
    ctx: RunContext, plan: dict[str, Any], transcriber: Tool | None
) -> tuple[ToolCallRequest, str]:
    action = str(plan.get("action", "audio_qa"))
    question = str(plan.get("question") or ctx.req.question)
    if action == "transcribe" and transcriber is not None:
        arguments: dict[str, Any] = (
            {"word_timestamps": True} if transcriber.name == "transcribe" else {}
        )
        if plan.get("prompt") and "prompt" in transcriber.parameters.get("properties", {}):
            arguments["prompt"] = str(plan["prompt"])
        return ToolCallRequest(ctx.new_call_id("stt"), transcriber.name, arguments), "transcript"
    if action == "transcribe":  # no speech-to-text tool enabled: ask the audio model instead
        question = "Transcribe the speech with timestamps."
        action = "audio_qa"
    if action == "recaption":
        focus = str(plan.get("focus") or question)
        request = ToolCallRequest(ctx.new_call_id("caption"), "caption", {"focus": focus})
        return request, f"re-caption focused on: {focus}"
    request = ToolCallRequest(ctx.new_call_id("ask"), "ask_audio", {"question": question})
    return request, f"audio QA: {question}"


def _merge(
    document: str,
    sources: list[dict[str, Any]],
    outcome: CallOutcome,
    note: str,
    iteration: int = 0,
) -> tuple[str, list[dict[str, Any]]]:
    result = outcome.result
    text = f"(failed: {result.error})" if result.error else result.output
    merged = f"{document}\n\n[Iteration {iteration}, {note}]\n{text}" if document else text
    new_sources = list(sources)
    if not result.error:
        new_sources += result.data.get("sources") or [
            {"tool": outcome.request.name, "data": result.data}
        ]
    return merged, new_sources
