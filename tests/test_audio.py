"""Audio in: every supported format decodes once to 16 kHz mono; bad input gets clear words."""

from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np
import pytest

from agent.audio import (
    SAMPLE_RATE,
    AudioError,
    AudioStore,
    UnsupportedFormatError,
    cut,
    decode_bytes,
    sniff_container,
    to_wav_bytes,
)

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
        (b"this is not audio at all" * 50, "fake.mp3", "not a supported audio or video file"),
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


FIXTURES = Path(__file__).parent / "fixtures"


def encode_video(container: str, video_codec: str, audio_codec: str, seconds: float = 1.0) -> bytes:
    """A small video file with a 440 Hz audio track (videos are accepted for their audio)."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container) as out:
        video = out.add_stream(video_codec, rate=10)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = out.add_stream(audio_codec, rate=48_000)
        audio.layout = "mono"
        for i in range(int(seconds * 10)):
            image = np.full((48, 64, 3), i * 20 % 255, dtype=np.uint8)
            for packet in video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        t = np.arange(int(48_000 * seconds)) / 48_000
        tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :]
        frame = av.AudioFrame.from_ndarray(tone, format="fltp", layout="mono")
        frame.sample_rate = 48_000
        for packet in [*audio.encode(frame), *audio.encode(None), *video.encode(None)]:
            out.mux(packet)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("container", "video_codec", "audio_codec", "name", "fmt"),
    [
        ("mp4", "mpeg4", "aac", "clip.mp4", "mp4"),
        ("webm", "libvpx", "libopus", "clip.webm", "webm"),
        ("matroska", "mpeg4", "libopus", "clip.mkv", "mkv"),
    ],
)
def test_video_files_give_their_audio_track(
    tmp_path, container, video_codec, audio_codec, name, fmt
):
    ref = AudioStore(tmp_path).add_bytes(
        encode_video(container, video_codec, audio_codec), name=name
    )
    assert ref.format == fmt and abs(ref.duration_s - 1.0) < 0.1


def test_container_is_sniffed_from_bytes_not_the_name(tmp_path):
    for ext, kind in [("wav", "wav"), ("mp3", "mp3"), ("ogg", "ogg"), ("flac", "flac"),
                      ("m4a", "mp4"), ("webm", "matroska")]:  # fmt: skip
        assert sniff_container(encode_tone(ext)) == kind
    # an mp3 named .wav is stored as what it is
    ref = AudioStore(tmp_path).add_bytes(encode_tone("mp3"), name="really-an-mp3.wav")
    assert ref.format == "mp3" and ref.original_path.suffix == ".mp3"
    assert ref.name == "really-an-mp3.wav"


REFERENCES = [
    # an ffconcat playlist naming a file in the server's working directory (issue 7's attack)
    (
        b"ffconcat version 1.0\nfile 'tests/fixtures/dog_bark_esc50.wav'\n",
        "concat playlist",
    ),
    (f"ffconcat version 1.0\nfile '{FIXTURES / 'dog_bark_esc50.wav'}'\n".encode(), "concat"),
    (b"concat:tests/fixtures/dog_bark_esc50.wav|tests/fixtures/digit_1_george_1.wav", "concat:"),
    # an SDP description: FFmpeg would listen on these loopback UDP ports for 20 s
    (
        b"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
        b"m=audio 5004 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n",
        "SDP",
    ),
    (
        b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:5,\ntests/fixtures/dog_bark_esc50.wav\n"
        b"#EXT-X-ENDLIST\n",
        "HLS",
    ),
    (
        b'<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><Period><AdaptationSet>'
        b"<Representation><BaseURL>http://127.0.0.1:9/a.wav</BaseURL></Representation>"
        b"</AdaptationSet></Period></MPD>",
        "DASH",
    ),
    (b"<MPD><Period/></MPD>", "DASH"),
    (b"http://127.0.0.1:9/audio.wav", "URL"),
    (b"file:tests/fixtures/dog_bark_esc50.wav", "file address"),
    (b"[playlist]\nFile1=tests/fixtures/dog_bark_esc50.wav\n", "playlist"),
]


@pytest.mark.parametrize(("data", "words"), REFERENCES)
def test_files_naming_other_files_or_urls_are_refused(tmp_path, data, words):
    with pytest.raises(UnsupportedFormatError, match=words) as refused:
        AudioStore(tmp_path).add_bytes(data, name="innocent.wav")
    assert "refused" in str(refused.value)
    assert not list(tmp_path.rglob("*.wav"))  # nothing stored


def test_header_duration_is_checked_before_decoding(tmp_path, monkeypatch):
    data = encode_tone("flac", seconds=3.0)
    decoded: list[int] = []
    real_decode = av.container.InputContainer.decode

    def counting_decode(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        decoded.append(1)
        return real_decode(self, *args, **kwargs)

    monkeypatch.setattr(av.container.InputContainer, "decode", counting_decode)
    with pytest.raises(AudioError, match="is 3 s long, longer than the limit of 2 s"):
        decode_bytes(data, max_seconds=2.0, name="long.flac")
    assert decoded == []  # refused from the header, no frame decoded


def test_nan_samples_and_one_sample_files_are_refused(tmp_path):
    import soundfile as sf

    buffer = io.BytesIO()
    samples = np.full(16_000, np.nan, dtype=np.float32)
    sf.write(buffer, samples, 16_000, format="WAV", subtype="FLOAT")
    with pytest.raises(AudioError, match="NaN"):
        decode_bytes(buffer.getvalue(), name="nan.wav")
    buffer = io.BytesIO()
    sf.write(buffer, np.zeros(1, dtype=np.float32), 16_000, format="WAV")
    with pytest.raises(AudioError, match="too short"):
        decode_bytes(buffer.getvalue(), name="one.wav")
