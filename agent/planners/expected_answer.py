"""What kind of answer a question about speech expects: a number, a digit string, a yes or
no, a key to press, a name, a time.

A question that says what it expects tells the tools what to listen for: speech-to-text is
biased to that vocabulary (whisper's prompt) and, for digits, each speech span is also read
as the best of the ten digit words (a constrained second pass); the answer is then taken
from the transcript's meaning (``offline_expected``). Nothing here looks at evidence.
"""

from __future__ import annotations

import re
from enum import StrEnum

from agent.answer import tokens


class Expect(StrEnum):
    """The kind of answer a question about speech expects."""

    NUMBER = "number"  # one number: "what number does the speaker say"
    DIGITS = "digits"  # a string of digits: "what digits are spoken", "the phone number"
    YES_NO = "yes_no"  # the speaker's yes or no: "does the caller answer yes or no"
    KEY = "key"  # a key to press: "which key do I press to leave a message"
    NAME = "name"  # a name said: "what is the speaker's name"
    TIME = "time"  # a time said: "what time does the speaker say"


DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# Words whisper is told to expect (its initial prompt), per kind. Only short closed lists: a
# sentence ("For an operator, press 0") or a list of names would be put in whisper's mouth
# where the speech is unclear, so a key, a name or a time is listened for without a prompt.
PROMPTS: dict[Expect, str] = {
    Expect.NUMBER: ", ".join(DIGIT_WORDS),
    Expect.DIGITS: ", ".join(DIGIT_WORDS),
    Expect.YES_NO: "Yes. No.",
}
# The closed vocabulary each speech span is also read as (a constrained second pass: whisper
# scores each word as the span's transcript). On the 50 FSDD digits the best of the ten digit
# words is right 49 times where the free reading is right 31 times.
VOCABULARY: dict[Expect, tuple[str, ...]] = {
    Expect.NUMBER: DIGIT_WORDS,
    Expect.DIGITS: DIGIT_WORDS,
}

_ACTION = r"(?:press|push|hit|dial|enter|select|choose|pick|type)"
# "which key do I press", "what button", "what number do I press / dial / should I press"
KEY_RE = re.compile(
    r"\b(?:which|what)\s+(?:key|button|number|digit|option)s?\b.*\b" + _ACTION + r"\b"
    r"|\b" + _ACTION + r"\b.*\b(?:which|what)\s+(?:key|button|number|digit|option)s?\b"
    r"|\b(?:key|button)\s+(?:to|for|do|should|must)\b.*\b" + _ACTION + r"\b"
    r"|\bwhat\s+(?:do|should|must)\s+i\s+" + _ACTION + r"\b"
    # "which key repeats the options", "which number gets me an operator", "what key to leave
    # a message", "which key for billing": a key that does something or is for something
    r"|\b(?:which|what)\s+(?:key|button|number|digit|option)\s+(?:is\s+)?(?:for|to|gets?|"
    r"checks?|repeats?|connects?|takes?|leads?|reaches?|plays?|opens?|gives?)\b"
)
# "which key is the song in", "what key is this piece in": a musical key, not one to press
MUSICAL_KEY_RE = re.compile(
    r"\b(?:song|music|piece|tune|melody|track|chord|scale|major|minor|played|playing|sung)\b"
)
DIGITS_RE = re.compile(
    r"\b(?:phone|telephone|account|pin|code|card|order|reference|confirmation|extension)"
    r"\s+(?:number|code)?\b|\bdigits\b|\bnumbers\b|\bsequence of (?:numbers|digits)\b"
)
NUMBER_RE = re.compile(r"\b(?:which|what)\s+(?:number|digit)\b|\bnumber\b|\bdigit\b")
SAYS_RE = re.compile(
    r"\b(say|says|said|saying|spoken|speak\w*|read|reads|call\w*|mention\w*|heard?|"
    r"announc\w*|recit\w*|give|gives|given|tell|tells|told|is it)\b"
)
YES_NO_RE = re.compile(
    r"\b(?:say|says|said|answer\w*|repl\w*|respond\w*)\b.*\byes or no\b"
    r"|\b(?:agree|accept|confirm|decline|refuse)\w*\b.*\b(?:or not|yes or no)\b"
    r"|^\s*yes or no\b"
)
NAME_RE = re.compile(
    r"\bwhat(?:'s| is| was)\s+(?:the\s+|his\s+|her\s+|their\s+|my\s+)?"
    r"(?:speaker'?s?|caller'?s?|person'?s?|man'?s?|woman'?s?|company'?s?|)\s*name\b"
    r"|\bwhat name\b|\bname (?:is|was) (?:said|given|mentioned)\b"
    r"|\bwhat is (?:he|she|it|the \w+) called\b"
)
YES_NO_QUESTION_RE = re.compile(
    r"^(?:is|are|was|were|does|do|did|can|could|will|would|has|have|had|should)\b"
)
TIME_RE = re.compile(
    r"\bwhat time\b|\bat what time\b|\bwhich time\b|\bwhat hour\b|\bwhat day and time\b"
    r"|\bwhen (?:is|was) the (?:appointment|meeting|call|flight|train|bus|delivery)\b"
)


def expected_answer(question: str) -> Expect | None:
    """What kind of answer a question about speech expects, else None.

    "Which key do I press" expects a key to press (the key of a phone, never a musical key);
    "what time does he say" a time, not when in the clip speech is heard."""
    text = " ".join(question.lower().replace("’", "'").split())
    if KEY_RE.search(text) and not MUSICAL_KEY_RE.search(text):
        return Expect.KEY
    if YES_NO_RE.search(text):
        return Expect.YES_NO
    if YES_NO_QUESTION_RE.search(text):
        return None  # "is the number seven said": yes or no about it, not the number
    if TIME_RE.search(text) and (SAYS_RE.search(text) or "appointment" in text):
        return Expect.TIME
    if NAME_RE.search(text):
        return Expect.NAME
    if re.search(r"\bhow many\b|\bcount\b|\bnumber of\b", text):
        return None  # a count of things, not a number said
    if DIGITS_RE.search(text) and (SAYS_RE.search(text) or re.search(r"\bwhat\b", text)):
        return Expect.DIGITS
    if NUMBER_RE.search(text) and (SAYS_RE.search(text) or re.search(r"^what\b", text)):
        return Expect.NUMBER
    return None


def is_key_question(question: str) -> bool:
    """Whether "key" in a question is a key to press ("which key do I press"), not a
    musical key."""
    return expected_answer(question) is Expect.KEY


def goal_words(question: str) -> list[str]:
    """What a question about a key wants done ("which key do I press to leave a message" ->
    ["leave", "message"]): the words that are not the question's own."""
    return [w for w in tokens(question) if w not in GOAL_FILLER]


GOAL_FILLER = {
    "which", "what", "key", "keys", "button", "buttons", "number", "digit", "option", "do",
    "does", "did", "i", "we", "you", "one", "should", "must", "can", "could", "to", "for",
    "press", "push", "hit", "dial", "enter", "select", "choose", "pick", "type", "the", "a",
    "an", "in", "on", "if", "want", "wants", "need", "would", "like", "get", "reach", "is",
    "be", "me", "my", "this", "that", "it", "recording", "menu", "phone",
    "call", "caller", "speaker", "says", "say", "said", "according", "of", "and", "or",
}  # fmt: skip
