"""Audio in: every supported format decodes once to 16 kHz mono; bad input gets clear words."""

from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np
import pytest

from agent.audio import SAMPLE_RATE, AudioError, AudioStore, cut, decode_bytes, to_wav_bytes

# (container, codec, rate, layout) per file extension, encoded with PyAV's bundled FFmpeg
FORMATS = {
    "wav": ("wav", "pcm_s16le", 44_100, "stereo"),
    "mp3": ("mp3", "libmp3lame", 44_100, "stereo"),
    "ogg": ("ogg", "libopus", 48_000, "mono"),
    "flac": ("flac", "flac", 22_050, "mono"),
    "m4a": ("ipod", "aac", 44_100, "stereo"),
    "webm": ("webm", "libopus", 48_000, "stereo"),
}


def encode_tone(ext: str, seconds: float = 1.0, freq: float = 440.0) -> bytes:
    container, codec, rate, layout = FORMATS[ext]
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = layout
        t = np.arange(int(rate * seconds)) / rate
        tone = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
        planes = np.stack([tone] * (2 if layout == "stereo" else 1))
        frame = av.AudioFrame.from_ndarray(planes, format="fltp", layout=layout)
        frame.sample_rate = rate
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    return buffer.getvalue()


@pytest.mark.parametrize("ext", list(FORMATS))
def test_every_format_decodes_to_16k_mono(ext, tmp_path):
    data = encode_tone(ext)
    store = AudioStore(tmp_path)
    ref = store.add_bytes(data, name=f"tone.{ext}")
    assert ref.format == ext
    assert ref.original_sample_rate == FORMATS[ext][2]
    assert abs(ref.duration_s - 1.0) < 0.08  # codecs add a little priming/padding
    samples = store.samples(ref)
    assert samples.dtype == np.float32 and samples.ndim == 1
    # the tone survives: its spectrum peaks at 440 Hz
    spectrum = np.abs(np.fft.rfft(samples[: SAMPLE_RATE // 2]))
    peak_hz = np.argmax(spectrum) * SAMPLE_RATE / (SAMPLE_RATE // 2)
    assert abs(peak_hz - 440) < 5
    assert ref.original_path.read_bytes() == data


def test_content_addressed_and_idempotent(tmp_path):
    store = AudioStore(tmp_path)
    data = encode_tone("flac")
    first = store.add_bytes(data, name="a.flac")
    again = store.add_bytes(data, name="renamed.flac")
    assert first == again and len(first.id) == 64
    assert store.get(first.id) == first
    assert store.get("../../etc/passwd") is None  # ids are hashes, never paths


@pytest.mark.parametrize(
    ("data", "name", "words"),
    [
        (b"", "empty.wav", "empty"),
        (b"this is not audio at all" * 50, "fake.mp3", "could not be read as audio"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "truncated.wav", "could not be read"),
    ],
)
def test_bad_input_gets_a_clear_message(tmp_path, data, name, words):
    with pytest.raises(AudioError, match=words):
        AudioStore(tmp_path).add_bytes(data, name=name)


def test_limits_on_size_and_length(tmp_path):
    with pytest.raises(AudioError, match="limit is 0 MB"):
        AudioStore(tmp_path, max_bytes=100).add_bytes(encode_tone("wav"), name="big.wav")
    with pytest.raises(AudioError, match="longer than the limit"):
        AudioStore(tmp_path, max_seconds=0.5).add_bytes(encode_tone("wav"), name="long.wav")


def test_silence_decodes_and_stays_silent(tmp_path):
    import soundfile as sf

    path = tmp_path / "silence.wav"
    sf.write(path, np.zeros(8_000), 8_000)
    store = AudioStore(tmp_path / "store")
    ref = store.add_file(path)
    assert ref.duration_s == pytest.approx(1.0, abs=0.01)
    assert not np.any(store.samples(ref))


def test_cut_and_export_with_pydub(tmp_path: Path):
    t = np.arange(SAMPLE_RATE * 2) / SAMPLE_RATE
    samples = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    part = cut(samples, 0.5, 1.25)
    assert len(part) == int(0.75 * SAMPLE_RATE)
    wav = to_wav_bytes(part)
    decoded, fmt, rate, channels = decode_bytes(wav, name="part.wav")
    assert (fmt, rate, channels) == ("wav", SAMPLE_RATE, 1) and len(decoded) == len(part)
