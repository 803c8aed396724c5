"""Offline default on real recordings as 4-choice questions; prints accuracy and timings.

    python -m bench.offline_eval                  # ESC-50 + spoken digits from ../shared/data
    python -m bench.offline_eval --limit 10 --json bench/results/offline.json
    python -m bench.offline_eval calibrate raw-0.json raw-1.json   # fit the confidence table
    python -m bench.offline_eval check raw-7.json     # apply it to a held-out seed (below)

ESC-50: "Which sound is heard in this recording?" with the true class and three other
ESC-50 classes. Spoken digits (FSDD): "Which number is spoken?" with the true digit word
and three others. Choices are shuffled with a fixed seed so runs are comparable.
Timings: the first question of the process pays for loading the models (cold); the rest
are warm. Per-stage figures come from the events (tool_result durations, planner time).

``calibrate`` fits the offline planner's confidence table from the raw predictions of
``bench.run_benchmark --raw-confidence --out FILE`` on the dev sets; ``check`` applies it to
a held-out seed's raw predictions (``bench.offline_calibration`` says how).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
_import_begun = time.monotonic()

from agent.audio import AudioStore  # noqa: E402
from agent.registry import Registry  # noqa: E402
from agent.run import RunRequest, run_question  # noqa: E402
from agent.strategies.options import add_strategy_option  # noqa: E402
from agent.tools.base import MemoryToolCache  # noqa: E402

IMPORTS_S = time.monotonic() - _import_begun
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DIGIT_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


@dataclass
class Item:
    dataset: str
    path: Path
    question: str
    choices: list[str]
    answer: str


@dataclass
class Outcome:
    dataset: str
    file: str
    answer: str
    predicted: str | None
    correct: bool
    wall_s: float
    tool_s: dict[str, float] = field(default_factory=dict)
    calls: int = 0
    failed: str | None = None


def four_choices(answer: str, pool: list[str], rng: random.Random) -> list[str]:
    others = rng.sample([p for p in pool if p != answer], 3)
    choices = [answer, *others]
    rng.shuffle(choices)
    return choices


def esc50_items(data: Path, rng: random.Random) -> list[Item]:
    rows = list(csv.DictReader((data / "esc50" / "meta.csv").open()))
    pool = sorted({r["category"].replace("_", " ") for r in rows})
    return [
        Item(
            "esc50",
            data / "esc50" / "audio" / r["filename"],
            "Which sound is heard in this recording?",
            four_choices(r["category"].replace("_", " "), pool, rng),
            r["category"].replace("_", " "),
        )
        for r in rows
    ]


def fsdd_items(data: Path, rng: random.Random) -> list[Item]:
    rows = list(csv.DictReader((data / "fsdd" / "labels.csv").open()))
    return [
        Item(
            "fsdd",
            data / "fsdd" / r["file"],
            "Which number is spoken?",
            four_choices(r["word"], DIGIT_WORDS, rng),
            r["word"],
        )
        for r in rows
    ]


async def answer_item(
    item: Item, registry: Registry, store: AudioStore, cache: MemoryToolCache, strategy: str
) -> Outcome:
    begun = time.monotonic()
    audio = store.add_file(item.path)
    request = RunRequest(
        question=item.question,
        choices=item.choices,
        audio=[audio],
        planner=registry.planner("offline"),
        tools=registry.tools(),
        strategy=strategy,
    )
    outcome = Outcome(item.dataset, item.path.name, item.answer, None, False, 0.0)
    async for event in run_question(
        request, store=store, cache=cache, similarity=registry.similarity
    ):
        if event.type == "tool_result":
            outcome.tool_s[event.tool] = outcome.tool_s.get(event.tool, 0.0) + event.duration_s
            if event.error:
                outcome.failed = f"{event.tool}: {event.error}"
        elif event.type == "answer":
            outcome.predicted = event.choice
        elif event.type == "run_finished":
            outcome.calls = event.calls
        elif event.type == "run_failed":
            outcome.failed = event.message
    outcome.wall_s = time.monotonic() - begun
    outcome.correct = outcome.predicted == item.answer
    return outcome


def summarise(outcomes: list[Outcome]) -> dict:
    by_set: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_set[o.dataset].append(o)
    summary = {}
    first = outcomes[0] if outcomes else None
    for name, items in by_set.items():
        warm = [o for o in items if o is not first] or items
        tools: dict[str, list[float]] = defaultdict(list)
        for o in warm:
            for tool, seconds in o.tool_s.items():
                tools[tool].append(seconds)
        summary[name] = {
            "n": len(items),
            "accuracy": round(100 * sum(o.correct for o in items) / len(items), 1),
            "first_s": round(items[0].wall_s, 2),
            "warm_mean_s": round(statistics.mean(o.wall_s for o in warm), 3),
            "warm_median_s": round(statistics.median(o.wall_s for o in warm), 3),
            "tool_mean_s": {t: round(statistics.mean(v), 3) for t, v in sorted(tools.items())},
            "mean_calls": round(statistics.mean(o.calls for o in items), 2),
            "failures": sum(o.failed is not None for o in items),
        }
    return summary


async def main_async(args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    items = esc50_items(args.data, rng) + fsdd_items(args.data, rng)
    if args.limit:
        per_set: dict[str, int] = defaultdict(int)
        kept = []
        for item in items:
            if per_set[item.dataset] < args.limit:
                kept.append(item)
                per_set[item.dataset] += 1
        items = kept
    registry = Registry()
    store = AudioStore(Path(tempfile.mkdtemp(prefix="bench-audio-")))
    cache = MemoryToolCache()
    load_begun = time.monotonic()
    outcomes = []
    for item in items:
        outcome = await answer_item(item, registry, store, cache, args.strategy)
        outcomes.append(outcome)
        if args.verbose:
            mark = "ok " if outcome.correct else "BAD"
            print(
                f"{mark} {item.dataset:<6} {item.path.name:<24} answer={item.answer!r:<18} "
                f"got={outcome.predicted!r:<18} {outcome.wall_s:.2f} s"
                + (f"  [{outcome.failed}]" if outcome.failed else ""),
                flush=True,
            )
    summary = summarise(outcomes)
    summary["_total_s"] = round(time.monotonic() - load_begun, 1)
    summary["_cold_s"] = round(outcomes[0].wall_s, 2) if outcomes else 0.0
    summary["_imports_s"] = round(IMPORTS_S, 2)
    return {"summary": summary, "outcomes": [asdict(o) | {"tool_s": o.tool_s} for o in outcomes]}


def calibrate_or_check(command: str, argv: list[str]) -> None:
    from agent.planners.offline_confidence import TABLE, Calibration
    from bench.offline_calibration import calibrate, check, print_check

    parser = argparse.ArgumentParser(prog=f"python -m bench.offline_eval {command}")
    parser.add_argument(
        "files", type=Path, nargs="+", help="run_benchmark --raw-confidence --out files"
    )
    parser.add_argument("--table", type=Path, default=TABLE, help="the table to write / apply")
    parser.add_argument("--json", type=Path, default=None, help="check: write the figures here")
    args = parser.parse_args(argv)
    if command == "calibrate":
        calibrate(args.files, args.table)
        return
    result = check(args.files, Calibration.from_json(json.loads(args.table.read_text())))
    print_check(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


def main() -> None:
    import sys

    if sys.argv[1:2] in (["calibrate"], ["check"]):
        calibrate_or_check(sys.argv[1], sys.argv[2:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="questions per dataset (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    add_strategy_option(parser)
    parser.add_argument("--json", type=Path, default=None, help="write outcomes here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    for name, s in result["summary"].items():
        if name.startswith("_"):
            continue
        print(
            f"{name:<6} n={s['n']:<3} accuracy {s['accuracy']:5.1f}%  "
            f"warm mean {s['warm_mean_s']:.3f} s "
            f"(median {s['warm_median_s']:.3f} s)  calls/question {s['mean_calls']}  "
            f"failures {s['failures']}"
        )
        print(
            "        warm tool seconds per question: "
            + ", ".join(f"{t} {v:.3f}" for t, v in s["tool_mean_s"].items())
        )
    summary = result["summary"]
    print(
        f"cold: imports {summary['_imports_s']} s, first question {summary['_cold_s']} s "
        f"(loads the models it needs); total {summary['_total_s']} s; chance level 25%"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
