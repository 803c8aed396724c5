"""Clip: cut a time range of the recording and run another tool on just that range."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.audio import cut
from agent.tools.base import ToolContext, ToolError, ToolResult, local_tool
from agent.tools.windows import time_range


@local_tool
class ClipTool:
    name = "clip"
    label = "Clip a time range"
    description = (
        "Cut the time range [start, end] (seconds) out of the recording and run another tool "
        "on that range only, e.g. to transcribe or classify one part. The inner tool's text "
        "gives times relative to the clip (a note says the offset)."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "start": {"type": "number", "minimum": 0, "description": "Start time in seconds."},
            "end": {"type": "number", "minimum": 0, "description": "End time in seconds."},
            "tool": {"type": "string", "description": "Name of the tool to run on the range."},
            "arguments": {"type": "object", "description": "Arguments for that tool."},
        },
        "required": ["start", "end", "tool"],
    }
    model = None
    local = True
    composite = True  # its result depends on the inner tool (and its model): never cached
    requires = ("pydub",)  # importable packages it needs

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        duration = len(ctx.samples) / ctx.sample_rate
        start, end = time_range(arguments, duration)
        inner_name = str(arguments.get("tool", ""))
        inner = ctx.tools.get(inner_name)
        if inner is None or inner_name == self.name:
            names = ", ".join(n for n in ctx.tools if n != self.name)
            raise ToolError(f"Cannot run '{inner_name}' on a clip. Tools: {names}.")
        inner_args = arguments.get("arguments") or {}
        if not isinstance(inner_args, dict):
            raise ToolError("arguments must be an object.")
        part = cut(ctx.samples, start, end)
        result = await inner(dataclasses.replace(ctx, samples=part, runner=None), dict(inner_args))
        data = _shift_times(result.data, start)
        data["clip"] = {"start": start, "end": end, "tool": inner_name}
        return result.model_copy(
            update={
                "output": f"[{inner_name} on {start:.2f}–{end:.2f} s; times shifted to the "
                f"whole recording]\n{_shift_text_note(result.output, start)}",
                "data": data,
            }
        )


_TIME_KEYS = ("start", "end")


def _shift_times(value: Any, offset: float) -> Any:
    """Move every start/end (and beat list) in a tool's data by the clip's offset."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _TIME_KEYS and isinstance(item, int | float):
                out[key] = round(item + offset, 2)
            elif key in ("beats", "beat_times") and isinstance(item, list):
                out[key] = [round(b + offset, 2) for b in item]
            else:
                out[key] = _shift_times(item, offset)
        return out
    if isinstance(value, list):
        return [_shift_times(v, offset) for v in value]
    return value


def _shift_text_note(output: str, offset: float) -> str:
    if offset == 0:
        return output
    return output + f"\n(Times in the text above are relative to the clip; add {offset:.2f} s.)"
