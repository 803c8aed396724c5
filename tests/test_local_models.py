"""The bundled offline models on real clips (tests/fixtures) and generated signals."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from agent.audio import load_samples
from agent.local_models import embedding, music, signal, vad, whisper_asr, yamnet

pytestmark = pytest.mark.models

FIXTURES = Path(__file__).parent / "fixtures"
SR = 16_000
PADDED_SPEECH = FIXTURES / "speech_padded_librispeech_3436-172162-0000.wav"


def _tone(freq: float, seconds: float, amp: float = 0.3, harmonics: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    ramp = np.minimum(1.0, np.minimum(t, seconds - t) / 0.01)  # 10 ms fades, no clicks
    wave = sum(np.sin(2 * np.pi * freq * k * t) / k for k in range(1, harmonics + 1))
    return (amp * wave * ramp).astype(np.float32)


def _click_track(bpm: float = 120.0, seconds: float = 10.0) -> np.ndarray:
    audio = np.zeros(int(seconds * SR), dtype=np.float32)
    click = (np.sin(2 * np.pi * 1000 * np.arange(160) / SR) * np.hanning(160)).astype(np.float32)
    for start in np.arange(0.0, seconds, 60.0 / bpm):
        i = int(start * SR)
        audio[i : i + click.size] = click[: audio.size - i]
    return audio


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+", text.lower())


# ---- speech to text -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "accepted"),
    [("digit_6_theo_4.wav", {"six", "6"}), ("digit_1_george_1.wav", {"one", "1"})],
)
def test_spoken_digit_is_transcribed(name: str, accepted: set[str]) -> None:
    transcript = whisper_asr.transcribe(load_samples(FIXTURES / name))
    assert accepted & set(_words(transcript.text)), transcript
    assert transcript.language == "en"
    assert transcript.model_name
    assert transcript.segments and transcript.segments[0].end > transcript.segments[0].start


def test_speech_with_word_timestamps() -> None:
    transcript = whisper_asr.transcribe(load_samples(PADDED_SPEECH), word_timestamps=True, vad=True)
    assert {"adventure", "cart"} <= set(_words(transcript.text)), transcript.text
    words = [w for s in transcript.segments for w in s.words]
    assert words and all(0.5 < w.start <= w.end < 3.6 for w in words)


def test_speech_span_to_the_last_sample_with_word_times() -> None:
    """A span that reaches the end of a recording whose length is not a whole number of
    milliseconds (padding took it to 2.5 s of a 2.49994 s clip) is transcribed, with word
    times; faster-whisper asserted on it before ("non-negative timestamp expected")."""
    digit = load_samples(FIXTURES / "digit_7_jackson_2.wav")
    samples = np.zeros(39_999, dtype=np.float32)  # 2.4999375 s
    samples[8000 : 8000 + digit.size] = digit[: samples.size - 8000]
    transcript = whisper_asr.transcribe_spans(samples, [(0.0, 2.5)], word_timestamps=True)
    assert "seven" in _words(transcript.text) or "7" in _words(transcript.text)
    assert transcript.segments[0].end <= 2.5


@pytest.mark.parametrize("seconds", [0.0, 0.005, 1.0])
def test_silence_transcribes_to_empty_text(seconds: float) -> None:
    transcript = whisper_asr.transcribe(np.zeros(int(seconds * SR), dtype=np.float32))
    assert transcript.text == ""
    assert transcript.segments == []


# ---- voice activity -----------------------------------------------------------------------------


def test_speech_spans_inside_padded_clip() -> None:
    samples = load_samples(PADDED_SPEECH)
    duration = samples.size / SR
    spans = vad.speech_spans(samples)
    assert spans, "no speech found"
    assert spans[0][0] > 0.8
    assert spans[-1][1] < duration - 0.8
    assert all(start < end for start, end in spans)


def test_no_speech_spans_in_silence() -> None:
    assert vad.speech_spans(np.zeros(SR, dtype=np.float32)) == []
    assert vad.speech_spans(np.zeros(0, dtype=np.float32)) == []
    assert vad.speech_spans(np.zeros(100, dtype=np.float32)) == []


# ---- sound events -------------------------------------------------------------------------------

ANIMAL_LABELS = {"Dog", "Animal", "Domestic animals, pets", "Bark", "Bow-wow", "Canidae, dogs"}


def test_dog_clip_is_tagged_dog_or_animal() -> None:
    tags = yamnet.tag(load_samples(FIXTURES / "dog_bark_esc50.wav"), top_k=3)
    top3 = [label for label, _ in tags.labels]
    assert ANIMAL_LABELS & set(top3), tags.labels
    assert tags.frames.shape == (len(tags.patch_times), 521)
    assert tags.patch_times[0] == (0.0, 0.96) and tags.patch_times[-1][1] == 5.0
    assert np.all((tags.frames >= 0) & (tags.frames <= 1))
    dog_events = [e for e in yamnet.events(tags, threshold=0.5) if e.label == "Dog"]
    assert dog_events and dog_events[0].start == 0.0 and dog_events[0].peak_score > 0.5


def test_tagger_scores_are_the_graphs_own_on_any_cpu() -> None:
    """The int8 tagger scores a clip as its QDQ graph does, node by node: not through fused
    int8 kernels whose sums saturate on CPUs without VNNI (on this 3 s of sea waves they gave
    "Stream" 0.11 where the graph gives 0.60, and "Pink noise" at the top)."""
    samples = load_samples(FIXTURES / "sea_waves_esc50_cut.wav")
    tags = yamnet.tag(samples)
    graph = yamnet.tag(samples, reference=True)
    drift = np.abs(tags.frames.mean(axis=0) - graph.frames.mean(axis=0))
    worst = yamnet.class_names()[int(np.argmax(drift))]
    assert drift.max() < 0.1, (worst, float(drift.max()))
    assert tags.labels[0][0] in {"Stream", "Water", "Ocean", "Waves, surf"}, tags.labels


def test_yamnet_short_and_silent_input() -> None:
    short = yamnet.tag(_tone(440.0, 0.2))
    assert short.frames.shape == (1, 521) and short.patch_times == [(0.0, 0.2)]
    silent = yamnet.tag(np.zeros(2 * SR, dtype=np.float32), top_k=1)
    assert silent.labels[0][0] == "Silence"
    assert len(yamnet.class_names()) == 521 and yamnet.class_names()[0] == "Speech"


def test_events_merge_consecutive_patches() -> None:
    frames = np.zeros((4, 521), dtype=np.float32)
    frames[1:3, 0] = [0.6, 0.9]
    tags = yamnet.SoundTags(
        labels=[], frames=frames, patch_times=[(0.0, 0.96), (0.48, 1.44), (0.96, 1.92), (1.44, 2.0)]
    )
    assert yamnet.events(tags, threshold=0.5) == [yamnet.SoundEvent("Speech", 0.48, 1.92, 0.9)]
    assert yamnet.events(tags, threshold=0.5, min_duration=2.0) == []


# ---- music --------------------------------------------------------------------------------------


def test_click_track_tempo_within_two_percent() -> None:
    facts = music.analyze(_click_track(120.0))
    assert facts.tempo_bpm is not None
    assert abs(facts.tempo_bpm - 120.0) / 120.0 < 0.02, facts.tempo_bpm
    intervals = np.diff(facts.beat_times)
    assert len(facts.beat_times) >= 15 and np.allclose(intervals, 0.5, atol=0.03)


def test_key_of_a_scale() -> None:
    midi = [57, 59, 60, 62, 64, 65, 68, 69, 64, 60, 57]  # A harmonic minor, up and back to A
    melody = np.concatenate([_tone(440 * 2 ** ((m - 69) / 12), 0.4, harmonics=3) for m in midi])
    facts = music.analyze(melody)
    assert facts.key == "A minor", facts.key_candidates
    assert facts.key_confidence > 0.7


def test_music_on_silence() -> None:
    facts = music.analyze(np.zeros(2 * SR, dtype=np.float32))
    assert facts.tempo_bpm is None and facts.beat_times == [] and facts.key is None
    assert music.notes(np.zeros(SR, dtype=np.float32)) == []


def test_notes_of_a_sine_melody() -> None:
    notes = music.notes(np.concatenate([_tone(440.0, 0.5), _tone(523.25, 0.5)]))
    assert [n.pitch_midi for n in notes] == [69, 72], notes
    assert [n.name for n in notes] == ["A4", "C5"]
    assert notes[0].start < 0.1 and 0.4 < notes[1].start < 0.6 and notes[1].end > 0.9


# ---- signal facts -------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [0.0, 0.2, 2.0])
def test_signal_facts_on_silence(seconds: float) -> None:
    facts = signal.facts(np.zeros(int(seconds * SR), dtype=np.float32))
    assert facts.duration_s == pytest.approx(seconds)
    assert facts.rms_dbfs == facts.peak_dbfs == signal.FLOOR_DB
    assert facts.loudness_lufs is None
    assert facts.f0_median_hz is None and facts.register == signal.REGISTER_UNCLEAR
    if seconds:
        assert facts.silence_ratio == 1.0 and facts.silent_spans == [(0.0, seconds)]


def test_signal_facts_on_speech() -> None:
    facts = signal.facts(load_samples(PADDED_SPEECH))
    assert facts.duration_s == pytest.approx(4.4)
    assert facts.silent_spans[0][0] == 0.0 and facts.silent_spans[0][1] >= 0.95
    assert facts.silent_spans[-1][1] == pytest.approx(4.4) and facts.silent_spans[-1][0] <= 3.45
    assert 0.4 < facts.silence_ratio < 0.8
    assert -40 < facts.rms_dbfs < facts.peak_dbfs < 0
    assert facts.loudness_lufs is not None and -35 < facts.loudness_lufs < -15
    assert facts.voiced_ratio > 0.1
    assert facts.f0_median_hz is not None and 80 < facts.f0_median_hz < 250
    assert facts.f0_p10_hz <= facts.f0_median_hz <= facts.f0_p90_hz


def test_signal_facts_on_a_short_tone() -> None:
    facts = signal.facts(_tone(200.0, 0.2, amp=0.2))
    assert facts.f0_median_hz == pytest.approx(200.0, rel=0.03)
    assert facts.silent_spans == []


@pytest.mark.parametrize(
    ("f0", "register"),
    [(110.0, signal.REGISTER_LOW), (160.0, signal.REGISTER_UNCLEAR), (220.0, signal.REGISTER_HIGH)],
)
def test_voice_register_from_pitch(f0: float, register: str) -> None:
    facts = signal.facts(_tone(f0, 1.0, harmonics=4))
    assert facts.register == register, facts


def test_loudness_of_a_reference_sine() -> None:
    # BS.1770: a 1 kHz sine with peak 0 dBFS reads -3.01 LUFS; at peak 0.1 (-20 dB), -23.01.
    assert signal.integrated_loudness(_tone(1000.0, 5.0, amp=0.1)) == pytest.approx(-23.0, abs=0.5)


def test_frames_and_tracked_classes_over_time() -> None:
    """The tagger's classes window by window, and the classes a question names followed in
    every window, also where they stay under the top ones."""
    tags = yamnet.tag(load_samples(FIXTURES / "dog_bark_esc50.wav"))
    frames = yamnet.frames(tags)
    assert len(frames) == len(tags.patch_times) and frames[0].start == 0.0
    assert all(1 <= len(f.labels) <= 8 for f in frames)
    assert [f.start for f in frames] == sorted(f.start for f in frames)
    tracks = yamnet.class_tracks(tags, ["Bark", "Church bell", "No such class"])
    assert set(tracks) == {"Bark", "Church bell"}
    assert all(len(v) == len(frames) for v in tracks.values())
    # Bark peaks at exactly 0.5 on this clip with the int8 tagger: a strong score, not more
    assert max(tracks["Bark"]) >= 0.4 and max(tracks["Church bell"]) < 0.1
    pooled = yamnet.frames(tags, max_frames=3)
    assert len(pooled) == 3 and pooled[-1].end == 5.0
    assert len(yamnet.class_tracks(tags, ["Bark"], max_frames=3)["Bark"]) == 3
    assert "Dog" in yamnet.class_group("animal") and "Piano" in yamnet.class_group("music")


# ---- sentence embeddings ------------------------------------------------------------------------


def test_embedding_ranks_the_matching_label_first() -> None:
    scores = embedding.similarity("dog barking", ["Dog", "Rain", "Siren"])
    assert scores.shape == (3,) and int(np.argmax(scores)) == 0, scores


def test_embeddings_are_unit_vectors() -> None:
    vectors = embedding.embed(["A man is eating food.", "A man is eating a piece of bread.", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > 0.6
    assert embedding.embed([]).shape == (0, 384)
    assert embedding.similarity("x", []).shape == (0,)


def test_embeddings_of_texts_seen_lately_are_not_computed_again(monkeypatch) -> None:
    encoded: list[str] = []
    encode = embedding.encode

    def counting(texts: list[str]) -> np.ndarray:
        encoded.extend(texts)
        return encode(texts)

    monkeypatch.setattr(embedding, "encode", counting)
    hen, rooster = f"a hen clucking {id(encoded)}", f"Chicken, rooster {id(encoded)}"  # new texts
    first = embedding.embed([hen, rooster])
    again = embedding.embed([rooster, hen, hen])
    assert encoded == [hen, rooster]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])


# ---- no heavy frameworks ------------------------------------------------------------------------


def test_warm_up_loads_everything_without_torch_or_tensorflow() -> None:
    for module in (whisper_asr, vad, yamnet, music, signal, embedding):
        module.warm_up()
    assert "torch" not in sys.modules
    assert "tensorflow" not in sys.modules
    assert "basic_pitch" not in sys.modules  # its __init__ tries to import tensorflow
