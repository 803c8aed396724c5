"""Voice activity: where speech is, with the Silero VAD that ships in faster-whisper."""

from __future__ import annotations

from typing import Any

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult, local_tool
from agent.tools.format import span_list


@local_tool
class SpeechActivityTool:
    name = "speech_activity"
    label = "Speech activity (Silero VAD)"
    description = (
        "Find the time spans that contain speech (voice activity detection). "
        "Use it to tell whether anyone speaks, and when."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    model = "silero-vad"
    prefetch = True  # cheap and often needed: started when a question arrives
    local = True
    requires = ("faster_whisper",)  # importable packages it needs
    colour = "#23702a"  # its lane on the timeline

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import vad

        spans = await run_model(vad.speech_spans, ctx.samples)
        duration = len(ctx.samples) / ctx.sample_rate
        speech = sum(b - a for a, b in spans)
        if spans:
            output = (
                f"Speech in {len(spans)} span(s), {speech:.1f} s of {duration:.1f} s: "
                f"{span_list(spans)}."
            )
        else:
            output = f"No speech detected in {duration:.1f} s of audio."
        return ToolResult(
            output=output,
            data={
                "speech_seconds": round(speech, 2),
                "duration_s": round(duration, 2),
                "spans": [
                    {"start": round(a, 2), "end": round(b, 2), "label": "speech"} for a, b in spans
                ],
            },
        )
