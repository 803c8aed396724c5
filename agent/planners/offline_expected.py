"""Answers to questions that expect a number, digits, a yes or no, a key to press, a name or
a time (``expected_answer``), taken from what the transcript means.

"What number does the speaker say?" is answered with the digit each speech span reads best
as among the ten digit words (whisper's constrained pass) rather than with whatever word the
free reading heard ("Okay." for "three"); "Which key do I press to leave a message?" with
the key said in the clause about leaving a message ("To leave a message, press 5" -> "Press 5
to leave a message."). Speech-to-text switched off is said as such: the words were not
listened to, which says nothing about the recording.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.answer import tokens
from agent.number_words import NUMBER_NAMES, NUMBER_WORDS
from agent.planners.expected_answer import DIGIT_WORDS, Expect, goal_words
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_words import Worded

# A span's best digit word leads the next by at least this much mean log-probability: on the
# 50 FSDD digits every one that did was right (49 of 49); the one below it was wrong.
MARGIN_SURE = 0.2


@dataclass(frozen=True)
class DigitReading:
    """The digits read from the speech, and what the calibration can weigh."""

    digits: list[str] = field(default_factory=list)  # "0".."9", in time order
    constrained: bool = False  # read span by span as the best of the ten digit words
    least_margin: float | None = None  # the smallest lead of a span's best digit word
    matched_vocabulary: bool = False  # the free reading is made of number words only
    agrees: bool = False  # the free reading names the same digits as the constrained one
    loop_cut: bool = False  # whisper repeated itself; the repeats were cut
    free_spans: int = 0  # spans long enough for several digits, taken from the free reading
    echo: bool = False  # a run of digits read freely comes twice in a row (see ``echoes``)


def digits_of(text: str) -> list[str]:
    """The digits a reading names, in order ("one, 40" -> ["1", "4", "0"]); "oh" counts."""
    found = []
    for word in tokens(text):
        if word.isdigit():
            found += list(word)
        elif word in NUMBER_WORDS and NUMBER_WORDS[word] < 10:
            found.append(str(NUMBER_WORDS[word]))
    return found


# A span longer than this may hold several digits said in one breath: its free reading's
# digits are taken (a single FSDD digit's span lasts 0.33-0.74 s with its padding).
ONE_DIGIT_MAX_S = 0.9


def several(said: list[str], seconds: float) -> bool:
    """Whether a span's free reading of several digits is to be believed over its best digit
    word: the span is long enough to hold more than one."""
    return len(said) >= 2 and seconds > ONE_DIGIT_MAX_S


def echoes(digits: list[str]) -> bool:
    """Whether a run of two or more digits comes twice in a row ("7, 7, 5, 7, 5"): whisper,
    prompted with the digit words, repeats itself on speech of several digits; a real
    number may do it too ("2020"), so this only makes the answer a guess."""
    n = len(digits)
    return any(
        digits[i : i + k] == digits[i + k : i + 2 * k]
        for k in range(2, n // 2 + 1)
        for i in range(n - 2 * k + 1)
    )


def read_digits(evidence: Evidence) -> DigitReading:
    """The digits said: each span's best digit word (the constrained pass), except where the
    free reading of a span holds several digits (quick speech, one span); without a
    constrained pass, the free reading's digits."""
    free = evidence.transcript or ""
    words = tokens(free)
    matched = bool(words) and all(w.isdigit() or w in NUMBER_WORDS for w in words)
    if not evidence.span_words:
        return DigitReading(digits_of(free), matched_vocabulary=matched,
                            loop_cut=evidence.loop_cut)  # fmt: skip
    digits: list[str] = []
    margins = []
    free_spans = 0
    for start, end, word, margin in evidence.span_words:
        texts = [u[2] for u in evidence.utterances or [] if abs(u[0] - start) < 0.03]
        said = digits_of(texts[0] if texts else "")
        if several(said, end - start):  # several digits in one span: the free reading
            digits += said
            free_spans += 1
            continue
        digits.append(str(DIGIT_WORDS.index(word)))
        margins.append(margin)
    return DigitReading(
        digits,
        constrained=True,
        least_margin=min(margins) if margins else None,
        matched_vocabulary=matched,
        agrees=digits_of(free) == digits,
        loop_cut=evidence.loop_cut,
        free_spans=free_spans,
        echo=free_spans > 0 and echoes(digits),
    )


def constrained_strength(reading: DigitReading) -> float:
    """How strongly a sure reading span by span holds, for the calibration to draw its line
    on (words dev sets): the least lead of a span's digit word (saturating at 1.0 of mean
    log-probability), lower when spans had to be read freely (several digits in one breath)
    or the free reading disagrees."""
    lead = 1.0 if reading.least_margin is None else min(1.0, reading.least_margin)
    strength = 0.5 + 0.5 * lead
    if reading.free_spans:
        strength *= 0.85
    if not reading.agrees:
        strength *= 0.9
    return round(strength, 3)


def _digits_answer(expect: Expect, evidence: Evidence, details: str) -> Worded:
    reading = read_digits(evidence)
    free = evidence.transcript or ""
    if not reading.digits:
        text = f'I can\'t tell which number: the speech reads "{free}", with no number in it.'
        return Worded(text, details, 0.0, guess=True)
    if len(reading.digits) == 1:
        said = NUMBER_NAMES[int(reading.digits[0])]
        text = f"{said.capitalize()}."
    else:
        text = ", ".join(reading.digits) + "."
    why = []
    if reading.constrained:
        why.append(
            "each stretch of speech read as the likeliest of the ten digit words ("
            + ", ".join(NUMBER_NAMES[int(d)] for d in reading.digits)
            + f'); the free reading was "{free}"'
        )
    if reading.loop_cut:
        why.append(
            "whisper repeated itself at the end of its reading (a decoding loop); the repeats "
            "were cut, so how many digits there are is uncertain"
        )
    # a loop in the free reading does not touch digits read span by span
    unsure = (reading.loop_cut and (not reading.constrained or reading.free_spans > 0)) or (
        reading.least_margin is not None and reading.least_margin < MARGIN_SURE
    )
    if reading.echo:
        unsure = True
        why.append(
            "a run of digits comes twice in a row where several digits were said in one "
            "breath; whisper often repeats itself there"
        )
    if not reading.constrained and not reading.matched_vocabulary:
        unsure = True
        why.append("the reading holds words that are not numbers")
    if reading.least_margin is not None and reading.least_margin < MARGIN_SURE:
        why.append("one digit was only a little likelier than another")
    strength = 0.0 if unsure else (evidence.transcript_certainty or 1.0)
    if reading.constrained and not unsure:
        strength = constrained_strength(reading)
    details = (f"Evidence: {'; '.join(why)}. " if why else "") + details
    if unsure:
        text = text.rstrip(".") + ", probably."
    return Worded(text, details.strip(), strength, guess=unsure)


KEY_NAMES = {"star": "star", "asterisk": "star", "pound": "pound", "hash": "hash"}
PRESS_RE = re.compile(r"\b(?:press|push|dial|select|enter)\s+(?:the\s+)?(\w+)(?:\s+key)?", re.I)
LEAD_RE = re.compile(r"^(?:please\s+|and\s+|or\s+|if you (?:want|would like|wish|need) )", re.I)


# Whisper writes a digit said alone after "press" as a Roman numeral now and then ("press
# I", "press IV"): upper case only, so "press i" in running text is not read as one.
ROMAN_KEYS = {"I": "1", "II": "2", "III": "3", "IV": "4", "V": "5", "VI": "6", "VII": "7",
              "VIII": "8", "IX": "9"}  # fmt: skip


def _key(word: str) -> str | None:
    if word in ROMAN_KEYS:
        return ROMAN_KEYS[word]
    word = word.lower()
    if word.isdigit():
        return word
    if word in NUMBER_WORDS and NUMBER_WORDS[word] < 10:
        return str(NUMBER_WORDS[word])
    return KEY_NAMES.get(word)


def key_offers(transcript: str) -> list[tuple[str, str]]:
    """The keys a phone menu offers and what each is for, in order: "For an operator, press
    0. To leave a message, press 5." -> [("0", "for an operator"), ("5", "to leave a
    message")]. A menu that starts with "Press 1 for sales" says what a key is for after it;
    one that starts "For sales, press 1" before it (whisper often drops the full stops)."""
    found = [m for m in PRESS_RE.finditer(transcript) if _key(m.group(1)) is not None]
    if not found:
        return []
    after = not LEAD_RE.sub("", transcript[: found[0].start()].strip(" ,.;!?"))
    offers = []
    for i, press in enumerate(found):
        if after:
            stop = found[i + 1].start() if i + 1 < len(found) else len(transcript)
            what = re.split(r"[.;!?]", transcript[press.end() : stop])[0]
        else:
            begin = found[i - 1].end() if i else 0
            what = re.split(r"[.;!?]", transcript[begin : press.start()])[-1]
        what = LEAD_RE.sub("", " ".join(what.strip(" ,").split())).strip(" ,")
        what = re.sub(r"(?i)[ ,]*\bplease$", "", what)
        if what and not re.match(r"(?i)(for|to)\b", what):
            what = f"for {what}"
        offers.append((str(_key(press.group(1))), what[:1].lower() + what[1:]))
    return offers


def _overlap(goal: list[str], clause: str) -> int:
    """How many of the goal's words the clause has (by their first five letters)."""
    have = {w[:5] for w in tokens(clause)}
    return sum(w[:5] in have for w in goal)


def _key_answer(question: str, evidence: Evidence, details: str) -> Worded:
    free = evidence.transcript or ""
    offers = key_offers(free)
    if not offers:
        text = f'I can\'t tell: the speech names no key to press (it says "{free}").'
        return Worded(text, details, cannot_tell=True)
    goal = goal_words(question)
    said = "; ".join(f"press {k} {what}".strip() for k, what in offers)
    if not goal:
        return Worded(said[0].upper() + said[1:] + ".", details, evidence.transcript_certainty)
    ranked = sorted(offers, key=lambda o: -_overlap(goal, o[1]))
    best = ranked[0]
    if _overlap(goal, best[1]) == 0:
        text = f"I can't tell: the menu offers {said}, none about {' '.join(goal)}."
        return Worded(text, details, 0.0, guess=True)
    tied = [o for o in ranked if _overlap(goal, o[1]) == _overlap(goal, best[1])]
    text = f"Press {best[0]} {best[1]}".strip() + "."
    if len(tied) > 1:
        text = text.rstrip(".") + f" (or {', '.join(o[0] for o in tied[1:])}: it also says {said})."
        return Worded(text, details, 0.0, guess=True)
    return Worded(text, f"Evidence: the menu says {said}. {details}".strip(),
                  evidence.transcript_certainty)  # fmt: skip


YES_RE = re.compile(r"\b(yes|yeah|yep|yup|sure|certainly|of course|correct|right|okay|ok)\b")
NO_RE = re.compile(r"\b(no|nope|nah|not|never|don't|won't|can't)\b")


def _yes_no_answer(evidence: Evidence, details: str) -> Worded:
    free = evidence.transcript or ""
    text = free.lower()
    yes, no = YES_RE.search(text), NO_RE.search(text)
    if yes is None and no is None:
        return Worded(f'I can\'t tell: the speaker says neither yes nor no ("{free}").', details,
                      cannot_tell=True)  # fmt: skip
    first = min((m for m in (yes, no) if m is not None), key=lambda m: m.start())
    word = "Yes" if first is yes else "No"
    return Worded(f'{word}: the speaker says "{free}".', details, evidence.transcript_certainty)


NAME_SAID_RE = re.compile(
    r"\b(?:my name is|my name's|name is|this is|i am|i'm|it's|called|speaking with|ask for)"
    r"\s+((?:[A-Z][a-z'-]+)(?:\s+[A-Z][a-z'-]+)?)"
)


def _name_answer(evidence: Evidence, details: str) -> Worded:
    free = evidence.transcript or ""
    found = NAME_SAID_RE.search(free)
    if found is None:
        return Worded(f'I can\'t tell: no name is said (the speech reads "{free}").', details,
                      cannot_tell=True)  # fmt: skip
    return Worded(f"{found.group(1)}.", f'Evidence: the speech says "{free}". {details}'.strip(),
                  evidence.transcript_certainty)  # fmt: skip


_HOUR = "|".join(NUMBER_NAMES[n] for n in range(1, 13))
TIME_SAID_RE = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s*(?:a\.?\s?m\.?|p\.?\s?m\.?|o'clock)|\b\d{1,2}:\d{2}\b"
    rf"|\b(?:{_HOUR})(?:[\s-]+(?:thirty|fifteen|forty[\s-]five|o'clock))?\s*(?:a\.?m|p\.?m|o'clock)"
    r"|\bnoon\b|\bmidnight\b|\bhalf past \w+|\bquarter (?:past|to) \w+",
    re.I,
)


def _time_answer(evidence: Evidence, details: str) -> Worded:
    free = evidence.transcript or ""
    found = TIME_SAID_RE.search(free)
    if found is None:
        return Worded(f'I can\'t tell: no time is said (the speech reads "{free}").', details,
                      cannot_tell=True)  # fmt: skip
    return Worded(f"At {found.group(0).strip()}.", f'Evidence: the speech says "{free}". '
                  f"{details}".strip(), evidence.transcript_certainty)  # fmt: skip


def stt_missing(evidence: Evidence, state: str, details: str) -> Worded:
    """Speech-to-text did not read the recording: say so, of the tool, not of the recording."""
    why = {
        "off": "is switched off",
        "failed": "failed",
    }.get(state, "was not run")
    heard = ""
    if evidence.speech_seconds:
        heard = f" Voice activity finds {evidence.speech_seconds:.1f} s of speech in it."
    text = (
        f"I can't tell what is said: speech-to-text (transcribe), the tool that would hear the "
        f"words, {why}.{heard}"
    )
    return Worded(text, details, cannot_tell=True)


def answer_expected(
    expect: Expect | None, speech_asked: bool, question: str, evidence: Evidence,
    stt_state: str, details: str,
) -> Worded | None:  # fmt: skip
    """The answer to a question that expects a kind of answer, or about what is said when
    speech-to-text did not read the recording; None for the general answer in words.
    ``stt_state``: "off" (switched off), "failed", or "" (ran or not needed)."""
    if (expect is not None or speech_asked) and not evidence.transcribed:
        return stt_missing(evidence, stt_state, details)
    if expect is None:
        return None
    if not evidence.transcript and not evidence.span_words:
        return Worded("I can't tell: speech-to-text heard no words in the recording.", details,
                      cannot_tell=True)  # fmt: skip
    if expect in (Expect.NUMBER, Expect.DIGITS):
        return _digits_answer(expect, evidence, details)
    if expect is Expect.KEY:
        return _key_answer(question, evidence, details)
    if expect is Expect.YES_NO:
        return _yes_no_answer(evidence, details)
    if expect is Expect.NAME:
        return _name_answer(evidence, details)
    return _time_answer(evidence, details)
