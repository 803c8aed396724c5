"""What the offline planner reads from the conversation: the question being answered now,
the tools' results gathered for it, and the strategy step it is asked to take."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.planners.base import ChatMessage
from agent.strategies.steps import Step


@dataclass
class Situation:
    """What the planner reads from the conversation for the current question."""

    question: str
    choices: list[str]
    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    step: Step | None = None
    step_data: dict[str, Any] = field(default_factory=dict)


def read_situation(messages: list[ChatMessage]) -> Situation:
    """The question being answered now, the tool evidence gathered for it, and the step."""
    index = max(
        (
            i
            for i, m in enumerate(messages)
            if m.role == "user" and "question" in m.data and not m.data.get("prior")
        ),
        default=None,
    )
    if index is None:
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        return Situation(last_user.content if last_user else "", [])
    current = messages[index]
    situation = Situation(current.data["question"], list(current.data.get("choices", [])))
    for message in messages[index:]:
        if message.role == "tool" and message.name:
            data = dict(message.data)
            if message.error:
                data["_error"] = message.error
            situation.results.append((message.name, data))
        elif message.role == "user" and message.data.get("step"):
            situation.step = Step.of(message.data["step"])
            situation.step_data = message.data
            for source in message.data.get("sources", []):
                situation.results.append((source["tool"], source.get("data", {})))
    return situation
