"""Questions that expect a number, digits, a key to press, a yes or no, a name or a time: the
kind is recognised, speech-to-text is asked for it, whisper's loops are cut, the answer is
taken from what the transcript means, and speech-to-text switched off is said of the tool
(no models: the tools' results are given as data, as the loop hands them to the planner)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.local_models.whisper_asr import Segment, Transcript, Word
from agent.planners.base import ChatMessage, FinalAnswer, ToolSpec
from agent.planners.expected_answer import Expect, expected_answer
from agent.planners.offline import OfflinePlanner
from agent.planners.offline_confidence import family_of
from agent.planners.offline_expected import key_offers
from agent.planners.question_types import classify, tool_arguments
from agent.speech_loops import cut_loop
from agent.tools.local_asr import cut_loops

IVR = "For an operator, press 0. To leave a message, press 5."


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("What number does the speaker say?", Expect.NUMBER),
        ("Which digit is spoken?", Expect.NUMBER),
        ("What is the phone number?", Expect.DIGITS),
        ("What digits are spoken?", Expect.DIGITS),
        ("which key do i press to get an operator?", Expect.KEY),
        ("Which button do I press to leave a message?", Expect.KEY),
        ("What number should I press for billing?", Expect.KEY),
        ("Does the caller answer yes or no?", Expect.YES_NO),
        ("What is the speaker's name?", Expect.NAME),
        ("What time does the speaker say?", Expect.TIME),
        ("What key is the song in?", None),
        ("How many digits are spoken?", None),
        ("What does the speaker say?", None),
        ("Is the number seven said?", None),
    ],
)
def test_the_expected_kind_of_answer_is_recognised(question, kind):
    assert expected_answer(question) == kind


def test_a_key_to_press_is_not_a_musical_key():
    qtype = classify("which key do i press to get an operator?", [])
    assert qtype.kind == "speech_content" and qtype.expect is Expect.KEY
    assert "music_analysis" not in qtype.tools and "transcribe" in qtype.tools
    assert classify("What key is the song in?", []).kind == "music"


def test_a_number_is_listened_for_among_the_ten_digit_words():
    qtype = classify("What number does the speaker say?", [])
    arguments = tool_arguments("transcribe", qtype, [])
    assert arguments["per_span"] is True
    assert arguments["vocabulary"] == [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
    ]
    assert "seven" in str(arguments["prompt"])


@pytest.mark.parametrize(
    ("reading", "cut"),
    [
        ("1, 1, 0, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1,", "1, 1, 0, 9, 1"),
        ("8, 0, 7, 7, 6, 8, 8, 8, 8, 8, 8, 8, 8", "8, 0, 7, 7, 6, 8"),
        ("seven, eight, seven, eight, seven, eight, seven", "seven, eight"),
        ("Thank you. Thank you. Thank you.", "Thank you."),
    ],
)
def test_a_repetition_loop_is_cut_and_flagged(reading, cut):
    loop = cut_loop(reading)
    assert loop.text == cut and loop.cut


@pytest.mark.parametrize(
    "reading", ["1 1 1", "0, 0, 0, 0", "one two three four", IVR, "No, no, no."]
)
def test_speech_that_does_not_loop_is_kept(reading):
    loop = cut_loop(reading)
    assert loop.text == reading and not loop.cut


def _looped_transcript() -> Transcript:
    text = "1, 1, 0, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1,"
    words = [Word(0.3 + 0.4 * i, 0.6 + 0.4 * i, " " + w, 0.9) for i, w in enumerate(text.split())]
    return Transcript(text, "en", 1.0, [Segment(0.3, 5.5, text, -0.3, 0.01, words)], "tiny.en")


def test_the_tool_cuts_a_loop_from_the_text_and_the_word_times():
    transcript, cut = cut_loops(_looped_transcript())
    assert cut == 1
    assert transcript.text == "1, 1, 0, 9, 1"
    assert [w.word.strip(" ,") for w in transcript.segments[0].words] == ["1", "1", "0", "9", "1"]


def _messages(question: str, **tool_data: dict[str, Any]) -> list[ChatMessage]:
    messages = [ChatMessage("user", question, data={"question": question, "choices": []})]
    for name, data in tool_data.items():
        messages.append(ChatMessage("tool", "...", name=name, data=data))
    return messages


def _tools(*names: str) -> list[ToolSpec]:
    return [ToolSpec(n, n, {"type": "object", "properties": {}}) for n in names]


async def _answer(question: str, tools: list[ToolSpec], **tool_data: dict[str, Any]) -> FinalAnswer:
    planner = OfflinePlanner()
    chunks = [c async for c in planner.stream_turn(_messages(question, **tool_data), tools)]
    return next(c for c in chunks if isinstance(c, FinalAnswer))


def _transcribed(text: str, **extra: Any) -> dict[str, Any]:
    segments = [{"start": 0.2, "end": 1.0, "text": text, "avg_logprob": -0.1}]
    return {"text": text, "segments": segments, "duration_s": 1.5, "peak_dbfs": -3.0,
            "rms_dbfs": -20.0, **extra}  # fmt: skip


SPEECH = {"speech_seconds": 0.8, "spans": [{"start": 0.2, "end": 1.0}]}


async def test_a_number_is_taken_from_the_digit_words_not_from_a_misheard_word():
    data = _transcribed(
        "Okay.",
        per_span=True,
        span_words=[{"start": 0.2, "end": 1.0, "word": "three", "logprob": -0.4, "margin": 1.1}],
    )
    answer = await _answer(
        "What number does the speaker say?", _tools("transcribe", "speech_activity"),
        transcribe=data, speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text == "Three."
    assert not answer.guess


async def test_a_digit_barely_preferred_is_a_guess():
    data = _transcribed(
        "Bye.",
        per_span=True,
        span_words=[{"start": 0.2, "end": 1.0, "word": "five", "logprob": -1.4, "margin": 0.05}],
    )
    answer = await _answer(
        "What number does the speaker say?", _tools("transcribe", "speech_activity"),
        transcribe=data, speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text.startswith("Five")
    assert answer.guess


async def test_digits_after_a_cut_loop_are_a_guess():
    data = _transcribed("1, 1, 0, 9, 1", loops_cut=1)
    answer = await _answer(
        "What digits are spoken?", _tools("transcribe", "speech_activity"),
        transcribe=data, speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text.startswith("1, 1, 0, 9, 1")
    assert answer.guess and "loop" in answer.rationale


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Which button do I press to leave a message?", "Press 5 to leave a message."),
        ("which key do i press to get an operator?", "Press 0 for an operator."),
    ],
)
async def test_the_key_is_the_one_said_for_what_is_asked(question, said):
    answer = await _answer(
        question, _tools("transcribe", "speech_activity"),
        transcribe=_transcribed(IVR), speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text == said
    assert "music" not in answer.rationale.lower()


async def test_speech_to_text_switched_off_is_said_of_the_tool():
    answer = await _answer(
        "What does the speaker say?", _tools("speech_activity", "sound_events"),
        speech_activity=SPEECH,
    )  # fmt: skip
    assert "speech-to-text" in answer.text and "switched off" in answer.text
    assert "nothing was recognised" not in answer.rationale
    assert not answer.guess and answer.confidence is None


async def test_a_count_does_not_count_a_repetition_loop():
    looped = "1, 1, 0, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1,"
    data = {
        "text": looped,
        "per_span": True,
        "segments": [{"start": 0.3, "end": 5.5, "text": looped, "avg_logprob": -0.2}],
        "duration_s": 6.0, "peak_dbfs": -3.0, "rms_dbfs": -20.0,
    }  # fmt: skip
    answer = await _answer(
        "How many digits are spoken?", _tools("transcribe", "speech_activity"),
        transcribe=data, speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text.startswith("Five numbers"), answer.text


async def test_digits_said_in_one_breath_that_echo_are_a_guess():
    data = _transcribed(
        "seven, seven, five, seven, five",
        per_span=True,
        segments=[{"start": 0.28, "end": 2.15, "text": "seven, seven, five, seven, five",
                   "avg_logprob": -0.2}],
        span_words=[{"start": 0.28, "end": 2.15, "word": "seven", "logprob": -1.5, "margin": 3.5}],
    )  # fmt: skip
    answer = await _answer(
        "What number does the speaker say?", _tools("transcribe", "speech_activity"),
        transcribe=data, speech_activity=SPEECH,
    )  # fmt: skip
    assert answer.text.startswith("7, 7, 5, 7, 5") and answer.guess


@pytest.mark.parametrize(
    "question, kind",
    [
        ("Which key repeats the options?", Expect.KEY),
        ("Which number gets me an operator?", Expect.KEY),
        ("Which key checks my balance?", Expect.KEY),
        ("Which key is for technical support?", Expect.KEY),
        ("what key to leave a message", Expect.KEY),
        ("What key is the song in?", None),
        ("What key is this song played in?", None),
    ],
)
def test_a_key_that_does_something_is_a_key_to_press(question, kind):
    """Menu questions people type without "press" (the words dev sets' phrasings)."""
    assert expected_answer(question) is kind


def test_a_key_whisper_wrote_as_a_roman_numeral_is_read():
    """Whisper writes a digit said alone after "press" as "I", "IV" now and then."""
    menu = "For technical support, press I. To check your balance, press IV. Press i to go on."
    assert key_offers(menu) == [("1", "for technical support"), ("4", "to check your balance")]


def test_questions_expecting_a_kind_are_calibrated_on_their_own():
    """A misheard menu's key must not move the line of every other answer about speech."""
    key_q = "Which key do I press to leave a message?"
    assert family_of(classify(key_q, []), []) == "open:expect:key"
    assert family_of(classify("What number does the speaker say?", []), []) == "open:expect:number"
    assert family_of(classify(key_q, ["1", "5"]), ["1", "5"]) != "open:expect:key"


def test_a_sure_digit_reading_is_weaker_when_its_lead_is_small_or_spans_were_read_freely():
    """The calibration's input for digits read span by span is graded, not a flat 1.0."""
    from agent.planners.offline_expected import DigitReading, constrained_strength

    clear = DigitReading(["1", "2"], constrained=True, least_margin=1.5, agrees=True)
    narrow = DigitReading(["1", "2"], constrained=True, least_margin=0.3, agrees=True)
    breath = DigitReading(["1", "2"], constrained=True, least_margin=1.5, agrees=True, free_spans=1)
    disagree = DigitReading(["1", "2"], constrained=True, least_margin=1.5, agrees=False)
    assert constrained_strength(clear) == 1.0
    assert constrained_strength(clear) > constrained_strength(narrow) > 0.5
    assert constrained_strength(breath) < 1.0 and constrained_strength(disagree) < 1.0
