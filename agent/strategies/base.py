"""What a strategy is, and small helpers the strategies share."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent import events as ev
from agent.planners.base import FinalAnswer
from agent.plugins import STRATEGIES_GROUP, registry

if TYPE_CHECKING:
    from agent.context import RunContext


class Strategy(Protocol):
    name: str
    default_budget: int

    def run(self, ctx: RunContext) -> AsyncIterator[ev.Event]:
        """Yield the run's events; must end with ``ctx.make_answer``'s event."""
        ...


@dataclass(frozen=True)
class StrategyInfo:
    """A registered strategy: how to make it and how the UI and the CLIs name it."""

    name: str
    label: str  # "Method (what it does)": the UI shows the part before " (" where narrow
    factory: Callable[[], Strategy]
    default: bool = False  # the strategy a question uses when none is named
    compared: bool = False  # among the strategies a comparison starts with


S = TypeVar("S", bound=Callable[[], Any])


def strategy(label: str, *, default: bool = False, compared: bool = False) -> Callable[[S], S]:
    """Register a strategy class (with ``name`` and ``default_budget``) in the strategies
    registry: ``@strategy("My method (what it does)")`` on its class."""

    def register(factory: S) -> S:
        name = str(factory.name)  # type: ignore[attr-defined]
        registry(STRATEGIES_GROUP).add(
            name, StrategyInfo(name, label, factory, default=default, compared=compared)
        )
        return factory

    return register


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model's reply (code fences and prose around it allowed)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in [i for i, c in enumerate(candidate) if c == "{"][:20]:
            try:
                value, _ = decoder.raw_decode(candidate[start:])
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


def as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


def final_from_json(text: str) -> FinalAnswer | None:
    """A final answer given as JSON ({"answer", "confidence", "rationale" or "reasoning"}).

    None when the reply holds no such object; the whole text is then parsed as the answer.
    """
    parsed = parse_json_object(text)
    if not parsed or "answer" not in parsed:
        return None
    try:
        confidence = float(parsed["confidence"]) if parsed.get("confidence") is not None else None
    except (TypeError, ValueError):
        confidence = None
    rationale = parsed.get("rationale", parsed.get("reasoning", parsed.get("reason", "")))
    return FinalAnswer(
        text=str(parsed["answer"]),
        confidence=confidence,
        rationale=str(rationale),
        guess=as_bool(parsed.get("guess", False)),
    )
