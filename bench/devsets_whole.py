"""The order of whole recordings: two or three ESC-50 clips one after another, as they are.

Each clip keeps its own silences and background (a dog clip is barks and pauses, a rain clip
is rain all through), 5 s each, 0.5 s of silence between them. The question asks for the
order; the four choices are sequences "A, then B" (or "A, then B, then C"): the right one,
and distractors that swap the order or swap in a third sound that is not there (some do
both). A third sound is never one a person could not tell from a present one by ear
(``CONFUSABLE``: hen and rooster, rain and thunderstorm ...).
"""

from __future__ import annotations

import random

import numpy as np

from bench.compose import ItemSink, silence

GAP_S = 0.5
ORDER_WHOLE_Q = [
    "In what order are the sounds heard?",
    "Which sequence of sounds matches the recording?",
    "What do you hear, in order?",
    "Which comes first, and what follows?",
    "Put the sounds in the order they occur.",
]
# ESC-50 classes a listener could mistake for one another: never a distractor for each other
CONFUSABLE = [
    {"hen", "rooster"}, {"rain", "thunderstorm", "water drops"}, {"crickets", "insects"},
    {"sea waves", "wind"}, {"airplane", "helicopter"}, {"engine", "train"},
    {"pouring water", "water drops", "toilet flush"}, {"clock tick", "clock alarm"},
    {"hand saw", "chainsaw"}, {"door wood knock", "door wood creaks"},
    {"keyboard typing", "mouse click"}, {"chirping birds", "crow"},
]  # fmt: skip


def confusable(a: str, b: str) -> bool:
    return any(a in group and b in group for group in CONFUSABLE)


def then(names: list[str]) -> str:
    return ", then ".join(names)


def distractors(names: list[str], pool: list[str], rng: random.Random) -> list[list[str]]:
    """Three wrong sequences: the order swapped, a third sound swapped in, and both."""
    others = [p for p in pool if p not in names and not any(confusable(p, n) for n in names)]
    third = rng.sample(others, 3)
    if len(names) == 2:
        a, b = names
        swapped = [b, a]
        swapped_in = rng.choice([[a, third[0]], [third[0], b]])
        both = rng.choice([[b, third[1]], [third[1], a]])
        return [swapped, swapped_in, both]
    a, b, c = names
    swapped = rng.choice([[b, a, c], [a, c, b], [c, b, a]])
    k = rng.randrange(3)
    swapped_in = [third[0] if i == k else n for i, n in enumerate(names)]
    both = [third[1] if i == k else n for i, n in enumerate(reversed(names))]
    return [swapped, swapped_in, both]


def order_whole(builder: ItemSink, n: int, seed: int) -> None:
    """``n`` items, pairs and triples alternating."""
    rng = random.Random(seed * 7919 + 17)  # its own stream: other sets stay as they were
    pool = builder.esc_pool()
    by_name = dict(builder.src.esc)
    for i in range(n):
        k = 2 if i % 2 == 0 else 3
        names: list[str] = []
        while len(names) < k:
            name = rng.choice(pool)
            if name not in names and not any(confusable(name, m) for m in names):
                names.append(name)
        parts: list[np.ndarray] = []
        for j, name in enumerate(names):
            parts.append(by_name[name])
            if j < k - 1:
                parts.append(silence(GAP_S))
        audio = np.concatenate(parts).astype(np.float32)
        choices = [then(names), *(then(d) for d in distractors(names, pool, rng))]
        rng.shuffle(choices)
        question = rng.choice(ORDER_WHOLE_Q)
        builder.add("order_whole", "pair" if k == 2 else "triple", audio, question, choices,
                    then(names), "sound", sequence=names)  # fmt: skip
