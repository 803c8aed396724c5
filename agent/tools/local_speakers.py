"""Speakers: how many voices take turns, and the pitch and register of each."""

from __future__ import annotations

from typing import Any

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult, local_tool
from agent.tools.format import span_list


@local_tool
class SpeakersTool:
    name = "speakers"
    label = "Speakers (voice features per speech span, clustered)"
    description = (
        "Count the different speakers: each speech segment (Silero VAD, cut at pauses) gets "
        "its voice features (pitch, MFCC statistics, spectral tilt, voice quality), and "
        "segments with similar voices are grouped. Gives each speaker's pitch, register and "
        "times, and says when the count is unsure. A rule-based estimate: two similar voices "
        "may merge."
    )
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    model = "silero-vad + librosa voice features + agglomerative clustering"
    local = True
    requires = ("faster_whisper", "librosa", "scipy")  # importable packages it needs

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import speakers
        from agent.local_models.signal import register_from_f0

        result = await run_model(speakers.from_audio, ctx.samples)
        spans, found = result.spans, result.speakers
        rows = []
        for s in found:
            rows.append(
                {
                    "speaker": s.index,
                    "f0_hz": round(s.f0_hz, 1) if s.f0_hz else None,
                    "register": register_from_f0(s.f0_hz, s.seconds),
                    "seconds": round(s.seconds, 2),
                    "spans": [[round(a, 2), round(b, 2)] for a, b in s.spans],
                }
            )
        if not found:
            output = "No speech long enough to compare voices."
        else:
            parts = [
                f"speaker {r['speaker']}: "
                + (f"about {r['f0_hz']:.0f} Hz" if r["f0_hz"] else "pitch unclear")
                + f", {span_list([tuple(x) for x in r['spans']])}"
                for r in rows
            ]
            output = f"{len(found)} speaker(s) in {len(spans)} speech span(s): " + "; ".join(parts)
            if result.unsure:
                output += " (unsure: the voices sit close to the line between fewer and more)"
        return ToolResult(
            output=output,
            data={
                "count": len(found),
                "unsure": result.unsure,
                # how far the nearest merge of voices sits from the line (None: one segment)
                "margin": round(result.margin, 3) if result.margin != float("inf") else None,
                "speech_spans": [[round(a, 2), round(b, 2)] for a, b in spans],
                "speakers": rows,
            },
        )
