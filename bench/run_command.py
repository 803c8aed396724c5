"""``python -m bench run``: one configuration over a benchmark file, stored and resumable.

Also the helpers every ``bench`` command shares: where the app's data is, the catalogue,
the configuration asked for, the executor.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from agent.registry import Registry, UnavailableError
from backend.benchmarks import config_label
from bench.executors import EXECUTORS, make_executor
from bench.formats import BENCHMARKS, FormatError, Item, load_items, write_predictions
from bench.plan import TEXT_ONLY, Config
from bench.report import build_report, markdown, questions_csv
from bench.runner import Bench, Completion
from bench.worker import BenchWorker, WorkerEnv
from storage.benchmarks import BenchRunInfo

DEFAULT_APP_URL = "http://127.0.0.1:7860"


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options of every command: the app's data, the catalogue, where runs execute."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("AUDIO_AGENT_DATA_DIR", "data")),
        help="the app's data folder (AUDIO_AGENT_DATA_DIR)",
    )
    parser.add_argument(
        "--db-url",
        default=os.environ.get("AUDIO_AGENT_DB_URL"),
        help="database URL (AUDIO_AGENT_DB_URL; default: SQLite in --data-dir)",
    )
    parser.add_argument("--config", type=Path, default=None, help="catalogue TOML")
    parser.add_argument(
        "--owner", default="local", help="whose runs these are ('local' is shown to every viewer)"
    )
    parser.add_argument("--executor", choices=EXECUTORS, default="local")
    parser.add_argument("--concurrency", type=int, default=1, help="runs at once")
    parser.add_argument("--address", default=None, help="Ray cluster address, e.g. auto")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray")
    parser.add_argument(
        "--app-url",
        default=os.environ.get("AUDIO_AGENT_PUBLIC_URL", DEFAULT_APP_URL),
        help="where the app runs, for the trace links",
    )
    parser.add_argument("--budget", type=int, default=None, help="tool calls per question")
    parser.add_argument("--judge", default=None, help="planner that judges open-ended answers")
    parser.add_argument("--quiet", action="store_true")


def add_questions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--questions",
        type=Path,
        required=True,
        help="MMAU .json, MMAR .jsonl, MMAU-Pro .parquet/.json/.jsonl, demo",
    )
    parser.add_argument(
        "--audio-dir",
        type=Path,
        default=None,
        help="where the audio paths of the file point (default: its folder)",
    )
    parser.add_argument("--format", choices=BENCHMARKS, default=None, dest="benchmark")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only")


def env_of(args: argparse.Namespace) -> WorkerEnv:
    data_dir = args.data_dir.resolve()
    db_url = args.db_url or f"sqlite:///{(data_dir / 'audio_agent.sqlite3')}"
    return WorkerEnv(data_dir=data_dir, db_url=db_url, config_path=args.config, budget=args.budget)


def open_driver(args: argparse.Namespace, registry: Registry | None = None) -> BenchWorker:
    """The driver's own worker (store migrated first: the workers only open it)."""
    from storage import migrate

    env = env_of(args)
    env.data_dir.mkdir(parents=True, exist_ok=True)
    migrate(env.db_url)
    return BenchWorker(env, registry=registry)


def load(args: argparse.Namespace) -> tuple[str, list[Item]]:
    try:
        benchmark, items = load_items(args.questions, args.audio_dir, args.benchmark)
    except FormatError as exc:
        raise SystemExit(str(exc)) from exc
    if args.limit:
        items = items[: args.limit]
    return benchmark, items


def tools_of(value: str | None, registry: Registry, preset: dict[str, Any] | None) -> list[str]:
    if value is None:
        return list(preset["tools"]) if preset else registry.default_tools()
    if value.strip().lower() == TEXT_ONLY:
        return []
    return [t.strip() for t in value.split(",") if t.strip()]


def check(registry: Registry, planners: list[str], tools: list[str], judge: str | None) -> None:
    """Refuse at once, with the reason, what cannot run (not after an hour of questions)."""
    try:
        for name in planners:
            registry.planner(name)
        for name in tools:
            registry.tool(name)
        if judge:
            registry.planner(judge)
    except UnavailableError as exc:
        raise SystemExit(str(exc)) from exc


def executor_factory(args: argparse.Namespace, driver: BenchWorker) -> Any:
    return lambda: make_executor(
        args.executor,
        driver.env,
        args.concurrency,
        inline_worker=_Borrowed(driver),
        address=args.address,
        num_cpus=args.num_cpus,
    )


class _Borrowed:
    """The driver's worker lent to the inline executor (which must not close it)."""

    def __init__(self, worker: BenchWorker) -> None:
        self._worker = worker

    def __getattr__(self, name: str) -> Any:
        return getattr(self._worker, name)

    def close(self) -> None:
        pass


def write_outputs(
    out: Path, info: BenchRunInfo, items: list[Item], done: Completion, args: argparse.Namespace
) -> dict[str, Any]:
    """Predictions in the official scripts' keys, report.md, report.json, questions.csv."""
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(info, done.rows, app_url=args.app_url)
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "report.md").write_text(markdown(report))
    (out / "questions.csv").write_text(questions_csv(done.rows, info.id, args.app_url))
    by_item = {r.item_id: r for r in done.rows if r.score is not None and r.run_id}
    predictions = {
        item_id: (
            str(((r.score or {}).get("facts") or {}).get("prediction", "")),
            str(((r.score or {}).get("facts") or {}).get("reasoning", "")),
        )
        for item_id, r in by_item.items()
    }
    suffix = "".join(args.questions.suffixes[-1:]) or ".json"
    target = out / f"{args.questions.stem}.predictions{suffix}"
    write_predictions(target, info.benchmark, items, predictions, args.questions)  # type: ignore[arg-type]
    return report


def run(args: argparse.Namespace, registry: Registry | None = None) -> dict[str, Any]:
    benchmark, items = load(args)
    driver = open_driver(args, registry)
    try:
        reg = driver.registry
        preset = None
        if args.preset:
            try:
                preset = reg.preset(args.preset)
            except UnavailableError as exc:
                raise SystemExit(str(exc)) from exc
        planner = args.planner or (preset["planner"] if preset else reg.default_planner())
        tools = tools_of(args.tools, reg, preset)
        check(reg, [planner], tools, args.judge)
        config = Config(
            planner,
            args.strategy,
            tuple(sorted(tools)),
            args.seed,
            args.budget,
            args.shuffle_choices,
        )
        missing = [i.id for i in items if not i.runnable]
        config_name = config_label(config.public())
        name = args.name or f"{args.questions.stem} · {config_name}"
        bench = Bench(driver)
        info, new = bench.open(
            kind="run",
            name=name,
            benchmark=benchmark,
            questions=args.questions,
            config={
                **config.public(),
                "limit": args.limit,
                "judge": args.judge,
                "audio_dir": str(args.audio_dir or ""),
                "missing_audio": missing,
            },
            owner=args.owner,
            fresh=args.fresh,
        )
        if not args.quiet:
            state = "new" if new else "continuing"
            print(
                f"{state} benchmark run {info.id}: {len(items) - len(missing)} questions, "
                f"{len(missing)} without audio",
                file=sys.stderr,
            )
        done = bench.complete(
            info,
            items,
            [config],
            executor_factory(args, driver),
            judge=args.judge,
            quiet=args.quiet,
            retry_failed=args.retry_failed,
        )
        info = bench.records.get(info.id) or info
        if args.out:
            report = write_outputs(args.out, info, items, done, args)
        else:
            report = build_report(info, done.rows, app_url=args.app_url)
        report["this_call"] = {
            "ran": done.ran,
            "reused": done.reused,
            "rescored": done.rescored,
            "seconds": round(done.seconds, 1),
        }
        return report
    finally:
        driver.close()
