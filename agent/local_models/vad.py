"""Voice activity with the Silero VAD model that faster-whisper bundles (ONNX)."""

from __future__ import annotations

import os
import threading

import numpy as np

# huggingface_hub (imported with faster_whisper, lazily below) reads this at its import.
os.environ["HF_HUB_OFFLINE"] = "1"

SAMPLE_RATE = 16_000
_CHUNK = 512  # Silero's window at 16 kHz
_LOCK = threading.Lock()


def warm_up() -> None:
    from faster_whisper.vad import get_vad_model  # lru_cached there: one session per process

    with _LOCK:
        get_vad_model()


def speech_spans(
    samples: np.ndarray,
    *,
    min_silence_ms: int = 300,
    threshold: float = 0.5,
    min_speech_ms: int = 100,
    speech_pad_ms: int = 30,
) -> list[tuple[float, float]]:
    """Speech regions as (start_s, end_s), in order.

    Pauses shorter than ``min_silence_ms`` do not split a region; regions shorter than
    ``min_speech_ms`` are dropped; each region is widened by ``speech_pad_ms`` per side.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    warm_up()
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size == 0:
        return []
    duration = audio.size / SAMPLE_RATE
    if audio.size < _CHUNK:
        audio = np.pad(audio, (0, _CHUNK - audio.size))
    options = VadOptions(
        threshold=threshold,
        min_silence_duration_ms=min_silence_ms,
        min_speech_duration_ms=min_speech_ms,
        speech_pad_ms=speech_pad_ms,
    )
    spans = get_speech_timestamps(audio, options, sampling_rate=SAMPLE_RATE)
    return [
        (round(s["start"] / SAMPLE_RATE, 3), round(min(s["end"] / SAMPLE_RATE, duration), 3))
        for s in spans
    ]
