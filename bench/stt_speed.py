"""Speech-to-text speed on a 60 s clip with sparse speech: whole-clip decoding against
decoding only the voice-activity spans in batches (the default for audio over 30 s).

    python -m bench.stt_speed [--data DIR] [--repeat 2]

The clip: 60 s of a quiet ESC-50 background (rain, -30 dB) with the first 4 s of three
LibriSpeech readings from ../shared/data/librosa at 5 s, 25 s and 45 s (12 s of speech).
Prints seconds per run (warm, best of ``--repeat``), the speed-up, and both transcripts' word
overlap with each other.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    from agent.local_models import whisper_asr

    clip = sparse_clip(args.data)
    whisper_asr.transcribe(clip[: 2 * SR])  # load the model outside the timings
    results = {}
    for label, batched in (
        ("whole clip (previous default)", False),
        ("speech spans, batched", True),
    ):
        best, text = float("inf"), ""
        for _ in range(args.repeat):
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
