"""Run a planner + strategy over a benchmark file in MMAU, MMAR or demo format.

    python -m bench.run_benchmark mmau-test-mini.json --audio-root DIR [--strategy evidence]
        [--planner offline | --preset audiotoolagent_open] [--limit 50] [--out predictions.json]

Formats: MMAU (a JSON list; ``audio_id`` and ``answer`` = exact choice text; predictions in
``model_output``), MMAR (JSON lines; ``audio_path``; predictions in ``answer_prediction``
and the reasoning in ``thinking_prediction``), and the small ``qa.json`` demo format
(``audio``). Paths in the file are resolved against ``--audio-root`` (default: the file's
folder). Items whose audio is missing are counted and skipped, never guessed.
Scoring is the benchmarks' own token rule (``agent.answer.token_rule_correct``); items
without choices (the dev sets' open questions, ``open`` set) are scored by
``bench.devsets_open.score_open``. Each answer's confidence and whether it was shown as a
guess are kept: the summary says how many wrong answers were shown as guesses, and how many
right ones, and gives the reliability table (of the answers with confidence 0.3-0.4, how
many were right). ``--raw-confidence`` turns the offline planner's calibration off (what
``python -m bench.offline_eval calibrate`` fits the table from).
The output file is the benchmark file with the prediction keys added, ready for the
official scoring scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agent.answer import token_rule_correct, tokens  # noqa: E402
from agent.audio import AudioError, AudioStore  # noqa: E402
from agent.registry import Registry  # noqa: E402
from agent.run import RunRequest, run_question  # noqa: E402
from agent.strategies.options import add_strategy_option
from agent.tools.base import MemoryToolCache  # noqa: E402
from bench.devsets_open import score_open, starts_yes_no  # noqa: E402

BINS = [round(0.1 * i, 1) for i in range(11)]


def choice_correct(prediction: str, answer: str, choices: list[str]) -> bool:
    """The benchmarks' token rule; where another choice has the same words as the answer
    ("dog, then rain" and "rain, then dog") the rule cannot tell them apart, so the exact
    choice text decides."""
    same_words = [c for c in choices if c != answer and set(tokens(c)) == set(tokens(answer))]
    if same_words:
        return " ".join(tokens(prediction)) == " ".join(tokens(answer))
    return token_rule_correct(prediction, answer, choices)


def reliability(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of the answers with confidence in each tenth, how many were right."""
    rows = []
    for low, high in zip(BINS, BINS[1:], strict=False):
        inside = [
            i for i in items
            if i.get("confidence") is not None
            and low <= i["confidence"] < high + (1e-9 if high == 1.0 else 0)
        ]  # fmt: skip
        if inside:
            right = sum(bool(i["correct"]) for i in inside)
            rows.append({"confidence": f"{low:.1f}-{high:.1f}", "n": len(inside), "right": right,
                         "right_pct": round(100 * right / len(inside), 1)})  # fmt: skip
    return rows


def guess_columns(items: list[dict[str, Any]]) -> dict[str, Any]:
    """How many wrong answers were shown as guesses, and how many right ones."""
    wrong = [i for i in items if not i["correct"] and not i.get("expect_guess")]
    right = [i for i in items if i["correct"] and not i.get("expect_guess")]
    return {
        "wrong": len(wrong),
        "wrong_as_guess_pct": round(100 * sum(i["guess"] for i in wrong) / len(wrong), 1)
        if wrong else None,
        "right": len(right),
        "right_as_guess_pct": round(100 * sum(i["guess"] for i in right) / len(right), 1)
        if right else None,
    }  # fmt: skip


def load_items(path: Path) -> tuple[str, list[dict[str, Any]]]:
    text = path.read_text()
    if path.suffix == ".jsonl":
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        items = json.loads(text)
    first = items[0] if items else {}
    fmt = "mmar" if "audio_path" in first else "mmau" if "audio_id" in first else "demo"
    return fmt, items


def audio_of(item: dict[str, Any], fmt: str, root: Path) -> Path:
    relative = {"mmar": "audio_path", "mmau": "audio_id", "demo": "audio"}[fmt]
    value = item[relative]
    return (root / (value[0] if isinstance(value, list) else value)).resolve()


def group_of(item: dict[str, Any], key: str | None = None) -> str:
    if key:
        return str(item.get(key) or "all")
    return str(item.get("task") or item.get("modality") or item.get("domain_guess") or "all")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    fmt, items = load_items(args.file)
    if args.limit:
        items = items[: args.limit]
    root = args.audio_root or args.file.parent
    registry = Registry(args.config)
    planner_name, tool_names = args.planner, args.tools
    if args.preset:
        preset = registry.preset(args.preset)
        planner_name = planner_name or preset["planner"]
        tool_names = tool_names or preset["tools"]
    planner = registry.planner(planner_name or registry.default_planner())
    if getattr(args, "raw_confidence", False) and hasattr(planner, "calibration"):
        from agent.planners.offline_confidence import RAW

        planner.calibration = RAW  # raw support, no calibrated line: to fit the table
    tools = registry.tools(tool_names)
    store = AudioStore(Path(tempfile.mkdtemp(prefix="bench-audio-")))
    cache = MemoryToolCache()
    scored: dict[str, list[bool]] = defaultdict(list)
    guesses: dict[str, list[bool]] = defaultdict(list)  # answered as a guess
    toolless: dict[str, list[bool]] = defaultdict(list)  # answered without a tool call
    expected_guesses: dict[str, list[bool]] = defaultdict(list)  # guess where one is due
    group_walls: dict[str, list[float]] = defaultdict(list)
    done: dict[str, list[dict[str, Any]]] = defaultdict(list)  # answered items, per group
    yes_no_form: dict[str, list[bool]] = defaultdict(list)  # starts with yes / no / can't tell
    missing = failed = 0
    costs, walls = [], []
    for item in items:
        path = audio_of(item, fmt, root)
        if not path.is_file():
            missing += 1
            continue
        try:
            audio = store.add_file(path)
        except AudioError as exc:
            print(f"skip {path.name}: {exc}")
            missing += 1
            continue
        request = RunRequest(
            question=item["question"],
            choices=list(item.get("choices", [])),
            audio=[audio],
            planner=planner,
            tools=tools,
            strategy=args.strategy,
            budget=args.budget,
        )
        prediction, rationale, cost, begun = "", "", 0.0, time.monotonic()
        guess = without_tools = False
        confidence = None
        async for event in run_question(
            request, store=store, cache=cache, similarity=registry.similarity
        ):
            if event.type == "answer":
                prediction = event.choice or event.text
                rationale = event.rationale
                guess, confidence = event.guess, event.confidence
                without_tools = event.without_tools
            elif event.type == "run_finished":
                cost = event.cost
            elif event.type == "run_failed":
                failed += 1
                rationale = f"run failed: {event.message}"
        walls.append(time.monotonic() - begun)
        costs.append(cost)
        if fmt == "mmar":
            item["answer_prediction"], item["thinking_prediction"] = prediction, rationale
        else:
            item["model_output"] = prediction
        item["guess"], item["confidence"] = guess, confidence
        item["without_tools"] = without_tools  # a text-only guess, not evidence
        item["wall_s"] = round(walls[-1], 3)
        item.setdefault("rationale", rationale)  # the planner's reasons (any format)
        if item.get("open"):
            correct = score_open(item, prediction)
        else:
            correct = choice_correct(prediction, item["answer"], item.get("choices", []))
        item["correct"] = correct
        group = group_of(item, getattr(args, "group_by", None))
        for key in {group, "all"}:
            scored[key].append(correct)
            guesses[key].append(guess)
            toolless[key].append(without_tools)
            group_walls[key].append(walls[-1])
            done[key].append(item)
            if item.get("expect_guess"):
                expected_guesses[key].append(guess)
            if item.get("open") in ("yes_no", "property"):
                yes_no_form[key].append(starts_yes_no(prediction))
        if args.verbose:
            mark = "ok " if correct else "BAD"
            if item.get("expect_guess"):
                mark = ("GUESS " if guess else "SURE  ") + mark
            sure = f" {confidence:.2f}" if confidence is not None else ""
            print(
                f"{mark} {path.name[:40]:<40} {item['answer']!r} <- {prediction!r}"
                + (f" (best guess{sure})" if guess else sure)
                + (" (no tool called)" if without_tools else "")
                + f" {walls[-1]:.2f} s",
                flush=True,
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "mmar":
            args.out.write_text("\n".join(json.dumps(i) for i in items) + "\n")
        else:
            args.out.write_text(json.dumps(items, indent=1))
    return {
        "format": fmt,
        "planner": planner.name,
        "strategy": args.strategy,
        "answered": len(scored["all"]),
        "missing_audio": missing,
        "failed_runs": failed,
        "accuracy": {k: round(100 * sum(v) / len(v), 1) for k, v in scored.items() if v},
        "n": {k: len(v) for k, v in scored.items()},
        "mean_cost_usd": round(statistics.mean(costs), 5) if costs else 0.0,
        "mean_wall_s": round(statistics.mean(walls), 2) if walls else 0.0,
        # the first question pays for loading the models; the rest are warm
        "warm_mean_wall_s": round(statistics.mean(walls[1:]), 2) if len(walls) > 1 else None,
        "warm_wall_s": {
            k: round(statistics.mean(w[1:] if walls and w[0] is walls[0] else w), 2)
            for k, w in group_walls.items()
            if len(w) > 1
        },
        "guesses": {k: sum(v) for k, v in guesses.items() if v},
        # answers the planner gave without a single tool call: text-only guesses
        "without_tools": {k: sum(v) for k, v in toolless.items() if v},
        "guessed_where_due_pct": {
            k: round(100 * sum(v) / len(v), 1) for k, v in expected_guesses.items() if v
        },
        # wrong answers shown as guesses (want many), right ones shown as guesses (want few)
        "guess_columns": {k: guess_columns(v) for k, v in done.items()},
        "yes_no_starts_right_pct": {
            k: round(100 * sum(v) / len(v), 1) for k, v in yes_no_form.items() if v
        },
        "reliability": reliability(done["all"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, help="MMAU .json, MMAR .jsonl or demo qa.json")
    parser.add_argument("--audio-root", type=Path, default=None)
    parser.add_argument("--planner", default=None)
    parser.add_argument("--tool", action="append", dest="tools", default=None)
    parser.add_argument("--preset", default=None)
    add_strategy_option(parser)
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write predictions here")
    parser.add_argument(
        "--group-by", default=None, help="item key to report accuracy by (default: task)"
    )
    parser.add_argument(
        "--raw-confidence", action="store_true",
        help="the offline planner's raw confidence, no calibrated guesses (to fit the table)",
    )  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=1))


if __name__ == "__main__":
    main()
