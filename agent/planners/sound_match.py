"""How well a named sound ("dog barking", "hen") fits the sound tagger's classes.

One rule for every question about sounds: a choice in "which sound", each sound of an
"A, then B" choice, the thing asked about in "is there a hen?" and in "when does the dog
bark?". A class fits a name by sentence similarity or shared words; broad AudioSet parents
(Animal, Vehicle ...) fit many names a little and count for less.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from agent.answer import Similarity, tokens

NOT_A_SOURCE = {"Silence"}
GENERIC_LABELS = {
    "Animal", "Wild animals", "Domestic animals, pets", "Livestock, farm animals, working animals",
    "Vehicle", "Motor vehicle (road)", "Music", "Musical instrument", "Inside, small room",
    "Inside, large room or hall", "Outside, rural or natural", "Outside, urban or manmade",
    "Environmental noise", "Sound effect", "Mechanisms", "Liquid", "Water", "Noise",
    "Speech", "Human voice",
}  # fmt: skip
# Parents that fit many names a little: for a sound a question names, they count for less too
# ("is there a hen?" is not answered by "Bird" or "Fowl")
NAMED_PARENTS = GENERIC_LABELS | {
    "Bird", "Fowl", "Insect", "Domestic sounds, home sounds", "Tools", "Alarm", "Engine",
    "Glass", "Wood", "Door", "Bell", "Clock", "Percussion", "Keyboard (musical)",
}  # fmt: skip
GENERIC_WEIGHT = 0.4
STOP = {"and", "or", "the", "of", "a"}


def stems(text: str, *, ing: bool = False) -> set[str]:
    """Words with a plural 's' dropped, so "birds" meets "Bird" (no stop words); ``ing``:
    an "-ing" dropped too, so "barking" meets "Bark" and "creaking" meets "Creak"."""
    out = set()
    for word in tokens(text):
        if ing and len(word) > 5 and word.endswith("ing"):
            word = word[:-3]
        elif len(word) > 3 and word.endswith("s"):
            word = word[:-1]
        out.add(word)
    return out - STOP


def specificity(label: str) -> float:
    return GENERIC_WEIGHT if label in GENERIC_LABELS else 1.0


def label_fit(
    names: Sequence[str],
    labels: Sequence[str],
    similarity: Similarity | None,
    *,
    named: bool = False,
) -> np.ndarray:
    """[names x labels] how well each class fits each name, 0..1.

    ``named``: the names are things a question asks about ("is there a hen", "dog, then
    rain"), matched more strictly: a shared word counts for the share of the name's words it
    covers ("washing machine" is not "Drum machine"), and a broad class counts in full only
    when the name is that class itself ("is there a bird?" is answered by "Bird", "is there
    a hen?" is not)."""
    if not names or not labels:
        return np.zeros((len(names), len(labels)))
    weight = np.array([specificity(label) for label in labels])
    parent = np.array([GENERIC_WEIGHT if lb in NAMED_PARENTS else 1.0 for lb in labels])
    label_stems = [stems(label, ing=named) for label in labels]
    out = np.zeros((len(names), len(labels)))
    for i, name in enumerate(names):
        if similarity is None:
            sims = np.zeros(len(labels))
        elif named:
            sims = synonym_similarity(name, labels, similarity)
        else:
            sims = np.clip(np.asarray(similarity(name, list(labels)), dtype=float), 0, 1)
        own = stems(name, ing=named)
        if named:
            lexical = np.array([len(own & ls) / max(1, len(own)) for ls in label_stems])
            itself = np.array([bool(ls) and ls <= own for ls in label_stems])
            per_label = np.where((sims >= 0.85) | itself, 1.0, parent)
        else:
            lexical = np.array([1.0 if own & ls else 0.0 for ls in label_stems])
            per_label = weight
        out[i] = np.maximum(sims * per_label, 0.9 * lexical * (per_label if named else 1.0))
    return out


def synonym_similarity(name: str, labels: Sequence[str], similarity: Similarity) -> np.ndarray:
    """Per class, the name's similarity to the class or to any of its synonyms: the
    tagger's class names list them after commas ("Cattle, bovinae"), and "cow" is far
    nearer "Cattle" alone than the pair (or than "Cowbell")."""
    parts = [[label] + [p.strip() for p in label.split(",") if p.strip()] for label in labels]
    flat = list(dict.fromkeys(p for group in parts for p in group))
    score = dict(zip(flat, np.asarray(similarity(name, flat), dtype=float), strict=True))
    return np.clip(np.array([max(score[p] for p in group) for group in parts]), 0, 1)


def choice_fit(labels: Sequence[tuple[str, float]], choices: Sequence[str],
               similarity: Similarity | None) -> list[float]:  # fmt: skip
    """Support per choice from a list of tagged classes: the best single match counts most,
    the weighted mean rewards consistent evidence. "Silence" names no source (zero-padded
    clips score it highly, and it would pull towards whichever choice sounds quietest)."""
    top = sorted((x for x in labels if x[0] not in NOT_A_SOURCE and x[1] > 0), key=lambda x: -x[1])
    top = top[:10]
    if not top:
        return [0.0] * len(choices)
    names = [label for label, _ in top]
    spec = np.array([specificity(label) for label in names])
    weights = np.array([s for _, s in top], dtype=float) * spec
    weights = weights / weights.sum()
    fit = label_fit(choices, names, similarity)
    strength = np.sqrt(weights / weights.max())
    return [float(0.6 * np.max(row * strength) + 0.4 * float(row @ weights)) for row in fit]


FIT_SPREAD = 0.15  # classes this far below a name's best fit still count, less and less


def name_weights(
    name: str, vocabulary: Sequence[str], similarity: Similarity | None
) -> dict[str, float]:
    """The classes that are evidence for ``name``, each with its weight 0..1.

    The classes that fit the name best among all the tagger knows count in full, those up to
    ``FIT_SPREAD`` below less and less, the rest not at all: "hen" is "Chicken, rooster",
    not "Duck" (0.55) nor the broad "Bird"; "bird" is "Bird" and its calls."""
    labels = list(dict.fromkeys(vocabulary))
    if not labels:
        return {}
    fit = label_fit([name], labels, similarity, named=True)[0]
    best = float(fit.max())
    if best <= 0:
        return {}
    relative = np.clip((fit - (best - FIT_SPREAD)) / FIT_SPREAD, 0.0, 1.0)
    return {lb: round(float(f * r), 4) for lb, f, r in zip(labels, fit, relative, strict=True)
            if r > 0}  # fmt: skip


def name_profile(
    weights: dict[str, float], frames: Sequence[Sequence[tuple[str, float]]]
) -> tuple[np.ndarray, list[str]]:
    """How strongly each frame holds the named sound (its best class's weight x score), and
    which class that is."""
    strength = np.zeros(len(frames))
    which = [""] * len(frames)
    for t, labels in enumerate(frames):
        for label, score in labels:
            value = weights.get(label, 0.0) * score
            if value > strength[t]:
                strength[t], which[t] = value, label
    return strength, which


@functools.lru_cache(maxsize=1)
def vocabulary() -> tuple[str, ...]:
    """Every class the sound tagger knows (empty when its data is not installed)."""
    try:
        from agent.local_models import yamnet

        return tuple(yamnet.class_names())
    except (ImportError, OSError):
        return ()


def group(name: str) -> frozenset[str]:
    """An ontology branch of the tagger's classes ("music", "animal" ...), or empty."""
    try:
        from agent.local_models import yamnet

        return yamnet.class_group(name)
    except (ImportError, OSError):
        return frozenset()


TRACK_PER_NAME = 6  # classes asked for per named sound
MAX_TRACKED = 40  # the sound_events tool's limit


def tracked_classes(names: Sequence[str], similarity: Similarity | None) -> list[str]:
    """The classes to follow over time for the sounds a question names (each name's best
    fitting classes, as ``name_weights`` weighs them)."""
    vocab = vocabulary()
    if not vocab or similarity is None:
        return []
    classes: list[str] = []
    for name in names:
        weights = name_weights(name, vocab, similarity)
        best = sorted(weights, key=lambda lb: -weights[lb])[:TRACK_PER_NAME]
        classes += [lb for lb in best if weights[lb] >= 0.1]
    return list(dict.fromkeys(classes))[:MAX_TRACKED]
