"""AudioToolAgent: the planner reasons, calls any enabled tools, cross-checks, answers.

After each batch of tool results, calls that asked different tools the same question are
compared; a ``verification`` event records who said what, and when they disagree the
planner is told to cross-check before answering.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import numpy as np

from agent import events as ev
from agent.answer import match_choice
from agent.context import CallOutcome, RunContext, TurnOutcome
from agent.planners.base import ChatMessage, PlannerError
from agent.prompts import FORCE_ANSWER
from agent.strategies.base import strategy

CROSS_CHECK = (
    "Note: {tools} were asked the same question and disagree. Cross-check before you answer: "
    "ask a more specific question, another tool, or look at a time range."
)


@strategy("AudioToolAgent (react: reason, call tools, cross-check)", default=True, compared=True)
class React:
    name = "react"
    default_budget = 20

    async def run(self, ctx: RunContext) -> AsyncIterator[ev.Event]:
        messages = ctx.base_messages()
        specs = ctx.specs()
        history: list[CallOutcome] = []
        forced = False
        max_turns = ctx.budget + 6  # a planner that neither answers nor calls tools is stopped
        for _ in range(max_turns):
            force_now = forced or ctx.calls_left == 0
            turn = TurnOutcome()
            async for event in ctx.turn(messages, specs, turn, force=force_now):
                yield event
            if turn.requests and turn.final is None:
                messages.append(
                    ChatMessage("assistant", turn.text, tool_calls=turn.requests, raw=turn.raw)
                )
                outcomes: list[CallOutcome] = []
                async for event in ctx.call_tools(turn.requests, outcomes):
                    yield event
                messages.extend(ctx.result_messages(outcomes))
                history.extend(outcomes)
                verdict = await cross_check(ctx, history, outcomes)
                if verdict is not None:
                    yield verdict
                    if not verdict.agreement:
                        messages.append(
                            ChatMessage(
                                "user", CROSS_CHECK.format(tools=", ".join(verdict.compared))
                            )
                        )
                if ctx.calls_left == 0:
                    forced = True
                    messages.append(ChatMessage("user", FORCE_ANSWER))
                continue
            if not (turn.final or turn.text.strip()):
                if force_now:
                    raise PlannerError("The planner returned an empty answer.", kind="no_answer")
                messages.append(ChatMessage("assistant", turn.text, raw=turn.raw))
                messages.append(ChatMessage("user", "Your reply was empty. " + FORCE_ANSWER))
                forced = True
                continue
            yield await ctx.make_answer(turn.text, turn.final, forced=force_now)
            return
        raise PlannerError(f"The planner did not answer after {max_turns} turns.", "no_answer")


def _question_of(outcome: CallOutcome) -> str | None:
    question = outcome.request.arguments.get("question")
    return " ".join(str(question).lower().split()) if question else None


async def cross_check(
    ctx: RunContext, history: Sequence[CallOutcome], latest: Sequence[CallOutcome]
) -> ev.Verification | None:
    """Compare the latest answers with earlier ones to the same question from other tools."""
    for outcome in latest:
        question = _question_of(outcome)
        if question is None or outcome.result.error:
            continue
        same = {
            o.request.name: o.result.output
            for o in history
            if _question_of(o) == question and not o.result.error
        }
        if len(same) < 2:
            continue
        agreement, resolution = await asyncio.to_thread(_agreement, ctx, same)
        return ctx.emit(
            ev.Verification,
            scope="tools",
            question=str(outcome.request.arguments.get("question")),
            compared=list(same),
            answers={tool: text[:300] for tool, text in same.items()},
            agreement=agreement,
            resolution=resolution,
        )
    return None


def _agreement(ctx: RunContext, answers: dict[str, str]) -> tuple[bool, str]:
    choices = ctx.req.choices
    if choices:
        picked = {t: match_choice(a, choices, ctx.similarity).choice for t, a in answers.items()}
        distinct = set(picked.values())
        if len(distinct) == 1 and None not in distinct:
            return True, f'All agree on "{distinct.pop()}".'
        said = "; ".join(f"{t}: {c or 'no clear choice'}" for t, c in picked.items())
        return False, f"They point to different choices ({said}); the planner cross-checks."
    if ctx.similarity is None:
        return True, "Compared without a similarity model; not judged."
    texts = list(answers.values())
    sims = [float(np.min(ctx.similarity(t, texts))) for t in texts]
    if min(sims) >= 0.6:
        return True, f"The answers are alike (similarity at least {min(sims):.2f})."
    return (
        False,
        f"The answers differ (similarity down to {min(sims):.2f}); the planner cross-checks.",
    )
