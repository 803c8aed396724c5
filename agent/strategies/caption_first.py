"""The compact two-tool agent: a whole-audio caption first, then caption or free questions
to an audio model within a small budget; the final action is a JSON object."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent import events as ev
from agent.context import CallOutcome, RunContext, TurnOutcome
from agent.planners.base import ChatMessage, PlannerError, ToolCallRequest
from agent.strategies.audio_views import AskAudioTool, CaptionTool
from agent.strategies.base import final_from_json, strategy

# The same for every question (a prefix providers cache); the budget comes with the question.
SYSTEM = """You answer questions about an audio recording you cannot hear. You have two tools:
- caption: a detailed description of the whole recording (optionally with a focus);
- ask_audio: ask an audio model any question about the recording.
The caption has already been made; its result follows. You may call either tool within the \
budget given with the question (the caption counts). When you are ready, reply with only a \
JSON object: {"answer": "<your answer>", "reasoning": "<a short summary of the evidence>"}
When choices are given, the answer must be exactly the text of one of them."""

FORCE = (
    "The tool budget is spent. Reply now with only the JSON object "
    '{"answer": "...", "reasoning": "..."}.'
)


@strategy("Compact caption-first agent (caption + ask, budget 4)")
class CaptionFirst:
    name = "caption_first"
    default_budget = 4

    async def run(self, ctx: RunContext) -> AsyncIterator[ev.Event]:
        views = [CaptionTool(ctx.req.tools), AskAudioTool(ctx.req.tools)]
        messages = ctx.base_messages(system=SYSTEM)
        # Without an audio-language model the caption is assembled from local tools: focused
        # on the question, so it costs the tools the question needs, not the whole stack.
        local = views[0].backend is None
        first = ToolCallRequest(
            ctx.new_call_id("caption"), "caption", {"focus": ctx.req.question} if local else {}
        )
        messages.append(ChatMessage("assistant", "", tool_calls=[first]))
        outcomes: list[CallOutcome] = []
        async for event in ctx.call_tools([first], outcomes, tools=views):
            yield event
        messages.extend(ctx.result_messages(outcomes))
        specs = ctx.specs(views)
        for _ in range(ctx.budget + 3):
            force = ctx.calls_left == 0
            turn = TurnOutcome()
            async for event in ctx.turn(messages, specs, turn, force=force):
                yield event
            if turn.requests and turn.final is None:
                messages.append(
                    ChatMessage("assistant", turn.text, tool_calls=turn.requests, raw=turn.raw)
                )
                outcomes = []
                async for event in ctx.call_tools(turn.requests, outcomes, tools=views):
                    yield event
                messages.extend(ctx.result_messages(outcomes))
                if ctx.calls_left == 0:
                    messages.append(ChatMessage("user", FORCE))
                continue
            final = turn.final or final_from_json(turn.text)
            yield await ctx.make_answer(turn.text, final, forced=force)
            return
        raise PlannerError("The planner did not give its final JSON answer.", kind="no_answer")
