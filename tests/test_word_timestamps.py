"""Word timestamps as evidence: how often a named word is said, what is said at a time,
when several words share one voice-activity span.

Clips are composed in code from the FSDD digits in tests/fixtures (see PROVENANCE.md),
0.15 s apart, so voice activity joins them into one span.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.audio import load_samples
from agent.planners.offline_timeline import count_speech, order_speech, spoken_items
from agent.planners.question_focus import Focus, named_word
from agent.registry import Registry
from bench.devsets import normalise
from tests.offline_runs import ask_offline

FIXTURES = Path(__file__).parent / "fixtures"
SR = 16_000
DIGITS = {
    "six": "digit_6_theo_4.wav",
    "one": "digit_1_george_1.wav",
    "five": "digit_5_jackson_0.wav",
    "seven": "digit_7_jackson_2.wav",
}
SPAN = (0.5, 3.0, "six, one, six, seven")
WORDS = [(0.5, 1.0, "six,"), (1.2, 1.6, "one,"), (1.8, 2.3, "six,"), (2.4, 2.9, "seven")]


def test_a_long_span_gives_each_word_its_own_time():
    items, timed = spoken_items([(*SPAN, WORDS)])
    assert timed
    assert [w for _, _, w in items] == ["six", "one", "six", "seven"]
    assert items[1][:2] == (1.2, 1.6)
    # without word times the words share the span's time
    items, timed = spoken_items([(*SPAN, [])])
    assert not timed and {(a, b) for a, b, _ in items} == {(0.5, 3.0)}


def test_words_of_no_length_are_echoes_and_short_spans_one_item():
    echoes = [*WORDS, (2.9, 2.9, "seven,"), (2.9, 2.9, "eight")]
    items, _ = spoken_items([(*SPAN, echoes)])
    assert [w for _, _, w in items] == ["six", "one", "six", "seven"]
    short = (0.3, 0.9, "three, two, three", [(0.37, 0.57, "three,"), (0.65, 0.8, "two,")])
    items, _ = spoken_items([short])
    assert items == [(0.3, 0.9, "three")]


def test_named_word_in_a_counting_question():
    assert named_word("How often is 'four' spoken?") == "four"
    assert named_word("How many times is the number seven said?") == "seven"
    assert named_word("How many numbers are spoken?") is None


def test_count_of_a_named_word_lists_its_times():
    focus = Focus("count", "speech", subject="six said", numeric=True)
    question = "How many times is the number six said?"
    finding = count_speech(focus, question, [(*SPAN, WORDS)], None, ["1", "2", "3"])
    assert finding.scores == [0.25, 1.0, 0.25]
    assert "at 0.5 s" in finding.answer and "at 1.8 s" in finding.answer
    assert "word timestamps" in finding.reason


def test_what_is_said_at_a_time_inside_a_span():
    focus = Focus("order", "speech", relation="at", anchor="1.4")
    finding = order_speech(focus, [(*SPAN, WORDS)], ["six", "one", "seven", "five"])
    assert finding.scores == [0.0, 1.0, 0.0, 0.0]
    assert "1.2–1.6 s" in finding.reason


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry(env={})


def _quick(words: list[str]) -> tuple[np.ndarray, list[tuple[float, float]]]:
    pieces, times, at = [np.zeros(int(0.5 * SR), np.float32)], [], 0.5
    for word in words:
        audio = normalise(load_samples(FIXTURES / DIGITS[word]))
        times.append((at, at + audio.size / SR))
        pieces += [audio, np.zeros(int(0.15 * SR), np.float32)]
        at += (audio.size + int(0.15 * SR)) / SR
    pieces.append(np.zeros(int(0.5 * SR), np.float32))
    return np.concatenate(pieces).astype(np.float32), times


@pytest.mark.models
async def test_the_planner_answers_from_word_times(registry, tmp_path):
    clip, times = _quick(["six", "one", "five", "seven"])
    middle = round(sum(times[2]) / 2, 1)
    answer, events = await ask_offline(
        registry, tmp_path, clip, f"What is said at {middle} s?", ["six", "one", "five", "seven"]
    )
    assert answer.choice == "five", answer.rationale
    calls = [e for e in events if e.type == "tool_call" and e.tool == "transcribe"]
    assert calls and calls[0].arguments.get("word_timestamps") is True
    assert "word timestamps" in answer.rationale
    answer, _ = await ask_offline(
        registry, tmp_path, clip, "How many times is the number seven said?", ["1", "2", "3"]
    )
    assert answer.choice == "1", answer.rationale


def test_at_a_time_uses_word_times_inside_a_short_span_too():
    short = (0.89, 1.99, "one, zero.", [(0.89, 1.43, "one,"), (1.65, 1.81, "zero.")])
    focus = Focus("order", "speech", relation="at", anchor="1.7")
    finding = order_speech(focus, [short], ["two", "one", "zero"])
    assert finding.scores == [0.0, 0.0, 1.0]
    # for a position the short span stays one item (echoes would shift the positions)
    focus = Focus("order", "speech", position=2)
    assert order_speech(focus, [(0.25, 0.6, "two.", []), short], ["one", "zero"]).scores == [
        1.0,
        0.0,
    ]
