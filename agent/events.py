"""The event spine: one run is a stream of these typed events.

The loop yields them, storage appends them, the API streams them as server-sent
events, the UI renders them and the benchmark counts them. Nothing else in the
project defines an event shape. Consumers dispatch on ``type`` and end with
``assert_never`` so that a new event type is a type error wherever it is not handled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


def utc_now() -> datetime:
    return datetime.now(UTC)


class EventBase(BaseModel):
    run_id: str
    seq: int = Field(ge=1, description="1, 2, 3 ... per run")
    at: datetime = Field(default_factory=utc_now)


class Usage(BaseModel):
    input_tokens: int = Field(default=0, description="all input tokens, cache reads included")
    output_tokens: int = 0
    audio_seconds: float = 0.0
    cache_read_tokens: int = Field(
        default=0, description="input tokens served from the provider's cache (own price)"
    )
    reported: bool = Field(
        default=True, description="false: the provider sent no token counts for this call"
    )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            audio_seconds=self.audio_seconds + other.audio_seconds,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            reported=self.reported and other.reported,
        )


@dataclass(frozen=True)
class AudioRef:
    """One stored recording: its id (the sha256 of the original bytes) and decoded copy.

    Defined with the events (``agent.audio`` re-exports it) because storage keeps it (the
    audio table) and may know nothing of the agent but the spine's records."""

    id: str
    path: Path  # 16 kHz mono 16-bit wav owned by the store
    original_path: Path
    duration_s: float
    format: str
    original_sample_rate: int
    original_channels: int
    name: str = ""


class ToolResult(BaseModel):
    """What a tool returns: readable text for the planner, structured data for the UI.

    A ``tool_result`` event is made of it; storage keeps it in the tool cache (defined here,
    re-exported by ``agent.tools.base``, for the same reason as ``AudioRef``)."""

    output: str
    data: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    error: str | None = None
    model: str | None = None


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    question: str
    choices: list[str] = Field(default_factory=list)
    audio_ids: list[str] = Field(default_factory=list)
    planner: str
    planner_label: str = ""
    tools: list[str] = Field(default_factory=list)
    strategy: str = "react"
    settings: dict[str, Any] = Field(default_factory=dict)


class PlannerDelta(EventBase):
    type: Literal["planner_delta"] = "planner_delta"
    turn: int
    text: str
    kind: Literal["text", "reasoning"] = Field(
        default="text", description="reasoning: a reasoning model's own thinking, when returned"
    )
    step: str | None = Field(default=None, description="strategy step, e.g. plan, evidence")


class Thought(EventBase):
    type: Literal["thought"] = "thought"
    turn: int
    text: str
    reasoning: str = ""
    step: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    notice: str = Field(
        default="",
        description="what the provider changed about this turn and why (e.g. no reasoning "
        "summary: the organisation is not verified)",
    )


class ToolCall(EventBase):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None


class ToolResultEvent(EventBase):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    output: str
    data: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    cached: bool = False
    error: str | None = None


class Verification(EventBase):
    type: Literal["verification"] = "verification"
    scope: Literal["tools", "candidates", "planners"] = "tools"
    question: str = ""
    compared: list[str]
    answers: dict[str, str]
    agreement: bool
    resolution: str


class DocumentUpdate(EventBase):
    """The refine strategy's working document about the audio, after each iteration."""

    type: Literal["document"] = "document"
    iteration: int
    text: str
    note: str = ""


class Answer(EventBase):
    type: Literal["answer"] = "answer"
    text: str
    choice: str | None = None
    match_rule: str | None = Field(
        default=None, description="letter | exact | token | embedding | none"
    )
    confidence: float | None = None
    rationale: str = ""
    forced: bool = Field(default=False, description="answered because the tool budget was spent")
    guess: bool = Field(
        default=False, description="the evidence could not decide; this is the best guess"
    )
    without_tools: bool = Field(
        default=False,
        description="the planner answered without a single tool call: a text-only guess, "
        "not evidence from the audio",
    )


class Queued(EventBase):
    """The run waits for a free slot (the server runs a bounded number at once)."""

    type: Literal["queued"] = "queued"
    position: int = Field(ge=1, description="1: next to start")
    ahead: int = Field(ge=0, description="runs waiting before this one")
    running: int = Field(default=0, ge=0, description="runs holding a slot now")


class RunFinished(EventBase):
    type: Literal["run_finished"] = "run_finished"
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    wall_s: float
    cache_read_tokens: int = Field(
        default=0, description="of the input tokens, those the providers served from their cache"
    )
    status: Literal["ok", "forced", "degraded", "cancelled"] = "ok"
    degraded_tools: list[str] = Field(
        default_factory=list, description="tools that failed or timed out (status degraded)"
    )
    tokens_reported: bool = Field(
        default=True, description="false: some call's provider sent no token counts"
    )


class RunFailed(EventBase):
    type: Literal["run_failed"] = "run_failed"
    kind: str
    message: str


Event = Annotated[
    (
        RunStarted
        | Queued
        | PlannerDelta
        | Thought
        | ToolCall
        | ToolResultEvent
        | Verification
        | DocumentUpdate
        | Answer
        | RunFinished
        | RunFailed
    ),
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
TERMINAL_TYPES = frozenset({"run_finished", "run_failed"})


def parse_event(data: dict[str, Any] | str | bytes) -> Event:
    """Rebuild a typed event from its JSON form (a dict or a JSON string)."""
    if isinstance(data, (str, bytes)):
        return EVENT_ADAPTER.validate_json(data)
    return EVENT_ADAPTER.validate_python(data)
