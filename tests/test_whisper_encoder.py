"""Whisper's encoder runs once per clip: the transcript's encoder output is reused by the
answer options' scores (whisper_options), and reusing it changes neither."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.audio import load_samples
from agent.local_models import whisper_asr, whisper_options

pytestmark = pytest.mark.models

FIXTURES = Path(__file__).parent / "fixtures"
DIGIT = FIXTURES / "digit_6_theo_4.wav"
OPTIONS = ["six", "two", "nine"]


@pytest.fixture()
def fresh(monkeypatch):
    monkeypatch.delenv(whisper_asr.SHORT_CONTEXT_ENV, raising=False)
    whisper_asr.clear_encoder_cache()
    whisper_asr.ENCODER_STATS.reset()
    yield whisper_asr.ENCODER_STATS
    whisper_asr.clear_encoder_cache()


def test_encoder_runs_once_for_transcript_and_options(fresh) -> None:
    samples = load_samples(DIGIT)
    transcript = whisper_asr.transcribe(samples)
    scores = whisper_options.option_scores(samples, OPTIONS)
    assert "six" in transcript.text.lower() or "6" in transcript.text
    assert scores.index(max(scores)) == 0, scores
    assert fresh.runs == 1, fresh
    assert fresh.hits == 1, fresh
    assert fresh.frames == 3000  # a full 30 s window (the short context is off by default)


def test_reused_encoder_output_changes_neither_transcript_nor_scores(fresh, monkeypatch) -> None:
    samples = load_samples(DIGIT)
    reused = (whisper_asr.transcribe(samples).text, whisper_options.option_scores(samples, OPTIONS))
    assert fresh.runs == 1
    monkeypatch.setattr(whisper_asr, "ENCODER_CACHE_SIZE", 0)  # nothing kept: encode each time
    whisper_asr.clear_encoder_cache()
    fresh.reset()
    alone = (whisper_asr.transcribe(samples).text, whisper_options.option_scores(samples, OPTIONS))
    assert fresh.runs == 2 and fresh.hits == 0
    assert reused == alone


def test_other_clips_are_encoded_on_their_own(fresh) -> None:
    one = load_samples(FIXTURES / "digit_1_george_1.wav")
    six = load_samples(DIGIT)
    for _ in range(2):
        text = whisper_asr.transcribe(one).text.lower()
        scores = whisper_options.option_scores(six, OPTIONS)
        assert "one" in text or "1" in text, text
        assert scores.index(max(scores)) == 0, scores
    assert fresh.runs == 2  # one per clip, however often each is read


def test_trim_padding_keeps_the_clip_and_a_margin() -> None:
    features = np.zeros((1, 80, 3000), dtype=np.float32)
    features[..., :250] = -0.5
    trimmed = whisper_asr.trim_padding(features)
    margin, least = whisper_asr.SHORT_CONTEXT_MARGIN, whisper_asr.SHORT_CONTEXT_MIN
    assert trimmed.shape[-1] == max(least, 250 + margin)
    assert trimmed.shape[-1] % 2 == 0
    assert np.array_equal(trimmed[..., :250], features[..., :250])
    features[..., :2950] = -0.5
    assert whisper_asr.trim_padding(features).shape[-1] == 3000  # nearly full: left alone


def _spy_transcribe(monkeypatch) -> list[dict]:
    """Record each call of faster-whisper's transcribe on the loaded model."""
    model, _ = whisper_asr.get_model()
    calls: list[dict] = []
    original = type(model).transcribe

    def spy(audio, **kwargs):
        calls.append(kwargs)
        return original(model, audio, **kwargs)

    monkeypatch.setattr(model, "transcribe", spy)
    return calls


def test_short_clip_is_decoded_once_without_the_fallback(fresh, monkeypatch) -> None:
    samples = load_samples(DIGIT)
    model, _ = whisper_asr.get_model()
    options = dict(language=None, beam_size=5, max_new_tokens=whisper_asr.max_new_tokens_for(
        samples.size / whisper_asr.SAMPLE_RATE))  # fmt: skip
    raw, _ = model.transcribe(samples, **options)  # faster-whisper's defaults: the fallback
    before = [s.text.strip() for s in raw]
    calls = _spy_transcribe(monkeypatch)
    transcript = whisper_asr.transcribe(samples)
    assert [c.get("temperature") for c in calls] == [0.0]  # decoded once, at temperature 0
    assert [s.text for s in transcript.segments] == before  # the same transcript
    assert fresh.runs == 1  # one encoder run for both


def test_short_clip_that_loops_gets_the_fallback(fresh, monkeypatch) -> None:
    samples = load_samples(DIGIT)
    monkeypatch.setattr(whisper_asr, "LOOP_COMPRESSION_RATIO", 0.0)  # every reading "loops"
    calls = _spy_transcribe(monkeypatch)
    transcript = whisper_asr.transcribe(samples)
    assert [c.get("temperature", "default") for c in calls] == [0.0, "default"]
    assert "six" in transcript.text.lower() or "6" in transcript.text
    assert fresh.runs == 1 and fresh.hits == 1  # the second decoding reuses the encoder's output


@pytest.mark.parametrize(
    ("verdicts", "readings"),
    [
        # the list loops, reading without it does not: with word times at once
        ([True, False], [("six, seven", False, 0.0), (None, True, 0.0)]),
        # both loop: faster-whisper's temperature fallback (its default temperatures)
        ([True, True], [("six, seven", False, 0.0), (None, True, 0.0),
                        ("six, seven", True, "default")]),
    ],
)  # fmt: skip
def test_prompted_reading_that_loops_is_read_again(fresh, monkeypatch, verdicts, readings):
    """A word list as the prompt can make tiny.en loop on a short clip: the clip is decoded
    again at temperature 0 without it before any temperature fallback; a prompted reading is
    tried without word times (aligning a loop's words costs more than the loop)."""
    samples = load_samples(DIGIT)
    said = iter(verdicts)
    monkeypatch.setattr(whisper_asr, "loops", lambda segments: next(said))
    calls = _spy_transcribe(monkeypatch)
    transcript = whisper_asr.transcribe(samples, initial_prompt="six, seven", word_timestamps=True)
    assert [
        (c["initial_prompt"], c["word_timestamps"], c.get("temperature", "default")) for c in calls
    ] == readings
    assert "six" in transcript.text.lower() or "6" in transcript.text
    assert transcript.segments[0].words  # the reading kept has its word times
    # every later reading reuses the first one's encoder output (a reading that stops short
    # of the clip's end encodes the rest from there: a window of its own)
    assert fresh.hits >= len(readings) - 1


def test_prompted_reading_that_does_not_loop_gets_its_word_times(fresh, monkeypatch) -> None:
    samples = load_samples(DIGIT)
    monkeypatch.setattr(whisper_asr, "loops", lambda segments: False)
    calls = _spy_transcribe(monkeypatch)
    transcript = whisper_asr.transcribe(samples, initial_prompt="six, seven", word_timestamps=True)
    assert [(c["initial_prompt"], c["word_timestamps"]) for c in calls] == [
        ("six, seven", False),
        ("six, seven", True),  # the same reading again, with its word times
    ]
    assert transcript.segments[0].words
    plain = _spy_transcribe(monkeypatch)
    whisper_asr.transcribe(samples, word_timestamps=True)  # no prompt: read once, with words
    assert [c["word_timestamps"] for c in plain] == [True]


def test_spans_are_encoded_over_ten_seconds_and_a_whole_clip_over_thirty(fresh) -> None:
    samples = load_samples(DIGIT)
    end = samples.size / 16_000
    spans = whisper_asr.transcribe_spans(samples, [(0.0, end)])
    assert "six" in spans.text.lower() or "6" in spans.text
    assert (fresh.runs, fresh.frames) == (1, whisper_asr.SPAN_CONTEXT_MIN)
    whole = whisper_asr.transcribe(samples)  # the same thread, after the spans: 30 s again
    assert "six" in whole.text.lower() or "6" in whole.text
    assert (fresh.runs, fresh.frames) == (2, whisper_asr.SPAN_CONTEXT_MIN + 3000)


def test_batches_are_not_kept(fresh) -> None:
    """The batched pipeline's encoder batches (long audio, per-span reading) are not kept."""
    samples = load_samples(DIGIT)
    for _ in range(2):
        whisper_asr.transcribe_spans(samples, [(0.0, 0.4), (0.4, samples.size / 16_000)])
    assert fresh.hits == 0 and fresh.runs == 2
    assert whisper_asr.encoder_outputs_kept() == 0
