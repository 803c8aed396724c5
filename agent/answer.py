"""Answer parsing and mapping a free-text answer onto the given choices.

Rules are tried in order and the one that matched is recorded on the answer event:
``letter`` ("B", "(B)", "Option B"), ``exact`` (the choice text, ignoring case and
punctuation), ``token`` (the MMAU/MMAR scoring rule), ``embedding`` (sentence similarity),
``overlap`` (shared words, when no embedder is available) and ``none``.

An answer that names no choice ("unknown", "I cannot tell which") still gets the nearest
choice by similarity, but as a guess (``ChoiceMatch.guess``): it shares no word with any
choice and is not close to the one picked (similarity under ``GUESS_BELOW``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Similarity = Callable[[str, list[str]], np.ndarray]

_ANSWER_TAG = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S | re.I)
_ANSWER_LINE = re.compile(r"(?:final answer|answer)\s*[:：]\s*(.+)", re.I)
_LETTER_FORMS = (
    re.compile(r"^\(?([A-Z])\)?[.):]?$"),
    re.compile(r"^(?:option|choice|answer)\s*[:\-]?\s*\(?([A-Z])\)?[.):]?$", re.I),
    re.compile(r"^\(?([A-Z])[.)]\s+.+$"),
)
_WORD = re.compile(r"\b\w+\b")
GUESS_BELOW = 0.5  # sentence similarity under which a wordless match is only a guess
_FILLER = frozenset({"a", "an", "the", "of", "is", "it", "in", "on", "and", "or", "to"})


@dataclass(frozen=True)
class ChoiceMatch:
    choice: str | None
    rule: str  # letter | exact | token | embedding | overlap | none
    score: float | None = None
    guess: bool = False  # the answer named no choice: the nearest one, as a best guess

    def confidence(self, given: float | None) -> float | None:
        """A choice picked for an answer that named none is no surer than its similarity."""
        if not self.guess or self.score is None:
            return given
        return round(min(1.0 if given is None else given, max(0.0, self.score)), 3)


def letter(index: int) -> str:
    return string.ascii_uppercase[index]


def format_choices(choices: Sequence[str]) -> str:
    return "\n".join(f"({letter(i)}) {c}" for i, c in enumerate(choices))


def extract_answer(text: str) -> str:
    """The answer part of a planner's final text: ``<answer>``, an "Answer:" line, or all."""
    tags = _ANSWER_TAG.findall(text)
    if tags:
        return tags[-1].strip()
    lines = _ANSWER_LINE.findall(text)
    if lines:
        return lines[-1].strip()
    return text.strip()


def strip_answer(text: str) -> str:
    """The reasoning around an answer, without its ``<answer>...</answer>`` tag."""
    return _ANSWER_TAG.sub("", text).strip()


def says_it_cannot_tell(text: str) -> bool:
    """An answer in words that begins "I can't tell": shown as it is, never as a guess."""
    return text.strip().lower().replace("\u2019", "'").startswith("i can't tell")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _content_words(text: str) -> set[str]:
    return set(tokens(text)) - _FILLER


def _normalise(text: str) -> str:
    return " ".join(tokens(text))


def token_rule_correct(prediction: str, answer: str, choices: Sequence[str]) -> bool:
    """The MMAU/MMAR accuracy rule: every answer token present, no wrong-only token present."""
    pred = set(tokens(prediction))
    answer_tokens = set(tokens(answer))
    wrong_only: set[str] = set()
    for choice in choices:
        if choice != answer:
            wrong_only |= set(tokens(choice))
    wrong_only -= answer_tokens
    return answer_tokens <= pred and not (wrong_only & pred)


def match_choice(
    text: str, choices: Sequence[str], similarity: Similarity | None = None
) -> ChoiceMatch:
    if not choices:
        return ChoiceMatch(None, "none")
    answer = extract_answer(text)
    norm = _normalise(answer)
    for choice in choices:  # exact text first: a choice may itself be a letter ("A", "B")
        if norm == _normalise(choice):
            return ChoiceMatch(choice, "exact")
    stripped = answer.strip().strip("*").strip()
    for form in _LETTER_FORMS:
        found = form.match(stripped)
        if found:
            index = string.ascii_uppercase.index(found.group(1).upper())
            if index < len(choices):
                # "(B) text" must agree with choice B's text when both are given.
                rest = stripped[found.end(1) :].strip(" .):")
                if not rest or _normalise(rest) == _normalise(choices[index]):
                    return ChoiceMatch(choices[index], "letter")
    token_hits = [c for c in choices if token_rule_correct(answer, c, choices)]
    if len(token_hits) == 1:
        return ChoiceMatch(token_hits[0], "token")
    if not norm:
        return ChoiceMatch(None, "none")
    if similarity is not None:
        scores = np.asarray(similarity(answer, list(choices)), dtype=float)
        best = int(np.argmax(scores))
        score = float(scores[best])
        named = _content_words(answer) & set().union(*(_content_words(c) for c in choices))
        guess = not named and score < GUESS_BELOW
        return ChoiceMatch(choices[best], "embedding", score, guess=guess)
    pred = set(tokens(answer))
    overlaps = [len(pred & set(tokens(c))) / max(1, len(set(tokens(c)))) for c in choices]
    best = int(np.argmax(overlaps))
    if overlaps[best] > 0:
        return ChoiceMatch(choices[best], "overlap", overlaps[best])
    return ChoiceMatch(None, "none")
