"""Question-type dispatch for the offline rule planner (in the style of EChO-Agent).

A question is classified by keywords in the question and the shape of its choices;
each type names the local tools whose evidence answers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.answer import number_value

if TYPE_CHECKING:
    from agent.planners.offline_timeline import Focus

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

DESCRIPTION = {
    "count": "a counting question",
    "order": "about order or timing",
    "speech_content": "about what is said",
    "speaker": "about the speaker's voice",
    "music": "about music",
    "signal": "about measurable signal properties",
    "sound": "about which sounds occur",
    "general": "of no clear type",
}


# "Is there speech?", "Does anyone talk?": answered from voice activity, whatever the type.
YES_NO_SPEECH = re.compile(
    r"^\s*(is|are|does|do|can|was|were)\b.*\b(speech|speak\w*|talk\w*|voices?|someone|anyone|"
    r"person|people|words?)\b"
)


@dataclass(frozen=True)
class QuestionType:
    kind: str
    reason: str
    tools: tuple[str, ...]
    focus: Focus | None = None  # what a counting or order question is about


def _timed(focus: Focus) -> QuestionType:
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
    from agent.planners.offline_timeline import focus_of

    focus = focus_of(question, choices)
    if focus is not None:
        return _timed(focus)
    text = question.lower()
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
    if not scores[best]:
        tools = TOOLS_FOR["general"]
        if YES_NO_SPEECH.search(text):  # is anyone speaking: voice activity says where
            tools = (*tools, "speech_activity")
        return QuestionType("general", "no keyword decides its type", tools)
    reason = "it mentions " + ", ".join(f"'{w}'" for w in scores[best][:3])
    tools = TOOLS_FOR[best]
    if best == "music" and _hits(text, ("vocal", "singer", "singing", "voice", "sung")):
        tools = (*tools, "signal_stats")  # the voice register of the singing
    return QuestionType(best, reason, tools)


def tool_arguments(name: str, qtype: QuestionType, choices: Sequence[str]) -> dict[str, object]:
    """Arguments for a dispatched local tool: speech-to-text on a question about what is said
    gets the choices' words as hints (whisper is much better on short words with them)."""
    if name == "transcribe" and qtype.focus is not None:
        from agent.planners.offline_timeline import DIGIT_PROMPT

        # each word's own time: a span may hold several words (quick speech)
        timed: dict[str, object] = {"per_span": True, "word_timestamps": True}
        if qtype.kind == "order" and choices:
            return {**timed, "prompt": ", ".join(choices)}
        if qtype.focus.numeric:
            return {**timed, "prompt": DIGIT_PROMPT}
        return timed
    if name == "transcribe" and qtype.kind == "speech_content" and choices:
        return {"prompt": ", ".join(choices), "options": list(choices)}
    return {}
