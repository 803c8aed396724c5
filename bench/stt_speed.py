"""Speech-to-text speed.

    python -m bench.stt_speed [--data DIR] [--repeat 2] [--long-s 300] [--skip sparse]

1. A 60 s clip with sparse speech: whole-clip decoding against decoding only the
   voice-activity spans in batches (the default for audio over 30 s). The clip: 60 s of a
   quiet ESC-50 background (rain, -30 dB) with the first 4 s of three LibriSpeech readings
   from ../shared/data/librosa at 5 s, 25 s and 45 s (12 s of speech).
2. A long clip (``--long-s``, 5 min by default) of mostly speech, composed from the three
   LibriSpeech readings and FSDD digits with short pauses: the batched speech chunks decoded
   in one model job (sequential) against split into one group per model worker, the groups
   decoded at once (``agent.local_models.parallel_stt``).

Prints seconds per run (warm, best of ``--repeat``), the speed-ups, and the transcripts' word
overlap (sparse) or whether the texts are identical (long).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.devsets import DEFAULT_DATA, loudest

SR = 16_000


def sparse_clip(data: Path) -> np.ndarray:
    from agent.audio import load_samples

    rain = load_samples(next((data / "esc50" / "audio").glob("*-10.wav")))  # class 10: rain
    bed = np.tile(loudest(rain, 5.0), 12)[: 60 * SR] * 0.03
    for offset, name in zip((5, 25, 45), ("3436-172162-0000", "198-209-0000", "5703-47212-0000"),
                            strict=True):  # fmt: skip
        speech = load_samples(data / "librosa" / f"{name}.ogg")[: 4 * SR]
        bed[offset * SR : offset * SR + speech.size] += 0.7 * speech / np.max(np.abs(speech))
    return bed.astype(np.float32)


LIBRI = ("3436-172162-0000", "198-209-0000", "5703-47212-0000")


def long_clip(data: Path, seconds: float = 300.0, seed: int = 0) -> np.ndarray:
    """Mostly speech: LibriSpeech readings and runs of FSDD digits, 0.3-1.5 s apart, over a
    faint noise floor, cut to ``seconds``."""
    import csv
    import random

    from agent.audio import load_samples

    rng = random.Random(seed)
    readings = [load_samples(data / "librosa" / f"{name}.ogg") for name in LIBRI]
    rows = list(csv.DictReader((data / "fsdd" / "labels.csv").open()))
    digits = [load_samples(data / "fsdd" / row["file"]) for row in rows]
    pieces, total = [], 0
    while total < seconds * SR:
        if rng.random() < 0.6:
            part = rng.choice(readings)
        else:
            part = np.concatenate(
                [np.concatenate([d, np.zeros(int(0.2 * SR), np.float32)])
                 for d in rng.sample(digits, rng.randint(3, 6))]
            )  # fmt: skip
        part = 0.7 * part / np.max(np.abs(part))
        gap = np.zeros(int(rng.uniform(0.3, 1.5) * SR), np.float32)
        pieces += [part.astype(np.float32), gap]
        total += part.size + gap.size
    clip = np.concatenate(pieces)[: int(seconds * SR)]
    noise = np.random.default_rng(seed).standard_normal(clip.size).astype(np.float32)
    return clip + 0.002 * noise


def sequential_vs_parallel(clip: np.ndarray, repeat: int) -> None:
    import asyncio

    from agent.local_models import executor, parallel_stt, whisper_asr

    workers = executor.model_workers()
    chunks = whisper_asr.speech_chunks(clip)
    speech = sum(c.samples for c in chunks) / SR
    print(
        f"long clip {clip.size / SR:.0f} s, {speech:.0f} s of speech in {len(chunks)} chunks; "
        f"model executor: {workers} workers x {executor.threads_per_call()} thread(s)"
    )
    timings, texts = {}, {}
    for label in ("sequential (one job)", f"parallel ({workers} groups at once)"):
        best = float("inf")
        for _ in range(repeat):
            begun = time.perf_counter()
            if label.startswith("sequential"):
                result = asyncio.run(executor.run_model(whisper_asr.transcribe_chunked, clip))
            else:
                result = asyncio.run(parallel_stt.transcribe(clip))
            best = min(best, time.perf_counter() - begun)
        timings[label], texts[label] = best, result.text
        print(f"{label:<32} {best:6.2f} s  {len(result.text.split())} words")
    (seq, par), (a, b) = timings.values(), texts.values()
    print(f"parallel speed-up x{seq / par:.2f}; texts identical: {a == b}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--long-s", type=float, default=300.0)
    parser.add_argument("--skip", default="", help="comma-separated: sparse, long")
    args = parser.parse_args()
    from agent.local_models import whisper_asr

    skip = set(args.skip.split(","))
    clip = sparse_clip(args.data)
    whisper_asr.transcribe(clip[: 2 * SR])  # load the model outside the timings
    if "sparse" not in skip:
        sparse_vs_whole(clip, args.repeat)
    if "long" not in skip:
        sequential_vs_parallel(long_clip(args.data, args.long_s), args.repeat)


def sparse_vs_whole(clip: np.ndarray, repeat: int) -> None:
    from agent.local_models import whisper_asr

    results = {}
    for label, batched in (
        ("whole clip (previous default)", False),
        ("speech spans, batched", True),
    ):
        best, text = float("inf"), ""
        for _ in range(repeat):
            begun = time.perf_counter()
            text = whisper_asr.transcribe(clip, batched=batched).text
            best = min(best, time.perf_counter() - begun)
        results[label] = (best, text)
        print(f"{label:<32} {best:6.2f} s  {len(text.split())} words")
    (old, old_text), (new, new_text) = results.values()
    a, b = set(old_text.lower().split()), set(new_text.lower().split())
    print(f"speed-up x{old / new:.1f}; word overlap {len(a & b) / max(1, len(a | b)):.0%}")


if __name__ == "__main__":
    main()
