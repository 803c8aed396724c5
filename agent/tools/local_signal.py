"""Signal facts: duration, loudness, silence, pitch and a voice-register estimate."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult, local_tool
from agent.tools.format import span_list


@local_tool
class SignalTool:
    name = "signal_stats"
    label = "Signal facts (duration, loudness, pitch)"
    description = (
        "Measure the signal: duration, loudness (dBFS), silent parts, pitch statistics of the "
        "voiced frames and an estimate of the voice register (low / high). Cheap; use it for "
        "questions about length, loudness, silence, pitch or the speaker's voice."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    model = "numpy + librosa.pyin"
    prefetch = True  # often needed: started when a question arrives...
    prefetch_max_s = 120.0  # ...on clips up to 2 minutes (pYIN costs ~0.5 s per audio second)
    local = True
    requires = ("librosa",)  # importable packages it needs
    colour = "#555555"  # its lane on the timeline

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import signal

        facts = await run_model(signal.facts, ctx.samples)
        data = _jsonable(asdict(facts))
        lines = [
            f"Duration {facts.duration_s:.2f} s; RMS level {facts.rms_dbfs:.1f} dBFS, "
            f"peak {facts.peak_dbfs:.1f} dBFS.",
            f"Silence (below {facts.silence_threshold_dbfs:.0f} dBFS): "
            f"{facts.silence_ratio * 100:.0f}% of the time"
            + (f", spans {span_list(facts.silent_spans)}" if facts.silent_spans else "")
            + ".",
        ]
        if facts.f0_median_hz:
            lines.append(
                f"Pitch of voiced frames: median {facts.f0_median_hz:.0f} Hz, "
                f"range {facts.f0_p10_hz:.0f}–{facts.f0_p90_hz:.0f} Hz "
                f"({facts.voiced_ratio * 100:.0f}% of frames voiced)."
            )
        else:
            lines.append("No voiced (pitched) frames found.")
        lines.append(f"Voice register estimate: {facts.register}.")
        data["spans"] = [
            {"start": a, "end": b, "label": "silence"} for a, b in facts.silent_spans[:30]
        ]
        return ToolResult(output="\n".join(lines), data=data)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float):
        return round(value, 4)
    return value
