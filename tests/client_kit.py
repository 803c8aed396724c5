"""What the tests of the OpenAI-compatible API and the MCP server share: a scripted catalogue
(a planner that calls one tool, then answers), a real recording, OpenAI message parts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from agent.planners.base import ChatMessage, PlannerError
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn

FIXTURES = Path(__file__).parent / "fixtures"
DOG_CLIP = FIXTURES / "dog_bark_esc50.wav"
SPOKEN_DIGIT = FIXTURES / "digit_6_theo_4.wav"
DOG_B64 = base64.b64encode(DOG_CLIP.read_bytes()).decode()
CHOICES_TEXT = "Which animal is heard?\n1. Cat\n2. Dog\n3. Cow"
BARK = "Top classes: Dog 0.91, Animal 0.80"


def scripted_registry(*, delay_s: float = 0.0) -> tuple[Registry, ScriptedPlanner, ScriptedTool]:
    """``scripted`` asks ``bark_tool`` once, then answers Dog (with confidence 0.8); a second
    question in a conversation is answered from the history it was shown."""
    registry = Registry()
    tool = ScriptedTool(
        "bark_tool",
        BARK,
        data={"labels": [{"label": "Dog", "score": 0.91}]},
        delay_s=delay_s,
        parameters={"type": "object", "properties": {"top_k": {"type": "integer"}}},
    )

    def turn(messages: list[ChatMessage], tools: Any, force: bool) -> ScriptedTurn:
        from agent.planners.base import FinalAnswer

        if any(m.role == "tool" for m in messages):
            prior = sum(1 for m in messages if m.data.get("prior"))
            return ScriptedTurn(
                f"The classifier hears a dog ({prior} earlier questions).",
                answer=FinalAnswer(text="Dog", confidence=0.8, rationale="bark_tool"),
            )
        return ScriptedTurn("Let me listen.", calls=[("bark_tool", {"top_k": 3})])

    planner = ScriptedPlanner([turn])
    registry.register(planner, kind="planner")
    registry.register(tool, kind="tool")
    return registry, planner, tool


def failing_registry() -> Registry:
    """``broken``: a planner whose model is down (a failed run, stored)."""
    registry, _, _ = scripted_registry()

    class Broken(ScriptedPlanner):
        async def stream_turn(self, *args: Any, **kwargs: Any):  # type: ignore[override]
            raise PlannerError("The planner's server is down; try again later.")
            yield  # pragma: no cover

    registry.register(Broken([], name="broken", label="Broken planner (tests)"), kind="planner")
    return registry


def audio_message(text: str = CHOICES_TEXT, data: str = DOG_B64) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
        ],
    }
