"""Question-type dispatch for the offline rule planner (in the style of EChO-Agent).

A question is classified by keywords in the question and the shape of its choices;
each type names the local tools whose evidence answers it. What the question is about
(a count, a position, a sequence, yes or no about something, when, what kind) is read by
``question_focus``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.answer import Similarity
from agent.number_words import number_value
from agent.planners.expected_answer import PROMPTS, VOCABULARY, Expect, expected_answer
from agent.planners.question_focus import (
    Focus,
    OpenAsk,
    choice_sequence,
    focus_of,
    is_yes_no_choices,
    open_ask,
)
from agent.planners.sound_match import tracked_classes

DIGIT_PROMPT = "zero, one, two, three, four, five, six, seven, eight, nine"

KEYWORDS: dict[str, tuple[str, ...]] = {
    "speech_content": (
        "say", "said", "says", "spoken", "speak", "speaks", "word", "words", "transcri",
        "mention", "digit", "number", "sentence", "language", "talk", "talking", "asked",
        "utterance", "phrase", "name", "topic", "conversation", "dialogue", "read",
    ),
    "speaker": (
        "gender", "male", "female", "man", "woman", "voice", "emotion", "accent", "age",
        "speaker", "tone", "mood of the speaker", "child", "feel", "sound like",
    ),
    "music": (
        "music", "song", "tempo", "bpm", "beat", "rhythm", "key", "chord", "melody",
        "instrument", "genre", "note", "harmony", "piano", "guitar", "drum", "violin",
        "orchestra", "band", "vocal", "singer", "singing", "track", "musical", "scale",
    ),
    "signal": (
        "how long", "duration", "seconds", "loud", "loudness", "quiet", "silence", "silent",
        "volume", "level", "decibel",
    ),
    "sound": (
        "sound", "noise", "hear", "heard", "animal", "vehicle", "event", "source",
        "background", "environment", "scene", "happening", "object", "bark", "engine",
    ),
}  # fmt: skip

TOOLS_FOR: dict[str, tuple[str, ...]] = {
    "speech_content": ("transcribe", "speech_activity"),
    "speaker": ("signal_stats", "sound_events", "transcribe"),
    "music": ("music_analysis", "sound_events"),
    "signal": ("signal_stats", "speech_activity"),
    "sound": ("sound_events", "speech_activity"),
    "general": ("sound_events", "transcribe", "signal_stats"),
}

# Questions without choices (or with yes / no): the tools whose evidence answers them.
TOOLS_FOR_ASK: dict[tuple[str, str], tuple[str, ...]] = {
    ("yes_no", "sound"): ("sound_events",),
    ("yes_no", "speech"): ("speech_activity", "sound_events", "transcribe"),
    ("yes_no", "music"): ("sound_events", "music_analysis"),
    ("yes_no", "word"): ("transcribe", "speech_activity"),
    ("when", "sound"): ("sound_events",),
    ("when", "music"): ("sound_events",),
    ("when", "speech"): ("speech_activity", "sound_events"),
    ("when", "word"): ("transcribe", "speech_activity"),
    ("kind", "sound"): ("sound_events", "speech_activity"),
    ("kind", "music"): ("sound_events", "music_analysis"),
}
ASK_KIND = {"yes_no": "presence", "when": "timing", "kind": "kind", "property": "property"}
ASK_REASON = {"yes_no": "whether there is", "when": "when there is", "kind": "what kind of"}
# Yes or no about a property: the tools that measure it
TOOLS_FOR_PROPERTY: dict[str, tuple[str, ...]] = {
    "tempo": ("sound_events", "music_analysis"),
    "mode": ("sound_events", "music_analysis"),
    "key": ("sound_events", "music_analysis"),
    "pitch": ("signal_stats", "speech_activity", "sound_events"),
    "mood": ("sound_events", "music_analysis"),
    "loudness": ("signal_stats", "sound_events"),
    "gender": ("signal_stats", "speech_activity", "sound_events"),
    "child": ("signal_stats", "speech_activity", "sound_events"),
    "emotion": ("speech_activity", "sound_events", "transcribe"),
    "accent": ("speech_activity", "sound_events", "transcribe"),
    "noise": ("sound_events", "signal_stats", "speech_activity"),
    "clipping": ("signal_stats",),
}

EXPECT_REASON = {
    Expect.NUMBER: "a number",
    Expect.DIGITS: "a string of digits",
    Expect.YES_NO: "a yes or a no",
    Expect.KEY: "a key to press",
    Expect.NAME: "a name",
    Expect.TIME: "a time",
}

DESCRIPTION = {
    "count": "a counting question",
    "order": "about order or timing",
    "sequence": "about the order of several sounds",
    "speech_content": "about what is said",
    "speaker": "about the speaker's voice",
    "music": "about music",
    "signal": "about measurable signal properties",
    "sound": "about which sounds occur",
    "presence": "a yes-or-no question about what the recording holds",
    "timing": "about when something is heard",
    "kind": "about what kind of sound it is",
    "property": "a yes-or-no question about a property of the recording",
    "general": "of no clear type",
}


@dataclass(frozen=True)
class QuestionType:
    kind: str
    reason: str
    tools: tuple[str, ...]
    focus: Focus | None = None  # what a counting, order or sequence question is about
    ask: OpenAsk | None = None  # what a question without choices (or yes / no) asks for
    expect: Expect | None = None  # the kind of answer a question about speech expects


def _timed(focus: Focus) -> QuestionType:
    if focus.kind == "sequence":
        return QuestionType("sequence", "its choices are sounds in a row", ("sound_events",), focus)
    if focus.target == "speakers":
        tools: tuple[str, ...] = ("speakers", "signal_stats")
        what = "speakers (pitch and timbre per speech span, grouped by voice)"
    elif focus.target == "speech":
        tools = ("transcribe", "speech_activity")
        what = "spoken items (a transcript per utterance, with times)"
    else:
        tools = ("sound_events",)
        what = "sound events (when each sound stands out, and what it is)"
    # Same speaker or not, higher or lower: a question about the voices (see offline_speakers).
    kind = "speaker" if focus.kind in ("same", "compare") else focus.kind
    return QuestionType(kind, f"it asks about {what}", tools, focus)


def _hits(text: str, words: Sequence[str]) -> list[str]:
    found = []
    for word in words:
        pattern = r"\b" + re.escape(word) if " " in word or len(word) > 4 else rf"\b{word}\b"
        if re.search(pattern, text):
            found.append(word)
    return found


def classify(question: str, choices: Sequence[str]) -> QuestionType:
    focus = focus_of(question, choices)
    if focus is not None:
        return _timed(focus)
    expect = expected_answer(question)
    if expect is not None:  # a number, a key to press, a name said: listen for that
        tools = TOOLS_FOR["speech_content"]
        reason = f"it expects {EXPECT_REASON[expect]} said in the recording"
        said = None if choices else OpenAsk("said", "speech")
        return QuestionType("speech_content", reason, tools, ask=said, expect=expect)
    text = question.lower()
    ask = open_ask(question) if not choices or is_yes_no_choices(choices) else None
    if ask is not None and ask.form == "property":  # no choices, or yes and no
        reason = f"it asks whether the {ask.target} is {ask.value or 'of some ' + ask.prop}"
        return QuestionType("property", reason, TOOLS_FOR_PROPERTY[ask.prop], ask=ask)
    if ask is not None and (ask.form, ask.target) in TOOLS_FOR_ASK:
        tools = TOOLS_FOR_ASK[(ask.form, ask.target)]
        what = f" ({ask.subject})" if ask.subject else ""
        reason = f"it asks {ASK_REASON[ask.form]} {ask.target}{what}"
        return QuestionType(ASK_KIND[ask.form], reason, tools, ask=ask)
    scores = {kind: _hits(text, words) for kind, words in KEYWORDS.items()}
    if (
        choices
        and all(number_value(c) is not None for c in choices)
        and (scores["speech_content"] or not any(scores.values()))
    ):
        return QuestionType(
            "speech_content", "the choices are numbers and it asks about speech",
            TOOLS_FOR["speech_content"],
        )  # fmt: skip
    best = max(scores, key=lambda k: (len(scores[k]), k == "sound"))
    if ask is not None and ask.form == "who":
        best = "speaker"
    if not scores[best]:
        return QuestionType("general", "no keyword decides its type", TOOLS_FOR["general"], ask=ask)
    reason = "it mentions " + ", ".join(f"'{w}'" for w in scores[best][:3])
    tools = TOOLS_FOR[best]
    if best == "music" and _hits(text, ("vocal", "singer", "singing", "voice", "sung")):
        tools = (*tools, "signal_stats")  # the voice register of the singing
    return QuestionType(best, reason, tools, ask=ask)


def sound_names(qtype: QuestionType, choices: Sequence[str]) -> list[str]:
    """The sounds a question names: each sound of "A, then B" choices, the thing asked about
    in "is there a hen" / "when does the dog bark"."""
    if qtype.kind == "sequence":
        return list(dict.fromkeys(n for c in choices for n in choice_sequence(c)))
    ask = qtype.ask
    if ask is not None and ask.target == "sound" and ask.subject and ask.form in ("yes_no", "when"):
        return [ask.subject]
    return []


def tool_arguments(
    name: str, qtype: QuestionType, choices: Sequence[str], similarity: Similarity | None = None
) -> dict[str, object]:
    """Arguments for a dispatched local tool: speech-to-text on a question about what is said
    gets the choices' words as hints (whisper is much better on short words with them); the
    sound tagger follows the classes of the sounds a question names over time."""
    if name == "sound_events":
        track = tracked_classes(sound_names(qtype, choices), similarity)
        return {"track": track} if track else {}
    if name == "transcribe" and qtype.ask is not None and qtype.ask.target == "word":
        # each word with its own time, and no hint naming the word (it would put the word in
        # its mouth); a number is listened for among all ten digits alike
        timed = {"per_span": True, "word_timestamps": True}
        return {**timed, "prompt": DIGIT_PROMPT} if number_value(qtype.ask.subject) else timed
    if name == "transcribe" and qtype.focus is not None:
        # each word's own time: a span may hold several words (quick speech)
        timed: dict[str, object] = {"per_span": True, "word_timestamps": True}
        if qtype.kind == "order" and choices:
            return {**timed, "prompt": ", ".join(choices)}
        if qtype.focus.numeric:
            return {**timed, "prompt": DIGIT_PROMPT}
        return timed
    if name == "transcribe" and qtype.expect is not None and not choices:
        return expected_arguments(qtype.expect)
    if name == "transcribe" and qtype.kind == "speech_content" and choices:
        return {"prompt": ", ".join(choices), "options": list(choices)}
    if name == "transcribe" and qtype.ask is not None and qtype.ask.form == "said":
        return {"word_timestamps": True}  # each word's probability: where whisper hesitated
    return {}


def expected_arguments(expect: Expect) -> dict[str, object]:
    """Speech-to-text asked for what the question expects: digits one utterance at a time,
    biased to the digit words and each also read as the best of the ten (a constrained
    pass); a yes or no biased to those words; a key, a name, a time with word times."""
    arguments: dict[str, object] = {"word_timestamps": True}
    if expect in VOCABULARY:
        arguments = {"per_span": True, "vocabulary": list(VOCABULARY[expect])}
    if expect in PROMPTS:
        arguments["prompt"] = PROMPTS[expect]
    return arguments
