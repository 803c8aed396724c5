"""Choices that name sounds in a row ("airplane, then dog"), scored by where in the recording
the evidence for each sound lies.

Each sound a choice names is matched to the tagger's classes as a "which sound" choice is
(``sound_match.name_weights``), window by window, giving it a strength over time. A choice
of k sounds splits the recording into k stretches in its order; its support is, for the best
split, how much of each sound's evidence falls in its own stretch, times how surely the
sound is there at all. A sound found nowhere gives its choice no support; the same sounds in
the other order get little, since their evidence lies in the wrong stretches. Whole
recordings with their own silences work alike: a pause inside a stretch only lowers nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from agent.answer import Similarity
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_presence import SOUND_YES, frames_of, peak, spans_above, vocabulary
from agent.planners.offline_timeline import Finding
from agent.planners.question_focus import choice_sequence
from agent.planners.sound_match import name_profile, name_weights

FOUND_AT = SOUND_YES  # a sound whose strongest windows reach this is surely there
NOT_FOUND = 0.05  # how much a sound found nowhere still counts (the others still order it)


def _best_split(profiles: list[np.ndarray]) -> tuple[float, list[int]]:
    """The split of the windows into len(profiles) stretches, in order, that puts the most of
    each profile's mass into its own stretch: (mean share, stretch starts)."""
    k, n = len(profiles), len(profiles[0])
    if k == 1:
        return 1.0, [0]
    sums = [np.concatenate([[0.0], np.cumsum(p)]) for p in profiles]
    totals = [float(s[-1]) or 1e-9 for s in sums]
    best, best_cuts = -1.0, [0]
    for cuts in itertools.combinations(range(1, n), k - 1):
        edges = (0, *cuts, n)
        share = sum(
            (sums[i][edges[i + 1]] - sums[i][edges[i]]) / totals[i] for i in range(k)
        )  # fmt: skip
        if share > best:
            best, best_cuts = share, list(edges[:-1])
    return best / k, best_cuts


def sequence_scores(
    choices: Sequence[str], evidence: Evidence, similarity: Similarity | None
) -> Finding | None:
    """Support per "A, then B" choice from the tagger's windows; None without them."""
    frames, times = frames_of(evidence)
    if len(frames) < 2:
        return None
    sequences = [choice_sequence(c) for c in choices]
    names = list(dict.fromkeys(n for seq in sequences for n in seq))
    vocab = vocabulary() or sorted({lb for labels in frames for lb, _ in labels})
    profiles: dict[str, np.ndarray] = {}
    classes: dict[str, str] = {}
    for name in names:
        profile, which = name_profile(name_weights(name, vocab, similarity), frames)
        profiles[name] = profile
        classes[name] = which[int(np.argmax(profile))] if profile.max() > 0 else ""
    found = {n: float(min(1.0, max(NOT_FOUND, peak(p) / FOUND_AT))) for n, p in profiles.items()}
    scores = []
    for seq in sequences:
        share, _ = _best_split([profiles[n] for n in seq])
        sure = float(np.prod([found[n] for n in seq])) ** (1 / len(seq))
        scores.append(round(share * sure, 4))
    where = []
    for name in names:
        p = profiles[name]
        if peak(p) < 0.5 * FOUND_AT:
            where.append(f"{name} not found (strongest {peak(p):.2f})")
            continue
        spans = spans_above(p, times, 0.5 * float(p.max()))
        shown = ", ".join(f"{a:.1f}–{b:.1f} s" for a, b in spans[:3])
        where.append(f"{name} at {shown} ({classes[name]} up to {float(p.max()):.2f})")
    reason = "where each sound is heard: " + "; ".join(where)
    best = int(np.argmax(scores))
    answer = f"{choices[best]} ({reason})." if scores[best] > 0 else ""
    return Finding(scores, reason, answer, decided=max(scores) > 0)
