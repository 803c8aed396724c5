"""Music facts: tempo, beats and key with librosa; notes with basic-pitch's ONNX model."""

from __future__ import annotations

from typing import Any

from agent.local_models.executor import run_model
from agent.tools.base import ToolContext, ToolResult, local_tool


@local_tool
class MusicTool:
    name = "music_analysis"
    label = "Music analysis (librosa, basic-pitch)"
    description = (
        "Measure musical facts: tempo in BPM, beat times, the most likely key (major/minor) "
        "and, when asked, the notes played (pitch, start, end)."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "notes": {"type": "boolean", "description": "Also transcribe notes (slower)."}
        },
    }
    model = "librosa + basic-pitch"
    local = True
    requires = ("librosa", "onnxruntime", "basic_pitch")  # importable packages it needs
    colour = "#6a3d9a"  # its lane on the timeline

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import music

        facts = await run_model(music.analyze, ctx.samples)
        beats = [round(float(b), 2) for b in facts.beat_times]
        lines = [
            f"Tempo: about {facts.tempo_bpm:.1f} BPM ({len(beats)} beats found)."
            if facts.tempo_bpm
            else "Tempo: no steady beat found.",
            f"Key: {facts.key} (template correlation {facts.key_confidence:.2f}; "
            "below 0.5 the key is uncertain)."
            if facts.key
            else "Key: no tonal content to estimate a key from.",
            "Trust these only if the recording contains music (ask sound_events).",
        ]
        data: dict[str, Any] = {
            "tempo_bpm": round(float(facts.tempo_bpm), 1) if facts.tempo_bpm else None,
            "beats": beats[:400],
            "key": facts.key,
            "key_confidence": round(float(facts.key_confidence or 0.0), 3),
        }
        if arguments.get("notes"):
            notes = await run_model(music.notes, ctx.samples)
            data["notes"] = [
                {
                    "start": round(n.start, 2),
                    "end": round(n.end, 2),
                    "pitch_midi": int(n.pitch_midi),
                    "name": n.name,
                }
                for n in notes[:500]
            ]
            names = [n.name for n in notes]
            lines.append(
                f"Notes ({len(notes)}): "
                + (" ".join(names[:60]) if names else "none found")
                + (" ..." if len(names) > 60 else "")
            )
            data["spans"] = [
                {"start": n["start"], "end": n["end"], "label": n["name"]} for n in data["notes"]
            ][:60]
        return ToolResult(output="\n".join(lines), data=data)
