"""The Planner protocol: a text-only model (or rule policy) that plans tool calls.

A planner streams one *turn* at a time: text deltas of its visible reasoning, then
either tool-call requests or nothing (its text is then the final answer). The loop
in ``agent.run`` owns the message history, the budget and the tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agent.events import Usage


@dataclass
class ToolSpec:
    """What a planner is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the planner's request could not be parsed (broken JSON, ...); the loop
    # reports it back to the planner as a failed call instead of running anything.
    parse_error: str | None = None


@dataclass
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name, on tool messages
    # Structured tool output. LLM planners read ``content``; the offline rule planner reads this.
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # A planner's own record of its turn (e.g. Gemini content with thought signatures),
    # handed back to that planner unchanged on later turns.
    raw: Any = None


@dataclass
class TextDelta:
    text: str
    kind: Literal["text", "reasoning"] = "text"


@dataclass
class TurnEnd:
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    raw: Any = None  # stored on the assistant message (see ChatMessage.raw)
    # What the provider made the adapter change about this turn, in a sentence for the
    # person (e.g. why there is no reasoning summary); shown with the turn's thought.
    notice: str = ""


@dataclass
class FinalAnswer:
    """A planner that knows its answer's structure says so directly (else the text is parsed)."""

    text: str
    choice: str | None = None
    confidence: float | None = None
    rationale: str = ""
    guess: bool = False  # the evidence could not decide between the best choices


@dataclass
class Verify:
    """A planner reports that it compared sources (tools or candidates) and how it resolved."""

    compared: list[str]
    answers: dict[str, str]
    agreement: bool
    resolution: str
    question: str = ""


PlannerChunk = TextDelta | ToolCallRequest | FinalAnswer | Verify | TurnEnd


class PlannerError(Exception):
    """The planner could not produce a turn; the message says what a person can do."""

    def __init__(self, message: str, kind: str = "planner_error") -> None:
        super().__init__(message)
        self.kind = kind


@runtime_checkable
class Planner(Protocol):
    name: str  # registry key, e.g. "offline"
    label: str  # what the UI shows, e.g. "Offline rule planner (not an LLM)"
    model: str | None
    is_llm: bool

    def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        """Stream one turn. ``force_answer``: the budget is spent and ``tools`` is empty.
        ``temperature``: a strategy's request (e.g. a second, more varied answer); planners
        that have no such notion ignore it."""
        ...
