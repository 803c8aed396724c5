"""The caller is the planner: one tool call chosen by another program, run as a stored run.

When another program calls one audio tool itself (an MCP client calling ``transcribe``, say),
the call still goes through the loop, so that it has what every run has: the audio resolved
by id, the tool cache, the timeout, the daily spend check, and events that are stored and
shown in the trace. This planner asks for exactly the call it was given, then answers with
that call's result. It decides nothing, and says so in its label.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agent.planners.base import (
    ChatMessage,
    FinalAnswer,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)

DIRECT_PLANNER = "direct"
# Runs of this planner make one call; a budget of two keeps the answer turn unforced.
DIRECT_BUDGET = 2


def call_text(tool: str, arguments: dict[str, Any]) -> str:
    """``tool {"arg": ...}``: how a direct call reads in a question or a trace."""
    if not arguments:
        return tool
    return f"{tool} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}"


class DirectCallPlanner:
    """Asks for ``tool(arguments)`` once, then answers with its output (or its error).

    ``priced``: the remote model the call ends up using (a remote tool's own, or the audio
    model behind ``ask_audio``), so that the owner's daily spend limit is checked before the
    call as it is before a paid planner turn (``is_paid`` reads ``config``)."""

    is_llm = False
    model: str | None = None

    def __init__(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        caller: str = "another program",
        priced: Any = None,
    ) -> None:
        self.name = DIRECT_PLANNER
        self.label = f"Tool called directly by {caller}; no planner"
        self.tool = tool
        self.arguments = dict(arguments)
        self.caller = caller
        config = getattr(priced, "config", None)
        if config is not None:
            self.config = config

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        results = [m for m in messages if m.role == "tool"]
        if not results and not force_answer:
            yield TextDelta(f"{self.caller} called {call_text(self.tool, self.arguments)}.")
            yield ToolCallRequest("call_1", self.tool, dict(self.arguments))
        elif not results:
            yield FinalAnswer(text=f"{self.tool} was not run.")
        else:
            last = results[-1]
            text = f"Failed: {last.error}" if last.error else last.content
            yield FinalAnswer(text=text, rationale=f"The output of {self.tool}, as returned.")
        yield TurnEnd()
