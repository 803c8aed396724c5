"""Speakers, offline: how many voices take turns, the same or not, higher or lower.

Clips are composed in code from FSDD digits in tests/fixtures (see PROVENANCE.md): two
different speakers (jackson, about 110 Hz, then george, about 160 Hz) and one speaker
(jackson) saying three digits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.audio import load_samples
from agent.local_models import speakers
from agent.planners.offline_speakers import count_speakers
from agent.registry import Registry
from bench.devsets import normalise
from tests.offline_runs import ask_offline

pytestmark = pytest.mark.models
FIXTURES = Path(__file__).parent / "fixtures"
SR = 16_000
JACKSON = ["digit_3_jackson_4.wav", "digit_5_jackson_0.wav", "digit_7_jackson_2.wav"]
GEORGE = ["digit_1_george_1.wav", "digit_2_george_2.wav"]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry(env={})


def _compose(names: list[str], gap: float = 0.8) -> np.ndarray:
    pieces = [np.zeros(int(0.3 * SR), np.float32)]
    for name in names:
        pieces += [normalise(load_samples(FIXTURES / name)), np.zeros(int(gap * SR), np.float32)]
    return np.concatenate(pieces).astype(np.float32)


def test_two_different_speakers_are_two_clusters_with_their_pitch():
    result = speakers.from_audio(_compose(JACKSON[:2] + GEORGE))
    spans, found = result.spans, result.speakers
    assert len(spans) == 4
    assert len(found) == 2
    first, second = found
    assert len(first.spans) == 2 and len(second.spans) == 2
    assert first.spans[-1][1] < second.spans[0][0]  # jackson's turn, then george's
    assert first.f0_hz < 135 < second.f0_hz


def test_one_speaker_saying_three_digits_is_one_speaker():
    result = speakers.from_audio(_compose(JACKSON))
    spans, found = result.spans, result.speakers
    assert len(spans) == 3
    assert len(found) == 1 and len(found[0].spans) == 3


def test_segments_too_short_to_compare_are_left_out():
    clip = _compose(JACKSON[:1])
    assert speakers.segment_features(clip, 0.0, 0.1) is None
    assert speakers.cluster([]) == ([], float("inf"))


def test_a_quick_change_of_turn_inside_one_span_is_cut_at_the_pause():
    # 0.15 s between the turns: voice activity joins them, the pause cut separates them
    clip = _compose(JACKSON[:2] + GEORGE, gap=0.15)
    spans = speakers.speech_spans(clip)
    pieces = [p for a, b in spans for p in speakers.split_at_pauses(clip, a, b)]
    assert len(spans) < 4 <= len(pieces)
    found = speakers.from_audio(clip).speakers
    assert len(found) == 2
    assert found[0].f0_hz < 135 < found[1].f0_hz


def test_long_spans_are_cut_into_windows():
    assert speakers.windows(0.0, 2.0) == [(0.0, 2.0)]
    cut = speakers.windows(1.0, 7.0)
    assert len(cut) == 4 and cut[0][0] == 1.0 and cut[-1][1] == 7.0


def test_an_unsure_count_is_a_guess():
    data = {
        "speech_spans": [[0.5, 1.0], [1.5, 2.0]],
        "speakers": [{"speaker": 1, "f0_hz": 120.0, "spans": [[0.5, 1.0], [1.5, 2.0]]}],
        "unsure": True,
    }
    finding = count_speakers(data, ["1", "2"])
    assert not finding.decided and "best guess" in finding.reason
    assert finding.scores[0] > finding.scores[1]


async def test_counts_two_speakers_with_choices_via_the_planner(registry, tmp_path):
    clip = _compose(JACKSON[:2] + GEORGE)
    answer, events = await ask_offline(
        registry, tmp_path, clip, "How many different speakers are there?", ["1", "2", "3", "4"]
    )
    assert answer.choice == "2" and not answer.guess
    calls = [e.tool for e in events if e.type == "tool_call"]
    assert "speakers" in calls
    assert answer.rationale.count(" s") >= 4  # each speaker's times are listed


async def test_counts_one_speaker_in_words_via_the_planner(registry, tmp_path):
    answer, _ = await ask_offline(
        registry, tmp_path, _compose(JACKSON), "How many people are talking?", ["one", "two"]
    )
    assert answer.choice == "one" and not answer.guess
    answer, _ = await ask_offline(
        registry, tmp_path, _compose(JACKSON), "How many people are talking?"
    )
    assert answer.text.startswith("One speaker: one around 1"), answer.text
    assert "Hz (" in answer.text


async def test_two_speakers_in_words_name_pitch_and_times(registry, tmp_path):
    clip = _compose(JACKSON[:2] + GEORGE)
    answer, _ = await ask_offline(registry, tmp_path, clip, "How many speakers can you hear?")
    assert answer.text.startswith("Two speakers: one around "), answer.text
    assert answer.text.count(" Hz (") == 2 and answer.text.count("–") >= 4


async def test_same_speaker_and_second_speaker_higher(registry, tmp_path):
    clip = _compose(JACKSON[:2] + GEORGE)
    answer, _ = await ask_offline(
        registry, tmp_path, clip, "Is it the same speaker throughout?", ["yes", "no"]
    )
    assert answer.choice == "no" and not answer.guess
    answer, _ = await ask_offline(
        registry, tmp_path, clip, "Is the second speaker's voice higher or lower?",
        ["higher", "lower"],
    )  # fmt: skip
    assert answer.choice == "higher" and not answer.guess
    answer, _ = await ask_offline(
        registry, tmp_path, _compose(JACKSON), "Is it the same person speaking?", ["yes", "no"]
    )
    assert answer.choice == "yes"


async def test_no_speech_is_an_honest_guess(registry, tmp_path):
    clip = np.zeros(2 * SR, np.float32)
    answer, _ = await ask_offline(
        registry, tmp_path, clip, "How many speakers are there?", ["1", "2", "3"]
    )
    assert answer.guess


def test_one_short_segment_is_thin_evidence():
    data = {
        "speech_spans": [[0.5, 0.8]],
        "speakers": [{"speaker": 1, "f0_hz": 120.0, "spans": [[0.5, 0.8]]}],
    }
    finding = count_speakers(data, ["1", "2"])
    assert not finding.decided and "one short stretch" in finding.reason
    assert finding.scores == [1.0, 0.25]
