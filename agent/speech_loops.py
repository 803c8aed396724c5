"""Whisper's repetition loops, cut: "1, 1, 0, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1," for five
digits reads "1, 1, 0, 9, 1" and is flagged as cut.

Whisper (tiny and base above all) sometimes repeats one word or a few words until its token
cap. What it said before the loop began is kept with one copy of the repeated words; the
repeats are dropped, so a count or an answer read from the text does not count them, and the
flag tells the answer and its calibration that the reading is not to be trusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LONGEST_UNIT = 4  # words in the longest repeated run looked for
# times a run of that many words must repeat at the end ("0, 0, 0, 0" may be a real number)
MIN_REPEATS = {1: 5, 2: 3, 3: 3, 4: 3}


@dataclass(frozen=True)
class LoopCut:
    text: str  # the reading without the repeats
    kept: int  # how many of the reading's words are kept (its first ``kept`` words)
    dropped: int  # how many repeated words were dropped (0: no loop)

    @property
    def cut(self) -> bool:
        return self.dropped > 0


def _key(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


def cut_loop(text: str) -> LoopCut:
    """The reading with a loop at its end cut to one copy of the repeated words: the
    shortest run of 1-4 words that repeats back to back at the end (4 times for one word, 3
    for more), a last unfinished copy included."""
    words = text.split()
    keys = [_key(w) for w in words]
    best: tuple[int, int] | None = None  # (where the loop starts, its unit's length)
    for unit in range(1, LONGEST_UNIT + 1):
        n = len(keys)
        if n < unit * MIN_REPEATS[unit]:
            continue
        # an unfinished last copy: the end may stop inside the unit
        for partial in range(unit):
            end = n - partial
            if partial and keys[end:] != keys[end - unit : end - unit + partial]:
                continue
            pattern = keys[end - unit : end]
            if not all(pattern):
                continue
            start = end - unit
            while start - unit >= 0 and keys[start - unit : start] == pattern:
                start -= unit
            repeats = (end - start) // unit
            if repeats >= MIN_REPEATS[unit] and (best is None or start < best[0]):
                best = (start, unit)
    if best is None:
        return LoopCut(text.strip(), len(words), 0)
    start, unit = best
    kept = start + unit
    cut = " ".join(words[:kept]).rstrip(",;:- ")
    return LoopCut(cut, kept, len(words) - kept)
