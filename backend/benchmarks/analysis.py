"""What a benchmark analysis shows, computed from its stored results (for ``bench analyse``
and the Benchmarks tab alike): Shapley values of the tools from the subsets' accuracies, the
ablation's mean and spread over seeds with each planner's text-only baseline, and accuracy
against cost with the Pareto front."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from backend.benchmarks import ConfigSummary, summarise
from backend.benchmarks.shapley import coalitions, permutation_shapley
from storage.benchmarks import BenchRunInfo, ResultRow


def subset_values(rows: Sequence[ResultRow]) -> dict[frozenset[str], float]:
    """v(S): the accuracy (0-1) of each tool set over its scored questions."""
    return {
        frozenset(s.config.get("tools") or ()): s.accuracy
        for s in summarise(rows)
        if s.accuracy is not None
    }


def attribution_result(info: BenchRunInfo, rows: Sequence[ResultRow]) -> dict[str, Any]:
    orderings = [tuple(o) for o in info.config["orderings"]]
    values = subset_values(rows)
    missing = [sorted(c) for c in coalitions(orderings) if c not in values]
    if missing:
        return {"complete": False, "missing_subsets": missing}
    estimates = permutation_shapley(
        orderings, lambda s: values[frozenset(s)], antithetic=bool(info.config.get("antithetic"))
    )
    players = info.config["players"]
    return {
        "complete": True,
        "players": players,
        "shapley": {
            p: {"value": e.value, "se": e.se, "samples": e.samples} for p, e in estimates.items()
        },
        "v_empty": values[frozenset()],
        "v_full": values[frozenset(players)],
        "subsets_run": len(values),
    }


def ablation_result(summaries: Sequence[ConfigSummary]) -> dict[str, Any]:
    """Mean and spread over seeds per (planner, strategy, tool set)."""
    groups: dict[tuple[str, str, bool], list[ConfigSummary]] = defaultdict(list)
    for s in summaries:
        text_only = not s.config.get("tools")
        groups[(s.config["planner"], s.config["strategy"], text_only)].append(s)
    rows = []
    for (planner, strategy, text_only), members in groups.items():
        accs = [100 * m.accuracy for m in members if m.accuracy is not None]
        rows.append(
            {
                "planner": planner,
                "strategy": strategy,
                "text_only": text_only,
                "seeds": len(members),
                "mean": statistics.mean(accs) if accs else None,
                "sd": statistics.stdev(accs) if len(accs) > 1 else 0.0,
                "min": min(accs) if accs else None,
                "max": max(accs) if accs else None,
                "mean_cost": statistics.mean(m.mean_cost for m in members),
                "mean_wall_s": statistics.mean(m.mean_wall_s for m in members),
                "mean_calls": statistics.mean(m.mean_calls for m in members),
            }
        )
    return {"configurations": rows}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other beats: lower or equal cost and higher or equal
    accuracy, one of them strictly. Sorted by cost."""
    front = []
    for i, (cost, acc) in enumerate(points):
        beaten = any(
            (c <= cost and a >= acc) and (c < cost or a > acc)
            for j, (c, a) in enumerate(points)
            if j != i
        )
        if not beaten:
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


def cost_points(summaries: Sequence[ConfigSummary]) -> dict[str, Any]:
    """Accuracy against cost per configuration; when nothing cost money (offline), against
    the wall time per question instead (said in ``axis``)."""
    scored = [s for s in summaries if s.accuracy is not None]
    paid = any(s.mean_cost > 0 for s in scored)
    axis = "cost per question ($)" if paid else "wall time per question (s)"
    points = [(s.mean_cost if paid else s.mean_wall_s, 100 * (s.accuracy or 0)) for s in scored]
    one_agent = len({(s.config.get("planner"), s.config.get("strategy")) for s in scored}) == 1
    seen = sorted({t for s in scored for t in s.config.get("tools") or ()})
    return {
        "axis": axis,
        # subsets of tools with one planner and strategy (a Shapley sweep): name the tools
        "labels": [tools_label(s, seen) if one_agent else s.label for s in scored],
        "keys": [s.key for s in scored],
        "points": points,
        "front": pareto_front(points),
    }


def tools_label(summary: ConfigSummary, seen: Sequence[str]) -> str:
    """The tools of one configuration in few words: those it has, or, when it has most of
    the tools ``seen`` in the run, "all but" those it lacks."""
    tools = sorted(summary.config.get("tools") or ())
    if not tools:
        return "no tools"
    lacks = [t for t in seen if t not in tools]
    if not lacks:
        return "all tools"
    return f"all but {', '.join(lacks)}" if len(lacks) < len(tools) else ", ".join(tools)


def analysis_of(info: BenchRunInfo, rows: Sequence[ResultRow]) -> dict[str, Any]:
    if info.kind == "attribution":
        return {"bench_run": info.id, "kind": info.kind, **attribution_result(info, rows)}
    if info.kind == "ablation":
        return {"bench_run": info.id, "kind": info.kind, **ablation_result(summarise(rows))}
    return {"bench_run": info.id, "kind": info.kind}
