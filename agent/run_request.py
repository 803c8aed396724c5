"""What a run is asked to do (``RunRequest``): the question, its recordings, the planner and
tools, the earlier turns, and the limits it runs within. Apart from ``agent.context``
(the machinery that carries a request out) so that the run manager and the service can
build one without it."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agent.audio import AudioRef
from agent.planners.base import Planner
from agent.tools.base import Tool

DEFAULT_TOOL_TIMEOUT_S = 180.0


def tool_timeout(req: RunRequest, tool: Tool) -> float:
    """The request's tool timeout, or longer for a remote tool whose one call with its
    retries may take longer (``tool.timeout_s``, derived from its catalogue entry)."""
    return max(req.tool_timeout_s, float(getattr(tool, "timeout_s", 0) or 0))


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
    strategy: str = ""  # "": the registry's default (named by run_question)
    budget: int | None = None  # None: the strategy's own default
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    first_seq: int = 1  # > 1 when the run manager stored events (queued) before it started
    # Before each paid planner turn or tool call: a reason to refuse it (the owner's daily
    # spend is used up), or None. Set by the run manager when a daily limit is configured.
    spend_check: Callable[[], Awaitable[str | None]] | None = None


def is_paid(model: Any) -> bool:
    """A remote planner or tool with a price in the catalogue (local ones cost nothing)."""
    prices = getattr(getattr(model, "config", None), "prices", None)
    if not dataclasses.is_dataclass(prices):
        return False
    values = (getattr(prices, f.name, 0.0) for f in dataclasses.fields(prices))
    return any(isinstance(v, int | float) and v > 0 for v in values)
