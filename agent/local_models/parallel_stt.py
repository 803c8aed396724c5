"""Long audio transcribed in parallel: its speech chunks split into groups, one model job each.

faster-whisper's batched pipeline finds the speech (Silero VAD), packs it into chunks of up to
30 s of speech and decodes the chunks in batches: one call, on one model worker (that packing
and that one job are ``whisper_asr.speech_chunks`` and ``transcribe_chunked``). Here the same
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
from typing import Any, TypeVar

import numpy as np

from agent.local_models import executor, whisper_asr
from agent.local_models.whisper_asr import (
    WINDOW_S,
    Chunk,
    Transcript,
    build_transcript,
    decode_group,
    merge,
    speech_chunks,
)

T = TypeVar("T")
PARALLEL_ABOVE_S = float(WINDOW_S)  # shorter audio has at most one chunk: nothing to split


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


async def transcribe(
    samples: np.ndarray, *, workers: int | None = None, chunk_s: float = WINDOW_S, **options: Any
) -> Transcript:
    """Transcribe long audio with one model job per group of chunks, the groups at once.

    ``workers`` defaults to the model executor's: the groups queue there like any other model
    call, so concurrent tools never run more decoding threads than the executor allows.
    Options: ``beam_size``, ``word_timestamps``, ``initial_prompt``, ``batch_size``,
    ``language``.
    """
    chunks = await executor.run_model(speech_chunks, samples, chunk_s)
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
