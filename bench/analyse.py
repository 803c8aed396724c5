"""``python -m bench analyse``: tool attribution (Shapley), planner/strategy ablation, accuracy
against cost; ``bench list`` and ``bench report``.

- ``attribution``: Monte Carlo permutation Shapley values of the tools
  (``backend.benchmarks.shapley``) for one planner and strategy. The coalitions the sampled
  orderings pass through are run as configurations of one benchmark run (kind
  ``attribution``), each tool subset on every question; identical runs are never repeated
  and tool outputs come from the tool cache, so a subset adds only the planner's work. v(S)
  is the accuracy (0-1) with tool set S.
- ``ablation``: every planner x strategy over N seeds, and per planner its text-only
  baseline (no tools) over the same seeds; mean and spread per configuration.
- Both write ``analysis.json`` and PNG plots (``bench.plots``) into ``--out``, and draw the
  accuracy against the cost per question with the Pareto front.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.registry import local_tool_names
from agent.strategies import default_strategy, strategy_names
from backend.benchmarks import summarise
from backend.benchmarks.analysis import (
    ablation_result,
    analysis_of,
    attribution_result,
    cost_points,
)
from backend.benchmarks.shapley import coalitions, sample_orderings
from bench import run_command
from bench.plan import Config
from bench.report import build_report, markdown, questions_csv
from bench.runner import Bench
from storage.benchmarks import BenchRunInfo, ResultRow


def add_parsers(commands: Any) -> None:
    analyse = commands.add_parser("analyse", help="Shapley attribution, ablations, plots")
    kinds = analyse.add_subparsers(dest="analysis", required=True)

    attribution = kinds.add_parser("attribution", help="Shapley values of the tools")
    run_command.add_questions(attribution)
    run_command.add_common(attribution)
    attribution.add_argument("--planner", default="offline")
    attribution.add_argument("--strategy", default=default_strategy())
    attribution.add_argument(
        "--tools",
        default=",".join(local_tool_names()),
        help="the players (default: the local tools)",
    )
    attribution.add_argument("--permutations", type=int, default=20)
    attribution.add_argument(
        "--antithetic",
        action="store_true",
        help="each sampled ordering also reversed (lower variance)",
    )
    attribution.add_argument("--seed", type=int, default=0, help="seed of the sampled orderings")
    attribution.add_argument(
        "--run-seed", type=int, default=0, help="seed of the runs (the same for every subset)"
    )
    attribution.add_argument("--out", type=Path, default=None)

    ablation = kinds.add_parser("ablation", help="planners x strategies over seeds")
    run_command.add_questions(ablation)
    run_command.add_common(ablation)
    ablation.add_argument("--planners", default="offline")
    ablation.add_argument("--strategies", default=",".join(strategy_names()))
    ablation.add_argument("--tools", default=None, help="default: every available tool")
    ablation.add_argument("--seeds", type=int, default=3)
    ablation.add_argument(
        "--shuffle-choices",
        action="store_true",
        help="each seed shows the choices in its own order",
    )
    ablation.add_argument("--out", type=Path, default=None)

    plots = kinds.add_parser("plots", help="the plots of a stored analysis or run")
    plots.add_argument("--bench", required=True, help="benchmark run id (bench list)")
    plots.add_argument("--out", type=Path, required=True)
    run_command.add_common(plots)


# ---------------------------------------------------------------------------- commands


def _finish(
    args: argparse.Namespace,
    bench: Bench,
    info: BenchRunInfo,
    result: dict[str, Any],
    rows: list[ResultRow],
) -> None:
    from bench import plots

    result["pareto"] = cost_points(summarise(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "analysis.json").write_text(json.dumps(result, indent=1, default=str))
        report = build_report(info, rows, app_url=args.app_url)
        (args.out / "report.md").write_text(markdown(report))
        (args.out / "questions.csv").write_text(questions_csv(rows, info.id, args.app_url))
        result["plots"] = [str(p) for p in plots.write_all(args.out, info, rows, result)]
    print(json.dumps(result, indent=1, default=str))


def _complete(
    args: argparse.Namespace,
    bench: Bench,
    driver: Any,
    info: BenchRunInfo,
    items: list[Any],
    configs: list[Config],
    analysis: Callable[[BenchRunInfo, list[ResultRow]], dict[str, Any]],
) -> dict[str, Any]:
    """Run what the analysis still lacks, then its result (``analysis`` of the stored rows,
    with the runs' counts) printed and written like every analysis's."""
    done = bench.complete(
        info,
        items,
        configs,
        run_command.executor_factory(args, driver),
        judge=args.judge,
        quiet=args.quiet,
    )
    info = bench.records.get(info.id) or info
    result = {
        "bench_run": info.id,
        "kind": info.kind,
        **analysis(info, done.rows),
        "runs": {
            "ran": done.ran,
            "reused": done.reused,
            "planned": len(done.rows),
            "seconds": round(done.seconds, 1),
        },
    }
    _finish(args, bench, info, result, done.rows)
    return result


def attribution(args: argparse.Namespace, registry: Any = None) -> dict[str, Any]:
    benchmark, items = run_command.load(args)
    driver = run_command.open_driver(args, registry)
    try:
        players = [t.strip() for t in args.tools.split(",") if t.strip()]
        run_command.check(driver.registry, [args.planner], players, args.judge)
        orderings = sample_orderings(
            players, args.permutations, args.seed, antithetic=args.antithetic
        )
        configs = [
            Config(args.planner, args.strategy, tuple(sorted(c)), args.run_seed, args.budget)
            for c in coalitions(orderings)
        ]
        bench = Bench(driver)
        info, _ = bench.open(
            kind="attribution",
            name=f"Shapley · {args.questions.stem} · {args.planner} · {args.strategy}",
            benchmark=benchmark,
            questions=args.questions,
            config={
                "players": players,
                "orderings": [list(o) for o in orderings],
                "antithetic": args.antithetic,
                "planner": args.planner,
                "strategy": args.strategy,
                "seed": args.seed,
                "run_seed": args.run_seed,
                "limit": args.limit,
                "budget": args.budget,
                "missing_audio": [i.id for i in items if not i.runnable],
            },
            owner=args.owner,
        )
        return _complete(args, bench, driver, info, items, configs, attribution_result)
    finally:
        driver.close()


def ablation(args: argparse.Namespace, registry: Any = None) -> dict[str, Any]:
    benchmark, items = run_command.load(args)
    driver = run_command.open_driver(args, registry)
    try:
        reg = driver.registry
        planners = [p.strip() for p in args.planners.split(",") if p.strip()]
        strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
        tools = run_command.tools_of(args.tools, reg, None)
        run_command.check(reg, planners, tools, args.judge)
        seeds = range(args.seeds)
        configs = [
            Config(p, s, tuple(sorted(tools)), seed, args.budget, args.shuffle_choices)
            for p in planners
            for s in strategies
            for seed in seeds
        ] + [
            Config(p, default_strategy(), (), seed, args.budget, args.shuffle_choices)
            for p in planners
            for seed in seeds
        ]
        bench = Bench(driver)
        info, _ = bench.open(
            kind="ablation",
            name=f"Ablation · {args.questions.stem} · {', '.join(planners)}",
            benchmark=benchmark,
            questions=args.questions,
            config={
                "planners": planners,
                "strategies": strategies,
                "tools": sorted(tools),
                "seeds": args.seeds,
                "shuffle": args.shuffle_choices,
                "limit": args.limit,
                "budget": args.budget,
                "missing_audio": [i.id for i in items if not i.runnable],
            },
            owner=args.owner,
        )
        return _complete(
            args, bench, driver, info, items, configs,
            lambda _info, rows: ablation_result(summarise(rows)),
        )  # fmt: skip
    finally:
        driver.close()


def stored(args: argparse.Namespace) -> tuple[Bench, BenchRunInfo, list[ResultRow]]:
    driver = run_command.open_driver(args)
    bench = Bench(driver)
    info = bench.records.get(args.bench_id if hasattr(args, "bench_id") else args.bench)
    if info is None:
        driver.close()
        raise SystemExit("No such benchmark run; `python -m bench list` shows them.")
    return bench, info, bench.records.results(info.id)


def plots_of(args: argparse.Namespace) -> int:
    bench, info, rows = stored(args)
    try:
        result = analysis_of(info, rows)
        _finish(args, bench, info, result, rows)
        return 0
    finally:
        bench.worker.close()


def list_runs(args: argparse.Namespace) -> int:
    driver = run_command.open_driver(args)
    try:
        for info in Bench(driver).records.list([args.owner]):
            state = "done" if info.finished_at else "unfinished"
            print(
                f"{info.id}  {info.created_at:%Y-%m-%d %H:%M}  {info.kind:<11} {state:<10} "
                f"{info.total:>6} runs  {info.name}"
            )
        return 0
    finally:
        driver.close()


def report(args: argparse.Namespace) -> int:
    bench, info, rows = stored(args)
    try:
        result = build_report(info, rows, app_url=args.app_url)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "report.json").write_text(json.dumps(result, indent=1, default=str))
            (args.out / "report.md").write_text(markdown(result))
            (args.out / "questions.csv").write_text(questions_csv(rows, info.id, args.app_url))
        print(markdown(result))
        return 0
    finally:
        bench.worker.close()


def main(args: argparse.Namespace) -> int:
    if args.analysis == "attribution":
        attribution(args)
    elif args.analysis == "ablation":
        ablation(args)
    elif args.analysis == "plots":
        return plots_of(args)
    return 0
