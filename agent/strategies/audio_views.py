"""The two tool interfaces of the caption-first and refine strategies, built from the
tools the user enabled.

``caption`` describes the whole recording; ``ask_audio`` answers a free question about it.
Each uses the first enabled audio-language model (a remote tool that takes a question);
without one, it combines the local tools (sound events, speech-to-text, music and signal
facts) and says so. The local tools' structured data travels along as ``sources`` so the
offline planner can weigh it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent.planners.question_types import DESCRIPTION, classify, tool_arguments
from agent.prompts import question_prompt
from agent.tools.base import Tool, ToolContext, ToolError, ToolResult

CAPTION_PROMPT = (
    "Describe this recording in detail: the sounds and their sources, any speech (transcribe "
    "it and describe the speakers), any music (genre, instruments, tempo, mood), the acoustic "
    "scene, and when things happen."
)
LOCAL_CAPTION_TOOLS = ("sound_events", "transcribe", "music_analysis", "signal_stats")


def audio_language_model(tools: list[Tool]) -> Tool | None:
    """The first enabled remote tool that answers free questions about audio."""
    for tool in tools:
        props = (tool.parameters or {}).get("properties", {})
        if not tool.local and "question" in props:
            return tool
    return None


async def _local_sources(
    ctx: ToolContext,
    tools: list[Tool],
    names: tuple[str, ...],
    arguments: Callable[[str], dict[str, Any]] = lambda name: {},
) -> list[tuple[str, ToolResult]]:
    chosen = [t for name in names for t in tools if t.name == name]

    async def one(tool: Tool) -> tuple[str, ToolResult]:
        try:
            return tool.name, await ctx.run_tool(tool, arguments(tool.name))
        except Exception as exc:  # one failed source does not sink the caption
            return tool.name, ToolResult(output="", error=f"{tool.name}: {exc}")

    return list(await asyncio.gather(*(one(t) for t in chosen)))


def _combine(parts: list[tuple[str, ToolResult]], heading: str) -> ToolResult:
    lines = [heading]
    sources: list[dict[str, Any]] = []
    for name, result in parts:
        if result.error:
            lines.append(f"- {name}: failed ({result.error})")
            continue
        lines.append(f"- {name}: " + result.output.replace("\n", "\n  "))
        sources.append({"tool": name, "data": result.data})
    if not sources:
        raise ToolError("No local tool could describe the audio: " + "; ".join(lines[1:]))
    return ToolResult(output="\n".join(lines), data={"sources": sources}, model="local tools")


class _AudioView:
    """Answers through the first enabled audio-language model, else the local tools."""

    local = True
    composite = True  # combines other tools: cached call by call, not as a whole

    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools
        self.backend = audio_language_model(tools)
        self.model = self.backend.model if self.backend else "local tools"


class CaptionTool(_AudioView):
    name = "caption"
    label = "Caption the whole recording"
    description = (
        "Describe the whole recording in detail (sounds, speech, music, scene, timing). "
        "Optional focus: what the description should pay most attention to."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"focus": {"type": "string", "description": "What to focus on."}},
    }

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        focus = str(arguments.get("focus") or "").strip()
        if self.backend is not None:
            prompt = CAPTION_PROMPT + (f" Pay special attention to: {focus}." if focus else "")
            return await ctx.run_tool(self.backend, {"question": prompt})
        if focus:  # focused: only the local tools that answer that focus, not the whole stack
            qtype = classify(focus, [])
            parts = await _local_sources(
                ctx, self.tools, qtype.tools, lambda name: tool_arguments(name, qtype, [])
            )
            return _combine(parts, f"Description of {DESCRIPTION[qtype.kind]} from local tools:")
        parts = await _local_sources(ctx, self.tools, LOCAL_CAPTION_TOOLS)
        return _combine(parts, "Description assembled from the local analysis tools:")


class AskAudioTool(_AudioView):
    name = "ask_audio"
    label = "Ask about the audio"
    description = (
        "Ask a free-form question about the recording and get an answer from an audio model."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "What to ask."},
            "options": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Answer options, if the question has them.",
            },
        },
        "required": ["question"],
    }

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        question = str(arguments.get("question") or "").strip()
        if not question:
            raise ToolError("Give a question.")
        options = [str(o) for o in arguments.get("options") or [] if str(o).strip()]
        if self.backend is not None:
            asked = question_prompt(question, options)
            return await ctx.run_tool(self.backend, {"question": asked})
        qtype = classify(question, options)
        parts = await _local_sources(
            ctx, self.tools, qtype.tools, lambda name: tool_arguments(name, qtype, options)
        )
        heading = (
            "No audio-language model is enabled; for a question "
            f"{DESCRIPTION[qtype.kind]} the local tools report:"
        )
        return _combine(parts, heading)
