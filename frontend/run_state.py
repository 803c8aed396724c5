"""One run's events folded into what is shown: its planner turns, tool calls (with their
results), answer and end, in the order each first appeared (used by the chat, Compare and
the trace table, while a run streams and when it is reopened)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, assert_never

from agent import events as ev


@dataclass
class Turn:
    turn: int
    started: datetime  # when the planner was asked (the event before its first delta)
    parts: list[str] = field(default_factory=list)  # the visible text
    thinking: list[str] = field(default_factory=list)  # a reasoning model's own thinking
    step: str | None = None  # the strategy's step ("plan 1", "answer" ...)
    thought: ev.Thought | None = None


@dataclass
class Call:
    call: ev.ToolCall
    result: ev.ToolResultEvent | None = None


@dataclass
class RunState:
    """The events of one run folded into what is shown, in the order it first appeared."""

    order: list[tuple[str, Any]] = field(default_factory=list)
    turns: dict[int, Turn] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)
    started: ev.RunStarted | None = None
    queued: ev.Queued | None = None  # the latest, while the run waits for a slot
    answer: ev.Answer | None = None
    finished: ev.RunFinished | None = None
    failed: ev.RunFailed | None = None
    last_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.finished is not None or self.failed is not None


def fold(events: Sequence[ev.Event]) -> RunState:
    state = RunState()
    for event in events:
        apply_event(state, event)
        state.last_at = event.at
    return state


def apply_event(state: RunState, event: ev.Event) -> None:
    if isinstance(event, ev.RunStarted):
        state.started = event
    elif isinstance(event, ev.Queued):
        state.queued = event
    elif isinstance(event, ev.PlannerDelta):
        turn = turn_of(state, event.turn, event.at)
        (turn.thinking if event.kind == "reasoning" else turn.parts).append(event.text)
        turn.step = turn.step or event.step
    elif isinstance(event, ev.Thought):
        turn = turn_of(state, event.turn, event.at)
        turn.thought = event
        turn.step = turn.step or event.step
    elif isinstance(event, ev.ToolCall):
        state.calls[event.call_id] = Call(event)
        state.order.append(("call", event.call_id))
    elif isinstance(event, ev.ToolResultEvent):
        entry = state.calls.get(event.call_id)
        if entry is None:  # a result without its call: show it anyway
            call = ev.ToolCall(
                run_id=event.run_id, seq=event.seq, at=event.at, call_id=event.call_id,
                tool=event.tool,
            )  # fmt: skip
            entry = state.calls[event.call_id] = Call(call)
            state.order.append(("call", event.call_id))
        entry.result = event
    elif isinstance(event, ev.Verification):
        state.order.append(("verification", event))
    elif isinstance(event, ev.DocumentUpdate):
        state.order.append(("document", event))
    elif isinstance(event, ev.Answer):
        state.answer = event
        state.order.append(("answer", None))
    elif isinstance(event, ev.RunFinished):
        state.finished = event
        if state.answer is None:
            state.order.append(("answer", None))
    elif isinstance(event, ev.RunFailed):
        state.failed = event
        state.order.append(("failed", event))
    else:
        assert_never(event)


def turn_of(state: RunState, turn: int, at: datetime) -> Turn:
    if turn not in state.turns:
        state.turns[turn] = Turn(turn, started=state.last_at or at)
        state.order.append(("turn", turn))
    return state.turns[turn]


def stopped(state: RunState) -> bool:
    """The run was stopped (Stop, or the API's stop): its status is ``cancelled``."""
    return state.failed is not None and state.failed.kind == "cancelled"


def anything_pending(state: RunState) -> bool:
    return any(t.thought is None for t in state.turns.values()) or any(
        c.result is None for c in state.calls.values()
    )
