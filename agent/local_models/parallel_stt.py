"""Long audio transcribed in parallel: its speech chunks split into groups, one model job each.

faster-whisper's batched pipeline finds the speech (Silero VAD), packs it into chunks of up to
30 s of speech and decodes the chunks in batches: one call, on one model worker. Here the same
chunks (same VAD options, same packing) are split into as many contiguous groups as the model
executor has workers, each group is decoded as its own job (CTranslate2 releases the GIL and
the model is loaded with ``num_workers`` = executor workers), and the segments are merged in
time order with their times mapped back onto the whole recording. Every chunk is decoded on
its own in either path (no text carried over between chunks), so the text is the same as one
sequential call's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from agent.local_models import executor
from agent.local_models.whisper_asr import (
    SAMPLE_RATE,
    SILENCE_PEAK,
    Segment,
    Transcript,
    build_transcript,
    get_model,
    is_multilingual,
    segment_of,
)

T = TypeVar("T")
CHUNK_S = 30  # the pipeline's chunk length (whisper's window)
PARALLEL_ABOVE_S = 30.0  # shorter audio has at most one chunk: nothing to split


@dataclass(frozen=True)
class Part:
    """One group's segments (times on the whole recording) and the language it was read in."""

    segments: list[Segment]
    language: str
    language_probability: float


@dataclass(frozen=True)
class Chunk:
    """Speech stretches (sample offsets in the whole recording) decoded as one window."""

    stretches: list[dict[str, int]]

    @property
    def samples(self) -> int:
        return sum(s["end"] - s["start"] for s in self.stretches)


def speech_chunks(samples: np.ndarray, chunk_s: float = CHUNK_S) -> list[Chunk]:
    """The speech packed into windows exactly as the batched pipeline packs it.

    faster-whisper's ``collect_chunks`` packs the audio this way, but its metadata leaves out
    the first stretch of every chunk after the first, so the packing is redone here.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    # The pipeline's own defaults for vad_filter=True.
    options = VadOptions(max_speech_duration_s=chunk_s, min_silence_duration_ms=160)
    limit = chunk_s * SAMPLE_RATE
    chunks: list[list[dict[str, int]]] = []
    size = limit + 1  # no open chunk yet
    for stretch in get_speech_timestamps(audio, options):
        length = stretch["end"] - stretch["start"]
        if size + length > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(stretch)
        size += length
    return [Chunk(c) for c in chunks]


def split_contiguous(
    items: Sequence[T], groups: int, weight: Callable[[T], float]
) -> list[list[T]]:
    """At most ``groups`` runs of consecutive items with about the same total weight each:
    each item goes to the group its weight's midpoint falls in."""
    total = sum(weight(item) for item in items)
    groups = max(1, min(groups, len(items)))
    out: list[list[T]] = [[] for _ in range(groups)]
    done = 0.0
    for item in items:
        w = weight(item)
        index = int(groups * (done + w / 2) / total) if total > 0 else 0
        out[min(index, groups - 1)].append(item)
        done += w
    return [g for g in out if g]


def split_groups(chunks: list[Chunk], groups: int) -> list[list[Chunk]]:
    """Contiguous groups of chunks with about the same amount of speech each."""
    return split_contiguous(chunks, groups, lambda c: c.samples)


def decode_group(
    samples: np.ndarray,
    group: list[Chunk],
    *,
    beam_size: int = 5,
    word_timestamps: bool = False,
    initial_prompt: str | None = None,
    batch_size: int = 8,
    language: str | None = None,
) -> Part:
    """Decode one group's chunks (one model job) with times on the whole recording.
    ``language`` is used by a multilingual model only (None: detect)."""
    from faster_whisper.transcribe import restore_speech_timestamps

    from agent.local_models.whisper_asr import batched_pipeline

    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    stretches = [s for chunk in group for s in chunk.stretches]
    speech = np.concatenate([audio[s["start"] : s["end"]] for s in stretches])
    # Each chunk is one clip of the group's speech-only audio, as the pipeline cuts it.
    clips, at = [], 0
    for chunk in group:
        clips.append({"start": at / SAMPLE_RATE, "end": (at + chunk.samples) / SAMPLE_RATE})
        at += chunk.samples
    multilingual = is_multilingual()
    segments, info = batched_pipeline().transcribe(
        speech,
        language=language if multilingual else "en",
        clip_timestamps=clips,
        beam_size=beam_size,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        batch_size=batch_size,
    )
    restored = restore_speech_timestamps(segments, stretches, SAMPLE_RATE)
    return Part(
        [segment_of(s) for s in restored], str(info.language), float(info.language_probability)
    )


def merge(parts: list[Part]) -> Transcript:
    """All groups' segments in time order, in one transcript (the first group's language)."""
    _, name = get_model()
    segments = sorted((s for p in parts for s in p.segments), key=lambda s: (s.start, s.end))
    if not parts:
        return build_transcript([], "" if is_multilingual() else "en", 0.0, name)
    return build_transcript(segments, parts[0].language, parts[0].language_probability, name)


def _chunks(samples: np.ndarray, chunk_s: float = CHUNK_S) -> list[Chunk]:
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size < SAMPLE_RATE // 100 or float(np.max(np.abs(audio))) < SILENCE_PEAK:
        return []
    return speech_chunks(audio, chunk_s)


def transcribe_in_groups(
    samples: np.ndarray, groups: int = 1, *, chunk_s: float = CHUNK_S, **options: Any
) -> Transcript:
    """The same decoding in this thread, group after group (``groups=1``: the sequential
    reference). ``chunk_s`` below 30 packs less speech per window (tests)."""
    chunks = _chunks(samples, chunk_s)
    return merge([decode_group(samples, g, **options) for g in split_groups(chunks, groups)])


async def transcribe(
    samples: np.ndarray, *, workers: int | None = None, chunk_s: float = CHUNK_S, **options: Any
) -> Transcript:
    """Transcribe long audio with one model job per group of chunks, the groups at once.

    ``workers`` defaults to the model executor's: the groups queue there like any other model
    call, so concurrent tools never run more decoding threads than the executor allows.
    Options: ``beam_size``, ``word_timestamps``, ``initial_prompt``, ``batch_size``,
    ``language``.
    """
    chunks = await executor.run_model(_chunks, samples, chunk_s)
    groups = split_groups(chunks, workers or executor.model_workers())
    parts = await asyncio.gather(
        *(executor.run_model(decode_group, samples, g, **options) for g in groups)
    )
    return merge(list(parts))


async def transcribe_spans(
    samples: np.ndarray,
    spans: list[tuple[float, float]],
    *,
    workers: int | None = None,
    initial_prompt: str | None = None,
    word_timestamps: bool = False,
) -> Transcript:
    """``whisper_asr.transcribe_spans`` (one segment per speech span) with the spans split
    into contiguous groups of about the same length, one model job per group, at once."""
    from agent.local_models import whisper_asr

    groups = split_contiguous(spans, workers or executor.model_workers(), lambda s: s[1] - s[0])
    longest = max((b - a for a, b in spans), default=0.0)
    parts = await asyncio.gather(
        *(
            executor.run_model(
                whisper_asr.transcribe_spans,
                samples,
                group,
                initial_prompt=initial_prompt,
                longest_s=longest,
                word_timestamps=word_timestamps,
            )
            for group in groups
        )
    )
    if not parts:
        return whisper_asr.transcribe_spans(samples, [])
    segments = sorted((s for p in parts for s in p.segments), key=lambda s: (s.start, s.end))
    first = parts[0]
    return build_transcript(segments, first.language, first.language_probability, first.model_name)
