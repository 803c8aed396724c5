"""Numbers said or written as words: "seven" and "7" are the same answer.

Used wherever a number meets text: the offline planner's choices, transcripts, counts and
answers, and whisper's forced reading of an option ("four" is also tried as " 4").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.answer import tokens

NUMBER_WORDS = {
    "zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20,
}  # fmt: skip
NUMBER_NAMES = {v: k for k, v in NUMBER_WORDS.items() if k != "oh"}  # 3 -> "three"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def number_value(text: str) -> int | None:
    """The number a short answer names ("7", "seven"), else None."""
    words = tokens(text)
    if len(words) != 1:
        return None
    word = words[0]
    if word.isdigit():
        return int(word)
    return NUMBER_WORDS.get(word)


def leading_number(text: str, *, word_first: bool = True) -> float | None:
    """The first number written in digits anywhere in ``text``, else the number a short
    answer names, else (``word_first``) the number word it starts with ("three times",
    "two speakers")."""
    found = _NUMBER.search(text)
    if found:
        return float(found.group())
    value = number_value(text)
    if value is not None:
        return float(value)
    words = tokens(text)
    if word_first and words and words[0] in NUMBER_WORDS:
        return float(NUMBER_WORDS[words[0]])
    return None


def canonical(word: str) -> str:
    """One spelling per number up to twenty ("7" -> "seven", "oh" -> "zero"); other words
    as they are."""
    if word.isdigit() and int(word) <= 20:
        return NUMBER_NAMES[int(word)]
    return "zero" if word == "oh" else word


def digits_as_words(words: Sequence[str]) -> list[str]:
    """Digits up to twenty spelled out, other words as they are ("oh" stays: in running
    speech it is rarely a zero)."""
    return [NUMBER_NAMES[int(w)] if w.isdigit() and int(w) <= 20 else w for w in words]


def is_number_word(word: str) -> bool:
    return word.isdigit() or word in NUMBER_WORDS


def stray_words(words: Sequence[str]) -> list[str]:
    """The words that are not numbers in a reading at least half of whose words are
    numbers: there a word that is not one is a number misheard ("please five" for "three
    five", "five, one, be" for "five, one, three"). None in a reading of one word, without
    numbers, or mostly of other words (then the words are what they say)."""
    numbers = sum(is_number_word(w) for w in words)
    if len(words) < 2 or not numbers or 2 * numbers < len(words):
        return []
    return [w for w in words if not is_number_word(w)]


def count_word(n: int) -> str:
    """How a count reads in an answer: "no", "one", "two" ... (digits above twenty)."""
    return NUMBER_NAMES.get(n, str(n)) if n else "no"
