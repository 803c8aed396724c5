"""Fit and check the speaker counter (``agent.local_models.speakers``) on composed items.

    python -m bench.speakers_tune --fit --seed 0 --n 240    # fit weights + threshold on seed 0
    python -m bench.speakers_tune --seed 1 --seed 2 --n 80  # check the module's constants

Items are the dev sets' ``speakers`` items (``bench.devsets.Builder.speakers``: one voice or two
taking turns; six FSDD speakers and three LibriSpeech readers), built for each seed. ``--fit``
fits a logistic model of "different voices" on pairs of segments inside the seed's items
(where voice activity found one segment per turn, so each segment's speaker is known), then
picks the clustering threshold with the best count accuracy on the same items, and prints
both to be copied into the module. Without ``--fit`` it reports the count accuracy (one /
two speakers, and how many answers were unsure) of the module's constants.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from agent.local_models import speakers
from agent.local_models.voice_features import PAIR_NAMES, Segment, pair_features
from bench.devsets import DEFAULT_DATA, Builder, load_sources


def items_for(data: Path, seed: int, n: int) -> list[tuple[dict, list[Segment]]]:
    """Each item with its segments' voice features."""
    from agent.audio import load_samples

    out = Path(tempfile.mkdtemp(prefix="speakers-tune-"))
    builder = Builder(load_sources(data), out, seed)
    builder.speakers(n)
    result = []
    for item in builder.items:
        samples = load_samples(out / item["audio_id"])
        spans = speakers.speech_spans(samples)
        result.append((item, speakers.segments_of(samples, spans)))
    return result


def truth(item: dict) -> int:
    return len(set(item["sequence"]))


def labelled_pairs(items: list[tuple[dict, list[Segment]]]) -> tuple[np.ndarray, np.ndarray]:
    """Pair differences and same (0) / different (1), from items whose segments map one to
    one onto their turns."""
    x, y = [], []
    for item, segments in items:
        turns = item["sequence"]
        if len(segments) != len(turns):
            continue
        for i in range(len(segments)):
            for j in range(i + 1, len(segments)):
                x.append(pair_features(segments[i], segments[j]))
                y.append(int(turns[i] != turns[j]))
    return np.array(x), np.array(y)


def accuracy(items, threshold: float) -> tuple[float, dict[str, float], int]:
    right: dict[str, list[bool]] = {}
    unsure = 0
    for item, segments in items:
        found, doubt = speakers.group(segments, threshold)
        unsure += doubt
        right.setdefault(item["sub-category"], []).append(len(found) == truth(item))
    every = [v for vs in right.values() for v in vs]
    return float(np.mean(every)), {k: float(np.mean(v)) for k, v in right.items()}, unsure


def fit(items) -> None:
    from sklearn.linear_model import LogisticRegression

    x, y = labelled_pairs(items)
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000).fit(x, y)
    speakers.WEIGHTS = model.coef_[0]
    speakers.BIAS = float(model.intercept_[0])
    print(f"{len(y)} pairs ({int(y.sum())} different voices), pair accuracy "
          f"{model.score(x, y):.0%}")  # fmt: skip
    print("WEIGHTS =", np.round(model.coef_[0], 2).tolist(), " # ", ", ".join(PAIR_NAMES))
    print("BIAS =", round(float(model.intercept_[0]), 2))
    best = max(np.arange(0.3, 0.81, 0.05), key=lambda t: (accuracy(items, t)[0], -abs(t - 0.5)))
    print(f"THRESHOLD = {best:.2f}")
    for t in np.arange(0.3, 0.81, 0.05):
        acc, per, unsure = accuracy(items, t)
        print(f"  {t:.2f}: {acc:.0%} {per} unsure {unsure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, action="append", default=None)
    parser.add_argument("--n", type=int, default=80)
    parser.add_argument("--fit", action="store_true")
    args = parser.parse_args()
    for seed in args.seed or [0]:
        items = items_for(args.data, seed, args.n)
        if args.fit:
            fit(items)
        acc, per, unsure = accuracy(items, speakers.THRESHOLD)
        shown = ", ".join(f"{k} {v:.0%}" for k, v in sorted(per.items()))
        print(f"seed {seed}: {acc:.0%} of {len(items)} ({shown}); unsure {unsure}")


if __name__ == "__main__":
    main()
