"""The research bench.

    python -m bench run --questions mmau-test-mini.json --audio-dir DIR [--planner offline |
        --preset NAME] [--tools a,b | --tools none] [--strategy react] [--concurrency 4]
        [--limit 100] [--seed 0] [--shuffle-choices] [--judge PLANNER] [--out DIR]
        [--executor local|inline|ray --address auto]
    python -m bench analyse attribution --questions F --audio-dir D --permutations 20 --out DIR
    python -m bench analyse ablation --questions F --planners offline,gpt
        --strategies react,caption_first,refine,evidence --seeds 5 --shuffle-choices --out DIR
    python -m bench analyse plots --bench ID --out DIR     # the PNGs of a stored analysis
    python -m bench list                                    # stored benchmark runs
    python -m bench report ID [--out DIR]                   # report of a stored run

Every question's run is stored in the app's database (``--data-dir`` / ``AUDIO_AGENT_DB_URL``)
as an ordinary run of a conversation named after the benchmark run, so its trace opens in
the app (the Benchmarks tab, or the link in the report). The same command again continues
an unfinished run; identical runs (same question, planner, strategy, tools, seed) are never
made twice.
"""

from __future__ import annotations

import argparse
import json
import sys

from agent.strategies.options import add_strategy_option
from bench import analyse, run_command
from bench.plan import TEXT_ONLY


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="one configuration over a benchmark file")
    run_command.add_questions(run)
    run_command.add_common(run)
    run.add_argument("--planner", default=None)
    run.add_argument("--preset", default=None)
    run.add_argument(
        "--tools",
        default=None,
        help=f"comma-separated tool names, or '{TEXT_ONLY}' (text-only baseline)",
    )
    add_strategy_option(run)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument(
        "--shuffle-choices",
        action="store_true",
        help="show each question's choices in an order fixed by --seed",
    )
    run.add_argument("--name", default=None, help="label of this benchmark run")
    run.add_argument(
        "--out",
        type=__import__("pathlib").Path,
        default=None,
        help="write predictions (official keys), report.md/json, questions.csv",
    )
    run.add_argument(
        "--fresh",
        action="store_true",
        help="a new benchmark run even if this command made one before",
    )
    run.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the questions whose run failed (e.g. a provider outage)",
    )

    analyse.add_parsers(commands)

    listing = commands.add_parser("list", help="stored benchmark runs")
    run_command.add_common(listing)
    report = commands.add_parser("report", help="the report of a stored benchmark run")
    report.add_argument("bench_id")
    report.add_argument("--out", type=__import__("pathlib").Path, default=None)
    run_command.add_common(report)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "run":
        result = run_command.run(args)
        print(json.dumps(result, indent=1, default=str))
        return 0
    if args.command == "analyse":
        return analyse.main(args)
    if args.command == "list":
        return analyse.list_runs(args)
    if args.command == "report":
        return analyse.report(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
