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
from pathlib import Path

import av
import numpy as np
import soundfile as sf

from agent.events import AudioRef

__all__ = ["AudioRef"]  # re-exported: defined with the events (agent.events)

SAMPLE_RATE = 16_000
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_SECONDS = 30 * 60.0


class AudioError(ValueError):
    """Audio that cannot be used, with a message a person can act on."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# The containers we accept, detected from the file's own first bytes (never from its name or
# a client's Content-Type): sniffed kind -> (FFmpeg demuxer, file extensions for that kind).
CONTAINERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "wav": ("wav", ("wav",)),
    "mp3": ("mp3", ("mp3",)),
    "ogg": ("ogg", ("ogg", "opus", "oga")),
    "flac": ("flac", ("flac",)),
    "aac": ("aac", ("aac",)),  # raw ADTS
    "mp4": ("mov", ("m4a", "mp4", "mov", "m4v")),
    "matroska": ("matroska", ("webm", "mkv", "mka")),
}
SUPPORTED_TEXT = "wav, mp3, ogg/opus, flac, m4a/mp4/aac, webm/mkv"
MIN_SECONDS = 0.1
# Options for every open: a file object is read through our own I/O, and no demuxer may open
# anything else (playlists, concat, SDP/RTP, HLS/DASH, external references in MP4).
_OPEN_OPTIONS = {"protocol_whitelist": "file", "enable_drefs": "0", "use_absolute_path": "0"}
_MP4_BOXES = (b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip")
# Text that FFmpeg would happily follow to other files or the network, named for the message.
_REFERENCE_FORMATS = (
    (b"ffconcat", "an FFmpeg concat playlist"),
    (b"concat:", "an FFmpeg concat: address"),
    (b"#extm3u", "an HLS/M3U playlist"),
    (b"[playlist]", "a PLS playlist"),
    (b"v=0", "an SDP stream description"),
    (b"<?xml", "an XML document (a DASH manifest or playlist)"),
    (b"<mpd", "a DASH manifest"),
    (b"file:", "a file address"),
    (b"http:", "a URL"),
    (b"https:", "a URL"),
    (b"rtp:", "a network stream address"),
    (b"rtsp:", "a network stream address"),
    (b"udp:", "a network stream address"),
    (b"tcp:", "a network stream address"),
)


class UnsupportedFormatError(AudioError):
    """The bytes are not one of the allowed containers (or name other files / URLs)."""


def sniff_container(data: bytes) -> str | None:
    """The container kind of ``data`` from its magic numbers (a key of CONTAINERS) or None."""
    head = data[:64]
    if head[:3] == b"ID3" and len(head) >= 10:  # ID3v2 tag, then the real stream
        size = (
            (head[6] & 0x7F) << 21
            | (head[7] & 0x7F) << 14
            | (head[8] & 0x7F) << 7
            | (head[9] & 0x7F)
        )
        skip = 10 + size + (10 if head[5] & 0x10 else 0)
        inner = sniff_container(data[skip : skip + 64].lstrip(b"\x00"))
        return inner if inner in ("aac", "flac") else "mp3"
    if head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "matroska"
    if head[4:8] in _MP4_BOXES:
        return "mp4"
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:  # 12-bit sync, layer 00: AAC in ADTS frames
            return "aac"
        if head[1] & 0xE0 == 0xE0 and (head[1] >> 1) & 0x03:  # MPEG audio layer I-III
            return "mp3"
    return None


def _refusal(data: bytes, label: str) -> UnsupportedFormatError:
    text = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    for prefix, what in _REFERENCE_FORMATS:
        if text.startswith(prefix):
            return UnsupportedFormatError(
                f"{label} is {what}, not a recording; files that point to other files or "
                f"network addresses are refused. Upload the audio file itself "
                f"({SUPPORTED_TEXT})."
            )
    return UnsupportedFormatError(
        f"{label} is not a supported audio or video file (its content is not {SUPPORTED_TEXT})."
    )


def open_container(data: bytes, *, name: str = "") -> tuple[av.container.InputContainer, str]:
    """Open ``data`` with FFmpeg as the container its bytes say it is, and nothing else.

    Raises UnsupportedFormatError before FFmpeg sees the bytes when they are not an allowed
    container; AudioError when FFmpeg cannot read them as that container."""
    label = name or "The file"
    if not data:
        raise AudioError(f"{name or 'The upload'} is empty (0 bytes).")
    kind = sniff_container(data)
    if kind is None:
        raise _refusal(data, label)
    demuxer = CONTAINERS[kind][0]
    try:
        container = av.open(
            io.BytesIO(data),
            mode="r",
            format=demuxer,
            options={**_OPEN_OPTIONS, "format_whitelist": demuxer},
        )
    except (av.FFmpegError, ValueError, OSError, EOFError) as exc:
        raise AudioError(
            f"{label} looks like {kind} but could not be read ({_short(exc)}); "
            "it may be corrupt or truncated."
        ) from exc
    return container, kind


def header_seconds(container: av.container.InputContainer, stream: av.AudioStream) -> float | None:
    """The duration the container's header claims, or None when it does not say."""
    if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
        return float(stream.duration * stream.time_base)
    if container.duration is not None and container.duration > 0:
        return container.duration / 1_000_000
    return None


def decode_bytes(
    data: bytes, *, max_seconds: float = DEFAULT_MAX_SECONDS, name: str = ""
) -> tuple[np.ndarray, str, int, int]:
    """Decode to float32 mono at 16 kHz. Returns (samples, format, source rate, channels)."""
    container, kind = open_container(data, name=name)
    limit_text = _span(max_seconds)

    def too_long(seconds: float | None) -> AudioError:
        length = f" is {_span(seconds)} long," if seconds else " is"
        return AudioError(
            f"{name or 'The recording'}{length} longer than the limit of {limit_text}; "
            "cut it first."
        )

    with container:
        streams = [s for s in container.streams if s.type == "audio"]
        if not streams:
            raise AudioError(f"{name or 'The file'} has no audio stream.")
        stream = streams[0]
        fmt = _format_name(kind, name)
        codec = stream.codec_context
        if codec is None:  # FFmpeg knows no decoder for this stream's codec
            raise AudioError(
                f"{name or 'The file'} could not be read: its audio codec is unknown or "
                "unsupported."
            )
        src_rate = int(codec.sample_rate or 0)
        channels = int(codec.channels or 0)
        if src_rate <= 0:
            raise AudioError(f"{name or 'The file'} has no sample rate in its audio stream.")
        claimed = header_seconds(container, stream)
        if claimed is not None and claimed > max_seconds:
            raise too_long(claimed)  # from the header, before any decoding
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
                    raise too_long(None)
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
    if not np.isfinite(samples).all():
        raise AudioError(
            f"{name or 'The file'} has invalid samples (NaN or infinite values); "
            "export it again from the program that made it."
        )
    if samples.size < MIN_SECONDS * SAMPLE_RATE:
        raise AudioError(
            f"{name or 'The recording'} is too short ({samples.size / SAMPLE_RATE:.3f} s); "
            f"the shortest usable recording is {MIN_SECONDS} s."
        )
    return np.clip(samples, -1.0, 1.0), fmt, src_rate, channels


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    return f"{seconds / 60:.0f} minutes"


def _format_name(kind: str, name: str) -> str:
    """The file extension to store the original under: the name's when it fits the content."""
    suffix = Path(name).suffix.lower().lstrip(".")
    extensions = CONTAINERS[kind][1]
    return suffix if suffix in extensions else extensions[0]


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

    def cached_samples(self, ref: AudioRef) -> np.ndarray | None:
        """The samples if they are already decoded (never reads a file; safe on the loop)."""
        with self._lock:
            return self._pcm_cache.get(ref.id)

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
