"""The orchestration loop: one question, one planner, one set of tools -> a stream of events.

The loop builds the prompt, asks the planner for a turn, runs the requested tool calls
(all calls of one turn concurrently), feeds the results back, and stops at the answer or
at the budget, after which the planner must answer from what it has. Tool errors become
``tool_result`` events with ``error`` set and are shown to the planner, never swallowed.
Identical calls (same audio, tool, arguments, model) are served from the cache.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.answer import Similarity, extract_answer, match_choice
from agent.audio import AudioRef, AudioStore
from agent.planners.base import (
    ChatMessage,
    FinalAnswer,
    Planner,
    PlannerError,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.prompts import FORCE_ANSWER, audio_alias, question_prompt, system_prompt
from agent.tools.base import (
    MemoryToolCache,
    Tool,
    ToolCache,
    ToolContext,
    ToolError,
    ToolResult,
    cache_key,
)

DEFAULT_BUDGET = 20
DEFAULT_TOOL_TIMEOUT_S = 180.0


@dataclass
class PriorTurn:
    """An earlier question and answer in the same conversation."""

    question: str
    answer: str
    choices: list[str] = field(default_factory=list)


@dataclass
class RunRequest:
    question: str
    audio: list[AudioRef]
    planner: Planner
    tools: list[Tool]
    choices: list[str] = field(default_factory=list)
    history: list[PriorTurn] = field(default_factory=list)
    strategy: str = "react"
    budget: int = DEFAULT_BUDGET
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)


class _Emitter:
    """Numbers events 1, 2, 3 ... for one run."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seq = 0

    def __call__(self, cls: type[ev.EventBase], **fields: Any) -> Any:
        self.seq += 1
        return cls(run_id=self.run_id, seq=self.seq, **fields)


@dataclass
class _Totals:
    calls: int = 0
    usage: ev.Usage = field(default_factory=ev.Usage)
    cost: float = 0.0

    def add(self, usage: ev.Usage, cost: float) -> None:
        self.usage = self.usage + usage
        self.cost += cost


def tool_specs(tools: Sequence[Tool], audio: Sequence[AudioRef]) -> list[ToolSpec]:
    """The schemas a planner sees: each tool's parameters plus the ``audio_id`` to use."""
    aliases = [audio_alias(i) for i in range(len(audio))]
    specs = []
    for tool in tools:
        params = dict(tool.parameters or {"type": "object", "properties": {}})
        props = dict(params.get("properties", {}))
        props["audio_id"] = {
            "type": "string",
            "enum": aliases,
            "description": "Which recording to use"
            + (f" (default {aliases[0]})" if aliases else ""),
        }
        specs.append(
            ToolSpec(
                tool.name,
                tool.description,
                {**params, "type": "object", "properties": props},
            )
        )
    return specs


def build_messages(req: RunRequest) -> list[ChatMessage]:
    messages = [ChatMessage("system", system_prompt(req.audio, req.budget))]
    for turn in req.history:
        messages.append(
            ChatMessage(
                "user",
                question_prompt(turn.question, turn.choices),
                data={"question": turn.question, "choices": turn.choices, "prior": True},
            )
        )
        messages.append(ChatMessage("assistant", turn.answer))
    messages.append(
        ChatMessage(
            "user",
            question_prompt(req.question, req.choices),
            data={"question": req.question, "choices": list(req.choices)},
        )
    )
    return messages


async def run_question(
    req: RunRequest,
    *,
    store: AudioStore,
    cache: ToolCache | None = None,
    similarity: Similarity | None = None,
) -> AsyncIterator[ev.Event]:
    """Answer one question; yields every event of the run, ending with finished or failed."""
    emit = _Emitter(req.run_id)
    cache = cache if cache is not None else MemoryToolCache()
    started = time.monotonic()
    totals = _Totals()
    yield emit(
        ev.RunStarted,
        question=req.question,
        choices=list(req.choices),
        audio_ids=[a.id for a in req.audio],
        planner=req.planner.name,
        planner_label=req.planner.label,
        tools=[t.name for t in req.tools],
        strategy=req.strategy,
        settings={"budget": req.budget, "model": req.planner.model},
    )
    messages = build_messages(req)
    specs = tool_specs(req.tools, req.audio)
    forced = False
    turn = 0
    max_turns = req.budget + 6  # a planner that neither answers nor calls tools is stopped
    try:
        while True:
            turn += 1
            if turn > max_turns:
                raise PlannerError(
                    f"The planner did not answer after {max_turns} turns.", kind="no_answer"
                )
            force_now = forced or totals.calls >= req.budget
            text_parts: list[str] = []
            reasoning_parts: list[str] = []
            requests: list[ToolCallRequest] = []
            final: FinalAnswer | None = None
            raw: Any = None
            turn_usage, turn_cost = ev.Usage(), 0.0
            async for chunk in req.planner.stream_turn(
                messages, [] if force_now else specs, force_answer=force_now
            ):
                if isinstance(chunk, TextDelta):
                    if chunk.text:
                        parts = reasoning_parts if chunk.kind == "reasoning" else text_parts
                        parts.append(chunk.text)
                        yield emit(ev.PlannerDelta, turn=turn, text=chunk.text, kind=chunk.kind)
                elif isinstance(chunk, ToolCallRequest):
                    requests.append(chunk)
                elif isinstance(chunk, FinalAnswer):
                    final = chunk
                elif isinstance(chunk, TurnEnd):
                    totals.add(chunk.usage, chunk.cost)
                    raw = chunk.raw
                    turn_usage, turn_cost = chunk.usage, chunk.cost
            text = "".join(text_parts)
            yield emit(
                ev.Thought,
                turn=turn,
                text=text,
                reasoning="".join(reasoning_parts),
                usage=turn_usage,
                cost=turn_cost,
            )
            if force_now:
                requests = []  # the budget is spent: whatever it asked for, it answers now
            if requests and final is None:
                messages.append(ChatMessage("assistant", text, tool_calls=requests, raw=raw))
                async for event in _run_calls(req, requests, messages, emit, totals, cache, store):
                    yield event
                if totals.calls >= req.budget:
                    forced = True
                    messages.append(ChatMessage("user", FORCE_ANSWER))
                continue
            answer_text = final.text if final else extract_answer(text)
            if not answer_text.strip() and not final:
                if force_now:
                    raise PlannerError("The planner returned an empty answer.", kind="no_answer")
                messages.append(ChatMessage("assistant", text))
                messages.append(ChatMessage("user", "Your reply was empty. " + FORCE_ANSWER))
                forced = True
                continue
            match = await asyncio.to_thread(
                match_choice,
                final.choice if final and final.choice else answer_text,
                req.choices,
                similarity,
            )
            yield emit(
                ev.Answer,
                text=answer_text,
                choice=match.choice,
                match_rule=match.rule if req.choices else None,
                confidence=final.confidence if final else None,
                rationale=final.rationale if final else text.strip(),
                forced=force_now,
            )
            yield emit(
                ev.RunFinished,
                calls=totals.calls,
                input_tokens=totals.usage.input_tokens,
                output_tokens=totals.usage.output_tokens,
                cost=round(totals.cost, 6),
                wall_s=round(time.monotonic() - started, 3),
                status="forced" if force_now else "ok",
            )
            return
    except PlannerError as exc:
        yield emit(ev.RunFailed, kind=exc.kind, message=str(exc))
    except Exception as exc:  # a bug or an unexpected planner failure: report, do not hide
        yield emit(
            ev.RunFailed,
            kind="internal_error",
            message=f"{type(exc).__name__}: {exc}",
        )


async def _run_calls(
    req: RunRequest,
    requests: list[ToolCallRequest],
    messages: list[ChatMessage],
    emit: _Emitter,
    totals: _Totals,
    cache: ToolCache,
    store: AudioStore,
) -> AsyncIterator[ev.Event]:
    """Run one turn's calls concurrently; yield each result as it completes."""
    remaining = req.budget - totals.calls
    accepted = requests[:remaining]
    over_budget = requests[remaining:]
    for request in requests:
        tool = next((t for t in req.tools if t.name == request.name), None)
        yield emit(
            ev.ToolCall,
            call_id=request.id,
            tool=request.name,
            arguments=request.arguments,
            model=tool.model if tool else None,
        )
    totals.calls += len(accepted)

    async def one(request: ToolCallRequest) -> tuple[ToolCallRequest, ToolResult, float, bool]:
        begun = time.monotonic()
        result, cached = await _call_tool(req, request, cache, store)
        return request, result, time.monotonic() - begun, cached

    results: dict[str, ToolResult] = {}
    for request in over_budget:
        results[request.id] = ToolResult(
            output="", error=f"Not run: the budget of {req.budget} tool calls is spent."
        )
        yield _result_event(emit, request, results[request.id], 0.0, False)
    for next_done in asyncio.as_completed([one(r) for r in accepted]):
        request, result, duration, cached = await next_done
        results[request.id] = result
        if not cached:
            totals.add(result.usage, result.cost)
        yield _result_event(emit, request, result, duration, cached)
    for request in requests:
        result = results[request.id]
        content = f"ERROR: {result.error}" if result.error else result.output
        messages.append(
            ChatMessage(
                "tool",
                content,
                tool_call_id=request.id,
                name=request.name,
                data={"arguments": request.arguments, **result.data},
                error=result.error,
            )
        )


def _result_event(
    emit: _Emitter, request: ToolCallRequest, result: ToolResult, duration: float, cached: bool
) -> ev.ToolResultEvent:
    return emit(
        ev.ToolResultEvent,
        call_id=request.id,
        tool=request.name,
        output=result.output,
        data=result.data,
        duration_s=round(duration, 3),
        usage=result.usage,
        cost=0.0 if cached else result.cost,
        cached=cached,
        error=result.error,
    )


async def _call_tool(
    req: RunRequest, request: ToolCallRequest, cache: ToolCache, store: AudioStore
) -> tuple[ToolResult, bool]:
    if request.parse_error:
        return ToolResult(output="", error=request.parse_error), False
    tool = next((t for t in req.tools if t.name == request.name), None)
    if tool is None:
        names = ", ".join(t.name for t in req.tools) or "none"
        return ToolResult(
            output="", error=f"Unknown tool '{request.name}'. Available tools: {names}."
        ), False
    arguments = dict(request.arguments)
    alias = str(arguments.pop("audio_id", "") or audio_alias(0))
    aliases = {audio_alias(i): a for i, a in enumerate(req.audio)}
    audio = aliases.get(alias)
    if audio is None:
        known = ", ".join(aliases) or "none (no audio was given)"
        error = f"Unknown audio id '{alias}'. Known ids: {known}."
        return ToolResult(output="", error=error), False
    key = cache_key(audio.id, tool.name, arguments, tool.model)
    hit = await asyncio.to_thread(cache.get, key)
    if hit is not None:
        return hit, True
    try:
        samples = await asyncio.to_thread(store.samples, audio)
        ctx = ToolContext(audio=audio, samples=samples, tools={t.name: t for t in req.tools})
        result = await asyncio.wait_for(tool(ctx, arguments), timeout=req.tool_timeout_s)
    except TimeoutError:
        result = ToolResult(
            output="", error=f"{tool.name} timed out after {req.tool_timeout_s:.0f} s."
        )
    except ToolError as exc:
        result = ToolResult(output="", error=f"{tool.name}: {exc}")
    except Exception as exc:  # the tool's failure goes to the planner, never swallowed
        result = ToolResult(output="", error=f"{tool.name} failed: {type(exc).__name__}: {exc}")
    if result.model is None and tool.model:
        result = result.model_copy(update={"model": tool.model})
    if result.error is None:
        await asyncio.to_thread(cache.put, key, tool.name, audio.id, result)
    return result, False
