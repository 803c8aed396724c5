"""Shapley values of players (tools) in a cooperative game (the accuracy a tool set reaches).

``exact_shapley`` enumerates every coalition (2^n of them): the reference for small games.
``permutation_shapley`` is the Monte Carlo estimator of Castro, Gómez and Tejada (2009): for
each sampled ordering of the players, a player's marginal contribution is the value its
arrival adds to the players before it; its Shapley value is the mean over orderings, with
standard error sd / sqrt(m). With antithetic sampling each ordering comes with its reverse,
and a pair's mean is one sample (the two halves are not independent). The coalitions an
estimate needs are the orderings' prefixes (``coalitions``), known before any is evaluated,
so all of them can be run at once.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

Coalition = frozenset[Hashable]
Value = Callable[[Coalition], float]


@dataclass(frozen=True)
class Estimate:
    value: float
    se: float
    samples: int


def exact_shapley(players: Sequence[Hashable], value: Value) -> dict[Hashable, float]:
    n = len(players)
    out = {}
    for player in players:
        others = [p for p in players if p != player]
        total = 0.0
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for members in itertools.combinations(others, size):
                coalition = frozenset(members)
                total += weight * (value(coalition | {player}) - value(coalition))
        out[player] = total
    return out


def sample_orderings(
    players: Sequence[Hashable], count: int, seed: int = 0, *, antithetic: bool = False
) -> list[tuple[Hashable, ...]]:
    """``count`` orderings (with antithetic: count // 2 orderings, each then reversed)."""
    rng = random.Random(seed)
    orderings: list[tuple[Hashable, ...]] = []
    draws = count // 2 if antithetic else count
    for _ in range(max(1, draws)):
        order = list(players)
        rng.shuffle(order)
        orderings.append(tuple(order))
        if antithetic:
            orderings.append(tuple(reversed(order)))
    return orderings


def all_orderings(players: Sequence[Hashable]) -> list[tuple[Hashable, ...]]:
    return list(itertools.permutations(players))


def coalitions(orderings: Sequence[Sequence[Hashable]]) -> list[Coalition]:
    """Every coalition the orderings pass through (each prefix), empty and full included."""
    seen: dict[Coalition, None] = {}
    for order in orderings:
        for size in range(len(order) + 1):
            seen.setdefault(frozenset(order[:size]), None)
    return list(seen)


def marginals(orderings: Sequence[Sequence[Hashable]], value: Value) -> dict[Hashable, list[float]]:
    out: dict[Hashable, list[float]] = {}
    for order in orderings:
        before = frozenset()
        worth = value(before)
        for player in order:
            after = before | {player}
            gained = value(after)
            out.setdefault(player, []).append(gained - worth)
            before, worth = after, gained
    return out


def permutation_shapley(
    orderings: Sequence[Sequence[Hashable]], value: Value, *, antithetic: bool = False
) -> dict[Hashable, Estimate]:
    out = {}
    for player, deltas in marginals(orderings, value).items():
        samples = (
            [(a + b) / 2 for a, b in zip(deltas[::2], deltas[1::2], strict=False)]
            if antithetic
            else deltas
        )
        mean = statistics.mean(samples)
        se = statistics.stdev(samples) / math.sqrt(len(samples)) if len(samples) > 1 else 0.0
        out[player] = Estimate(mean, se, len(samples))
    return out
