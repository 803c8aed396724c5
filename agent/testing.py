"""Fakes that ship with the package: a scripted planner and scripted tools.

Tests and demos use them to drive the real loop, storage, API and UI without any
model or network. Nothing here pretends to be a real model in the product.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.events import Usage
from agent.planners.base import (
    ChatMessage,
    FinalAnswer,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.tools.base import ToolContext, ToolError, ToolResult


@dataclass
class ScriptedTurn:
    """One planner turn: text (streamed word by word), then tool calls or an answer."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: FinalAnswer | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    raw_calls: list[ToolCallRequest] = field(default_factory=list)  # e.g. with parse_error


TurnSource = ScriptedTurn | Callable[[list[ChatMessage], list[ToolSpec], bool], ScriptedTurn]


@dataclass
class SeenTurn:
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    force_answer: bool
    temperature: float | None = None


class ScriptedPlanner:
    """Plays back a list of turns; records what the loop showed it on each turn.

    The script position is the number of turns seen so far, across runs: use one instance
    per run (or a callable turn that decides from the messages) when runs overlap.
    """

    is_llm = False

    def __init__(
        self,
        turns: list[TurnSource],
        *,
        name: str = "scripted",
        label: str = "Scripted planner (tests)",
        model: str | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.turns = list(turns)
        self.name = name
        self.label = label
        self.model = model
        self.delay_s = delay_s
        self.seen: list[SeenTurn] = []
        self._ids = itertools.count(1)

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        self.seen.append(SeenTurn(list(messages), list(tools), force_answer, temperature))
        index = len(self.seen) - 1
        source = self.turns[min(index, len(self.turns) - 1)] if self.turns else ScriptedTurn()
        turn = source(messages, tools, force_answer) if callable(source) else source
        for word in _words(turn.text):
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            yield TextDelta(word)
        for name, arguments in turn.calls:
            yield ToolCallRequest(f"call_{next(self._ids)}", name, dict(arguments))
        for raw in turn.raw_calls:
            yield raw
        if turn.answer is not None:
            yield turn.answer
        yield TurnEnd(turn.usage, turn.cost)


def _words(text: str) -> list[str]:
    parts = text.split(" ")
    return [p + (" " if i < len(parts) - 1 else "") for i, p in enumerate(parts) if p or i == 0]


class ScriptedTool:
    """A tool that waits ``delay_s`` (without blocking the loop) and returns a fixed result."""

    local = True

    def __init__(
        self,
        name: str,
        output: str = "ok",
        *,
        data: dict[str, Any] | None = None,
        delay_s: float = 0.0,
        error: str | None = None,
        raises: Exception | None = None,
        model: str | None = None,
        usage: Usage | None = None,
        cost: float = 0.0,
        description: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.label = name
        self.output = output
        self.data = data or {}
        self.delay_s = delay_s
        self.error = error
        self.raises = raises
        self.model = model
        self.usage = usage or Usage()
        self.cost = cost
        self.description = description or f"Scripted tool {name} (tests)."
        self.parameters = parameters or {"type": "object", "properties": {}}
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append(dict(arguments))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.raises is not None:
            raise self.raises
        if self.error is not None:
            raise ToolError(self.error)
        return ToolResult(
            output=self.output, data=dict(self.data), usage=self.usage, cost=self.cost
        )
