"""Audio in: decode any supported input once to 16 kHz mono, store it by content.

PyAV bundles FFmpeg's libraries, so wav, mp3, ogg, flac, m4a and webm decode
without a system ffmpeg. Every file is stored under its sha256; tools receive an
``AudioRef`` that the loop resolved from an id, never a path a planner typed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import threading
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import soundfile as sf

SAMPLE_RATE = 16_000
SUPPORTED_FORMATS = ("wav", "mp3", "ogg", "flac", "m4a", "webm", "opus", "aac", "mp4")
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_SECONDS = 30 * 60.0


class AudioError(ValueError):
    """Audio that cannot be used, with a message a person can act on."""


@dataclass(frozen=True)
class AudioRef:
    """One stored recording: its id (the sha256 of the original bytes) and decoded copy."""

    id: str
    path: Path  # 16 kHz mono 16-bit wav owned by the store
    original_path: Path
    duration_s: float
    format: str
    original_sample_rate: int
    original_channels: int
    name: str = ""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_bytes(
    data: bytes, *, max_seconds: float = DEFAULT_MAX_SECONDS, name: str = ""
) -> tuple[np.ndarray, str, int, int]:
    """Decode to float32 mono at 16 kHz. Returns (samples, format, source rate, channels)."""
    if not data:
        raise AudioError(f"{name or 'The upload'} is empty (0 bytes).")
    try:
        container = av.open(io.BytesIO(data), mode="r")
    except (av.FFmpegError, ValueError, OSError) as exc:
        raise AudioError(
            f"{name or 'The file'} could not be read as audio ({_short(exc)}). "
            f"Supported formats: {', '.join(SUPPORTED_FORMATS)}."
        ) from exc
    with container:
        streams = [s for s in container.streams if s.type == "audio"]
        if not streams:
            raise AudioError(f"{name or 'The file'} has no audio stream.")
        stream = streams[0]
        fmt = _format_name(container.format.name, name)
        src_rate = int(stream.codec_context.sample_rate or 0)
        channels = int(stream.codec_context.channels or 0)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        chunks: list[np.ndarray] = []
        total = 0
        limit = int(max_seconds * SAMPLE_RATE)
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    arr = out.to_ndarray().reshape(-1)
                    chunks.append(arr)
                    total += arr.size
                if total > limit:
                    raise AudioError(
                        f"{name or 'The recording'} is longer than the limit of "
                        f"{max_seconds / 60:.0f} minutes; cut it first."
                    )
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
        except av.FFmpegError as exc:
            if not chunks:
                raise AudioError(
                    f"{name or 'The file'} is corrupt or truncated ({_short(exc)})."
                ) from exc
            # A truncated tail: keep what decoded.
    samples = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
    if samples.size == 0:
        raise AudioError(f"{name or 'The file'} decoded to no audio samples.")
    return samples, fmt, src_rate, channels


def _format_name(container_name: str, name: str) -> str:
    suffix = Path(name).suffix.lower().lstrip(".")
    if suffix in SUPPORTED_FORMATS:
        return suffix
    first = container_name.split(",")[0]
    return {"matroska": "webm", "mov": "m4a"}.get(first, first)


def _short(exc: BaseException) -> str:
    """FFmpeg's own words without errno and file-name noise ("[Errno 1094995529] ... '<none>'")."""
    text = getattr(exc, "strerror", None) or str(exc).strip() or type(exc).__name__
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    text = re.sub(r":\s*'<none>'$", "", text).strip()
    return text if len(text) < 160 else text[:157] + "..."


class AudioStore:
    """Content-addressed store of recordings under ``root`` (original + 16 kHz wav)."""

    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        cache_items: int = 8,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.max_seconds = max_seconds
        self._pcm_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_items = cache_items
        self._lock = threading.Lock()

    def add_bytes(self, data: bytes, name: str = "") -> AudioRef:
        if len(data) > self.max_bytes:
            raise AudioError(
                f"{name or 'The upload'} is {len(data) / 1e6:.0f} MB; the limit is "
                f"{self.max_bytes / 1e6:.0f} MB."
            )
        digest = sha256_bytes(data)
        existing = self.get(digest)
        if existing is not None:
            return existing
        samples, fmt, rate, channels = decode_bytes(data, max_seconds=self.max_seconds, name=name)
        folder = self._folder(digest)
        folder.mkdir(parents=True, exist_ok=True)
        # Each file appears whole or not at all (os.replace), so a run reading this
        # recording while the same upload arrives twice never sees a half-written file.
        _atomic_write(folder / f"original.{fmt}", lambda path: path.write_bytes(data))
        _atomic_write(
            folder / "audio.wav",
            lambda path: sf.write(path, samples, SAMPLE_RATE, subtype="PCM_16", format="WAV"),
        )
        meta = f"{fmt}\n{rate}\n{channels}\n{Path(name).name}\n"
        _atomic_write(folder / "meta.txt", lambda path: path.write_text(meta))
        ref = self.get(digest)
        assert ref is not None
        return ref

    def add_file(self, path: str | Path) -> AudioRef:
        path = Path(path)
        if not path.is_file():
            raise AudioError(f"No such file: {path}")
        size = path.stat().st_size
        if size > self.max_bytes:
            raise AudioError(
                f"{path.name} is {size / 1e6:.0f} MB; the limit is {self.max_bytes / 1e6:.0f} MB."
            )
        return self.add_bytes(path.read_bytes(), name=path.name)

    def get(self, audio_id: str) -> AudioRef | None:
        if not _is_hex_id(audio_id):
            return None
        folder = self._folder(audio_id)
        wav = folder / "audio.wav"
        meta = folder / "meta.txt"
        if not wav.is_file() or not meta.is_file():
            return None
        fmt, rate, channels, name = (meta.read_text().split("\n") + ["", "", "", ""])[:4]
        info = sf.info(wav)
        originals = list(folder.glob("original.*"))
        return AudioRef(
            id=audio_id,
            path=wav,
            original_path=originals[0] if originals else wav,
            duration_s=float(info.frames) / SAMPLE_RATE,
            format=fmt,
            original_sample_rate=int(rate or 0),
            original_channels=int(channels or 0),
            name=name,
        )

    def samples(self, ref: AudioRef) -> np.ndarray:
        """The decoded 16 kHz mono float32 samples, kept in a small LRU cache."""
        with self._lock:
            cached = self._pcm_cache.get(ref.id)
            if cached is not None:
                self._pcm_cache.move_to_end(ref.id)
                return cached
        data, _ = sf.read(ref.path, dtype="float32")
        with self._lock:
            self._pcm_cache[ref.id] = data
            while len(self._pcm_cache) > self._cache_items:
                self._pcm_cache.popitem(last=False)
        return data

    def delete(self, audio_id: str) -> None:
        """Remove the recording's files and its decoded samples from memory."""
        if _is_hex_id(audio_id):
            with self._lock:
                self._pcm_cache.pop(audio_id, None)
            shutil.rmtree(self._folder(audio_id), ignore_errors=True)
            with contextlib.suppress(OSError):
                self._folder(audio_id).parent.rmdir()  # the 2-letter shard, when now empty

    def _folder(self, digest: str) -> Path:
        return self.root / digest[:2] / digest


def _atomic_write(target: Path, write: Callable[[Path], object]) -> None:
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write(temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _is_hex_id(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def load_samples(path: str | Path) -> np.ndarray:
    """Decode a file straight to 16 kHz mono float32 (for scripts and tests)."""
    samples, _, _, _ = decode_bytes(Path(path).read_bytes(), name=Path(path).name)
    return samples


def to_segment(samples: np.ndarray, sample_rate: int = SAMPLE_RATE):  # -> pydub.AudioSegment
    """Decoded float PCM as a pydub segment (pydub then cuts and exports without ffprobe)."""
    with warnings.catch_warnings():  # pydub warns at import that no ffmpeg is on PATH;
        warnings.simplefilter("ignore")  # we never ask it to run one
        from pydub import AudioSegment

    pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    return AudioSegment(data=pcm, sample_width=2, frame_rate=sample_rate, channels=1)


def from_segment(segment) -> np.ndarray:  # segment: pydub.AudioSegment
    return np.frombuffer(segment.raw_data, dtype="<i2").astype(np.float32) / 32768.0


def cut(samples: np.ndarray, start_s: float, end_s: float) -> np.ndarray:
    """The samples between two times (seconds), cut with pydub on the decoded PCM."""
    segment = to_segment(samples)
    return from_segment(segment[int(start_s * 1000) : int(end_s * 1000)])


def to_wav_bytes(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> bytes:
    """16-bit wav bytes, for sending audio to remote models."""
    buffer = io.BytesIO()
    to_segment(samples, sample_rate).export(buffer, format="wav")
    return buffer.getvalue()
