"""The Monte Carlo permutation Shapley estimator against exact values on small games."""

from __future__ import annotations

import pytest

from backend.benchmarks.analysis import pareto_front
from backend.benchmarks.shapley import (
    all_orderings,
    coalitions,
    exact_shapley,
    permutation_shapley,
    sample_orderings,
)

PLAYERS = ("asr", "vad", "events", "music")


def game(coalition: frozenset) -> float:
    """Accuracy of a tool set: asr alone is worth most; events and music overlap (either one
    gives the music questions); vad helps only together with asr."""
    value = 0.25
    value += 0.30 * ("asr" in coalition)
    value += 0.20 * bool({"events", "music"} & coalition)
    value += 0.10 * ({"asr", "vad"} <= coalition)
    return value


def test_exact_values_are_efficient_and_symmetric() -> None:
    exact = exact_shapley(PLAYERS, game)
    assert sum(exact.values()) == pytest.approx(game(frozenset(PLAYERS)) - game(frozenset()))
    assert exact["events"] == pytest.approx(exact["music"]) == pytest.approx(0.10)
    assert exact["asr"] == pytest.approx(0.35) and exact["vad"] == pytest.approx(0.05)


def test_every_ordering_gives_the_exact_values() -> None:
    estimates = permutation_shapley(all_orderings(PLAYERS), game)
    for player, exact in exact_shapley(PLAYERS, game).items():
        assert estimates[player].value == pytest.approx(exact)


@pytest.mark.parametrize("antithetic", [False, True])
def test_sampled_orderings_land_within_their_standard_errors(antithetic: bool) -> None:
    exact = exact_shapley(PLAYERS, game)
    orderings = sample_orderings(PLAYERS, 60, seed=1, antithetic=antithetic)
    estimates = permutation_shapley(orderings, game, antithetic=antithetic)
    for player, estimate in estimates.items():
        assert estimate.samples == (30 if antithetic else 60)
        assert abs(estimate.value - exact[player]) <= 4 * estimate.se + 1e-12
    # each ordering's contributions add up to v(all) - v(none), so the estimates do too
    total = sum(e.value for e in estimates.values())
    assert total == pytest.approx(game(frozenset(PLAYERS)) - game(frozenset()))


def test_the_coalitions_needed_are_the_orderings_prefixes() -> None:
    orderings = [("a", "b", "c"), ("c", "b", "a")]
    needed = set(coalitions(orderings))
    assert needed == {frozenset(), frozenset("a"), frozenset("ab"), frozenset("abc"),
                      frozenset("c"), frozenset("bc")}  # fmt: skip
    assert len(coalitions(all_orderings("abc"))) == 8  # every subset


def test_estimator_error_shrinks_with_more_orderings() -> None:
    exact = exact_shapley(PLAYERS, game)
    errors = []
    for count in (8, 200):
        runs = [permutation_shapley(sample_orderings(PLAYERS, count, seed=s), game)
                for s in range(10)]  # fmt: skip
        errors.append(sum(abs(r[p].value - exact[p]) for r in runs for p in PLAYERS))
    assert errors[1] < errors[0]


def test_pareto_front() -> None:
    points = [(0.0, 50.0), (1.0, 70.0), (2.0, 65.0), (0.5, 50.0), (3.0, 80.0)]
    assert pareto_front(points) == [0, 1, 4]
    assert pareto_front([(1.0, 1.0), (1.0, 1.0)]) == [0, 1]  # ties beat nobody


def test_points_of_a_tool_sweep_are_named_by_their_tools() -> None:
    from backend.benchmarks import ConfigSummary
    from backend.benchmarks.analysis import cost_points

    def summary(tools: tuple[str, ...], accuracy: float) -> ConfigSummary:
        config = {"planner": "offline", "strategy": "react", "tools": list(tools)}
        return ConfigSummary(key=str(tools), config=config, accuracy=accuracy, label="x")

    sweep = [summary(("a", "b", "c", "d"), 0.8), summary(("a", "b", "c"), 0.7),
             summary(("a",), 0.5), summary((), 0.3)]  # fmt: skip
    labels = cost_points(sweep)["labels"]
    assert labels == ["all tools", "all but d", "a", "no tools"]
