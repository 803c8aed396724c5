"""Offline default on real recordings as 4-choice questions; prints accuracy and timings.

    python -m bench.offline_eval                  # ESC-50 + spoken digits from ../shared/data
    python -m bench.offline_eval --limit 10 --json bench/results/offline.json
    python -m bench.offline_eval calibrate raw-0.json   # fit the confidence table (below)

ESC-50: "Which sound is heard in this recording?" with the true class and three other
ESC-50 classes. Spoken digits (FSDD): "Which number is spoken?" with the true digit word
and three others. Choices are shuffled with a fixed seed so runs are comparable.
Timings: the first question of the process pays for loading the models (cold); the rest
are warm. Per-stage figures come from the events (tool_result durations, planner time).

``calibrate`` fits the offline planner's confidence table from predictions that
``bench.run_benchmark --raw-confidence --out FILE`` wrote on the dev sets: per family of
questions (``agent.planners.offline_confidence.family_of``), a monotone curve from raw
confidence to the share of answers that were right (isotonic regression; the other
families' answers count a little, so a family with few answers leans on the rest), and the
line under which an answer is a guess: the highest that keeps at most 10 % of the right
answers under it. It prints the reliability table and writes ``offline_calibration.json``.
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

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
_import_begun = time.monotonic()

from agent.audio import AudioStore  # noqa: E402
from agent.registry import Registry  # noqa: E402
from agent.run import RunRequest, run_question  # noqa: E402
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


OTHER_FAMILIES_WEIGHT = 0.15  # how much the rest counts in a family's curve
RIGHT_GUESSED_AT_MOST = 0.10  # the guess line keeps at most this share of right answers under it


def family_rows(items: list[dict]) -> list[tuple[str, float, bool]]:
    """(family, raw confidence, right) per answered item with a confidence."""
    from agent.planners.offline_confidence import family_of
    from agent.planners.question_types import classify

    rows = []
    for item in items:
        if item.get("confidence") is None or item.get("expect_guess") or "correct" not in item:
            continue
        choices = item.get("choices") or []
        family = family_of(classify(item["question"], choices), choices)
        rows.append((family, float(item["confidence"]), bool(item["correct"])))
    return rows


def fit_curves(rows: list[tuple[str, float, bool]]) -> dict[str, tuple[list[float], list[float]]]:
    """Per family (and "all"), raw -> share right, through the isotonic fit's points."""
    from sklearn.isotonic import IsotonicRegression

    x = np.array([r[1] for r in rows])
    y = np.array([float(r[2]) for r in rows])
    curves = {}
    for family in sorted({r[0] for r in rows}) + ["all"]:
        weight = np.array([1.0 if r[0] == family or family == "all" else OTHER_FAMILIES_WEIGHT
                           for r in rows])  # fmt: skip
        if family.startswith("open:"):  # answers in words lean on each other only
            weight = np.where([r[0].startswith("open:") for r in rows], weight, 0.0)
        fit = IsotonicRegression(y_min=0.02, y_max=0.98, out_of_bounds="clip")
        fit.fit(x, y, sample_weight=weight)
        xs = [round(float(v), 3) for v in fit.X_thresholds_]
        ys = [round(float(v), 3) for v in fit.y_thresholds_]
        curves[family] = (xs, ys)
    return curves


def guess_line(calibrated: list[tuple[float, bool]]) -> float:
    """The highest line that keeps at most RIGHT_GUESSED_AT_MOST of the right answers under
    it (the answers under it are shown as guesses)."""
    right = sorted(c for c, ok in calibrated if ok)
    if not right:
        return 0.5
    allowed = int(RIGHT_GUESSED_AT_MOST * len(right))
    return round(float(right[allowed]), 2)  # the right answer just above the allowance


def calibrate(files: list[Path], out: Path) -> None:
    from agent.planners.offline_confidence import Calibration
    from bench.run_benchmark import guess_columns, reliability

    items = [i for f in files for i in json.loads(f.read_text())]
    rows = family_rows(items)
    curves = fit_curves(rows)
    table = Calibration(curves, 0.0, ", ".join(f.name for f in files))
    calibrated = [(table(fam, raw) or 0.0, ok) for fam, raw, ok in rows]
    line = guess_line(calibrated)
    table = Calibration(curves, line, table.fitted_on)
    out.write_text(json.dumps(table.as_json(), indent=1) + "\n")
    scored = [{"confidence": c, "correct": ok, "guess": c < line} for c, ok in calibrated]
    print(f"{len(rows)} answers, {len(curves)} curves; guess line {line:.2f}; wrote {out}")
    print(json.dumps(guess_columns(scored)))
    for row in reliability(scored):
        print(f"  {row['confidence']}: {row['right']}/{row['n']} right ({row['right_pct']} %)")


def main() -> None:
    import sys

    if sys.argv[1:2] == ["calibrate"]:
        parser = argparse.ArgumentParser(prog="python -m bench.offline_eval calibrate")
        parser.add_argument("files", type=Path, nargs="+", help="run_benchmark --out files")
        parser.add_argument("--write", type=Path, default=None, help="the table to write")
        args = parser.parse_args(sys.argv[2:])
        from agent.planners.offline_confidence import TABLE

        calibrate(args.files, args.write or TABLE)
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="questions per dataset (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--strategy", default="react", choices=["react", "caption_first", "refine", "evidence"]
    )
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
