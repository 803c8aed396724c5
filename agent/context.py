"""What every strategy drives: the request, the shared machinery of one run, its outcomes.

``RunContext`` streams planner turns as events, runs tool calls concurrently within a
budget, serves identical calls from the cache, reports tool errors to the planner (never
swallowed) and maps the final answer onto the choices. It sits below both ``agent.run``
(which builds one and hands it to a strategy) and ``agent.strategies`` (which drive it).
The request is defined in ``agent.run_request`` and one tool call's path in
``agent.tool_calls``; both are imported from here as before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.answer import ChoiceMatch, Similarity, extract_answer, match_choice, strip_answer
from agent.audio import AudioRef, AudioStore
from agent.planners.base import (
    ChatMessage,
    FinalAnswer,
    PlannerError,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
    Verify,
)
from agent.prefetch import Prefetch
from agent.prompts import audio_alias, question_prompt, run_context, system_prompt
from agent.run_request import DEFAULT_TOOL_TIMEOUT_S, PriorTurn, RunRequest, is_paid, tool_timeout
from agent.tool_calls import ToolCalls
from agent.tools.base import Tool, ToolCache, ToolResult, cache_key

__all__ = [  # the request's names too: the run's API, wherever they are defined
    "DEFAULT_TOOL_TIMEOUT_S",
    "CallOutcome",
    "PriorTurn",
    "RunContext",
    "RunRequest",
    "TurnOutcome",
    "is_paid",
    "tool_specs",
    "tool_timeout",
]


@dataclass
class TurnOutcome:
    """What one planner turn produced (filled in by ``RunContext.turn``)."""

    text: str = ""
    reasoning: str = ""
    requests: list[ToolCallRequest] = field(default_factory=list)
    final: FinalAnswer | None = None
    raw: Any = None


@dataclass
class CallOutcome:
    request: ToolCallRequest
    result: ToolResult
    cached: bool = False


class _Totals:
    def __init__(self) -> None:
        self.calls = 0
        self.usage = ev.Usage()
        self.cost = 0.0

    def add(self, usage: ev.Usage, cost: float) -> None:
        self.usage = self.usage + usage
        self.cost += cost


def _unique_ids(requests: list[ToolCallRequest]) -> list[ToolCallRequest]:
    """Some servers repeat call ids within a turn; give repeats their own id."""
    seen: set[str] = set()
    unique = []
    for request in requests:
        if request.id in seen:
            request = dataclasses.replace(request, id=f"{request.id}_{len(seen) + 1}")
        seen.add(request.id)
        unique.append(request)
    return unique


def tool_specs(tools: Sequence[Tool], audio: Sequence[AudioRef]) -> list[ToolSpec]:
    """The schemas a planner sees: each tool's parameters, plus the ``audio_id`` to use
    when there are several recordings (with one, every call is about it: the parameter
    would only cost tokens on every turn)."""
    aliases = [audio_alias(i) for i in range(len(audio))]
    specs = []
    for tool in tools:
        params = dict(tool.parameters or {"type": "object", "properties": {}})
        props = dict(params.get("properties", {}))
        if len(aliases) > 1:
            props["audio_id"] = {
                "type": "string",
                "enum": aliases,
                "description": f"Which recording (default {aliases[0]})",
            }
        specs.append(
            ToolSpec(tool.name, tool.description, {**params, "type": "object", "properties": props})
        )
    return specs


class RunContext(ToolCalls):
    """The shared machinery of one run; strategies drive it and yield its events."""

    def __init__(
        self,
        req: RunRequest,
        *,
        store: AudioStore,
        cache: ToolCache,
        similarity: Similarity | None,
        budget: int,
    ) -> None:
        self.req = req
        self.store = store
        self.cache = cache
        self.similarity = similarity
        self.budget = budget
        self.totals = _Totals()
        self.turns = 0
        self.started = time.monotonic()
        self.answer: ev.Answer | None = None
        self.failed_tools: list[str] = []  # tools that raised or timed out (status degraded)
        self._seq = req.first_seq - 1
        self._ids = 0
        self._prefetched = Prefetch(req.planner)  # speculative calls, behind the planner
        # This turn's cache lookups, made in one read (``_prime_cache``): key -> result or None.
        self._looked_up: dict[str, ToolResult | None] = {}
        self._background: list[asyncio.Future[Any]] = []

    # -- events ----------------------------------------------------------------------------
    def emit(self, cls: type[ev.EventBase], **fields: Any) -> Any:
        self._seq += 1
        return cls(run_id=self.req.run_id, seq=self._seq, **fields)

    # -- prompts ---------------------------------------------------------------------------
    @property
    def calls_left(self) -> int:
        return max(0, self.budget - self.totals.calls)

    def new_call_id(self, prefix: str = "call") -> str:
        self._ids += 1
        return f"{prefix}_{self._ids}"

    def base_messages(self, system: str | None = None) -> list[ChatMessage]:
        """System prompt, earlier turns of the conversation, and the question with its
        recordings and budget (after the question: the system prompt, the tools and the
        earlier turns stay a prefix that providers cache across turns and questions)."""
        req = self.req
        messages = [ChatMessage("system", system or system_prompt())]
        for turn in req.history:
            messages.append(
                ChatMessage(
                    "user",
                    question_prompt(turn.question, turn.choices),
                    data={"question": turn.question, "choices": turn.choices, "prior": True},
                )
            )
            messages.append(ChatMessage("assistant", turn.answer))
        asked = question_prompt(req.question, req.choices)
        messages.append(
            ChatMessage(
                "user",
                f"{asked}\n\n{run_context(req.audio, self.budget)}",
                data={"question": req.question, "choices": list(req.choices)},
            )
        )
        return messages

    def specs(self, tools: Sequence[Tool] | None = None) -> list[ToolSpec]:
        return tool_specs(self.req.tools if tools is None else tools, self.req.audio)

    # -- planner -----------------------------------------------------------------------------
    async def turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        out: TurnOutcome,
        *,
        force: bool = False,
        step: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[ev.Event]:
        """One planner turn, streamed as ``planner_delta`` events and closed by a ``thought``."""
        self.turns += 1
        turn = self.turns
        text: list[str] = []
        reasoning: list[str] = []
        usage, cost, notice = ev.Usage(), 0.0, ""
        kwargs: dict[str, Any] = {"force_answer": force}
        if temperature is not None:
            kwargs["temperature"] = temperature
        refusal = await self.spend_refusal(self.req.planner)
        if refusal:
            raise PlannerError(refusal, kind="spend_limit")
        async for chunk in self.req.planner.stream_turn(messages, [] if force else tools, **kwargs):
            if isinstance(chunk, TextDelta):
                if chunk.text:
                    (reasoning if chunk.kind == "reasoning" else text).append(chunk.text)
                    yield self.emit(
                        ev.PlannerDelta, turn=turn, text=chunk.text, kind=chunk.kind, step=step
                    )
            elif isinstance(chunk, ToolCallRequest):
                out.requests.append(chunk)
            elif isinstance(chunk, FinalAnswer):
                out.final = chunk
            elif isinstance(chunk, Verify):
                yield self.emit(
                    ev.Verification,
                    scope="tools",
                    question=chunk.question,
                    compared=chunk.compared,
                    answers=chunk.answers,
                    agreement=chunk.agreement,
                    resolution=chunk.resolution,
                )
            elif isinstance(chunk, TurnEnd):
                self.totals.add(chunk.usage, chunk.cost)
                usage, cost, out.raw, notice = chunk.usage, chunk.cost, chunk.raw, chunk.notice
        self._prefetched.open()  # the planner's turn is over: speculative work may run
        out.text = "".join(text)
        out.reasoning = "".join(reasoning)
        if force:
            out.requests = []  # the budget is spent: whatever it asked for, it answers now
        yield self.emit(
            ev.Thought,
            turn=turn,
            text=out.text,
            reasoning=out.reasoning,
            step=step,
            usage=usage,
            cost=cost,
            notice=notice,
        )

    # -- tools -------------------------------------------------------------------------------
    async def call_tools(
        self,
        requests: list[ToolCallRequest],
        out: list[CallOutcome],
        *,
        tools: Sequence[Tool] | None = None,
        use_cache: bool = True,
    ) -> AsyncIterator[ev.Event]:
        """Run one turn's calls concurrently within the budget; yield results as they finish.

        ``out`` receives one outcome per request, in request order.
        """
        self._prefetched.open()  # tools run now, not the planner
        available = list(self.req.tools if tools is None else tools)
        requests = _unique_ids(requests)
        names = {t.name for t in available}
        # Only calls that name a real tool and parse count against the budget; the others
        # are answered with their error at once.
        valid = [r for r in requests if not r.parse_error and r.name in names]
        accepted = valid[: self.calls_left]
        for request in requests:
            tool = next((t for t in available if t.name == request.name), None)
            yield self.emit(
                ev.ToolCall,
                call_id=request.id,
                tool=request.name,
                arguments=request.arguments,
                model=tool.model if tool else None,
            )
        self.totals.calls += len(accepted)
        done: dict[str, CallOutcome] = {}
        for request in requests:
            if request in accepted:
                continue
            if request in valid:  # valid but over the budget
                result = ToolResult(
                    output="", error=f"Not run: the budget of {self.budget} tool calls is spent."
                )
            else:
                result, _ = await self._call_tool(request, available, use_cache)
            done[request.id] = CallOutcome(request, result)
            yield self._result_event(done[request.id], 0.0)

        if use_cache:
            await self._prime_cache(accepted, available)

        async def one(request: ToolCallRequest) -> tuple[CallOutcome, float]:
            begun = time.monotonic()
            result, cached = await self._call_tool(request, available, use_cache)
            return CallOutcome(request, result, cached), time.monotonic() - begun

        tasks = [asyncio.ensure_future(one(r)) for r in accepted]
        try:
            for next_done in asyncio.as_completed(tasks):
                outcome, duration = await next_done
                done[outcome.request.id] = outcome
                if not outcome.cached:
                    self.totals.add(outcome.result.usage, outcome.result.cost)
                yield self._result_event(outcome, duration)
        finally:  # stopped or cancelled: do not let paid calls run on unseen
            for task in tasks:
                task.cancel()
            self._looked_up.clear()
        out.extend(done[r.id] for r in requests)

    def _result_event(self, outcome: CallOutcome, duration: float) -> ev.ToolResultEvent:
        result = outcome.result
        return self.emit(
            ev.ToolResultEvent,
            call_id=outcome.request.id,
            tool=outcome.request.name,
            output=result.output,
            data=result.data,
            duration_s=round(duration, 3),
            usage=result.usage,
            cost=0.0 if outcome.cached else result.cost,
            cached=outcome.cached,
            error=result.error,
        )

    # -- prefetch ----------------------------------------------------------------------------
    def prefetch(self) -> None:
        """Start decoding now, and the cheap local analyses (voice activity, signal facts)
        as soon as they cannot delay the planner (``agent.prefetch``).

        Tools marked ``prefetch = True`` run on the first recording with no arguments; when
        the planner asks for that call, it gets this one (still running or done). Unclaimed
        ones are cancelled when the run ends."""
        for audio in self.req.audio:  # every tool needs the samples first: at once
            self._background.append(
                asyncio.ensure_future(asyncio.to_thread(self.store.samples, audio))
            )
        if not self.req.audio:
            return
        audio = self.req.audio[0]
        for tool in self.req.tools:
            # ``prefetch_max_s``: a costly analysis is started early only on shorter audio.
            limit = getattr(tool, "prefetch_max_s", None)
            if getattr(tool, "prefetch", False) and (limit is None or audio.duration_s <= limit):
                key = cache_key(audio.id, tool.name, {}, tool.model)
                self._prefetched.start(
                    key, lambda tool=tool: self._fetch(tool, audio, {}, list(self.req.tools), True)
                )

    def close(self) -> None:
        """Cancel prefetched calls nobody asked for."""
        self._prefetched.cancel()

    @staticmethod
    def result_messages(outcomes: Sequence[CallOutcome]) -> list[ChatMessage]:
        """Tool results as the planner reads them (errors marked ``ERROR:``)."""
        return [
            ChatMessage(
                "tool",
                f"ERROR: {o.result.error}" if o.result.error else o.result.output,
                tool_call_id=o.request.id,
                name=o.request.name,
                data={"arguments": o.request.arguments, **o.result.data},
                error=o.result.error,
            )
            for o in outcomes
        ]

    def note(self, text: str, step: str) -> ev.Thought:
        """A step the strategy itself took (not the planner), shown like a thought."""
        self.turns += 1
        return self.emit(ev.Thought, turn=self.turns, text=text, step=step)

    # -- answer ------------------------------------------------------------------------------
    async def make_answer(
        self, text: str, final: FinalAnswer | None = None, *, forced: bool = False
    ) -> ev.Answer:
        """The answer event: the planner's text mapped onto the choices (rule recorded)."""
        answer_text = final.text if final else extract_answer(text)
        if final and final.choice in self.req.choices:  # the planner named the choice itself
            match = ChoiceMatch(final.choice, "exact")
        elif not self.req.choices:  # nothing to map onto: no thread needed
            match = ChoiceMatch(None, "none")
        else:
            candidate = final.choice if final and final.choice else answer_text
            match = await asyncio.to_thread(
                match_choice, candidate, self.req.choices, self.similarity
            )
        self.answer = self.emit(
            ev.Answer,
            text=answer_text,
            choice=match.choice,
            match_rule=match.rule if self.req.choices else None,
            confidence=match.confidence(final.confidence if final else None),
            rationale=final.rationale if final else strip_answer(text),
            forced=forced,
            guess=bool(final and final.guess) or match.guess,
            without_tools=self.totals.calls == 0,  # a text-only guess, not evidence
        )
        return self.answer
