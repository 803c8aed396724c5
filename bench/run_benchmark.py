"""Run a planner + strategy over a benchmark file in MMAU, MMAR or demo format.

    python -m bench.run_benchmark mmau-test-mini.json --audio-root DIR [--strategy evidence]
        [--planner offline | --preset audiotoolagent_open] [--limit 50] [--out predictions.json]

Formats: MMAU (a JSON list; ``audio_id`` and ``answer`` = exact choice text; predictions in
``model_output``), MMAR (JSON lines; ``audio_path``; predictions in ``answer_prediction``
and the reasoning in ``thinking_prediction``), and the small ``qa.json`` demo format
(``audio``). Paths in the file are resolved against ``--audio-root`` (default: the file's
folder). Items whose audio is missing are counted and skipped, never guessed.
Scoring is the benchmarks' own token rule (``agent.answer.token_rule_correct``).
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

from agent.answer import token_rule_correct  # noqa: E402
from agent.audio import AudioError, AudioStore  # noqa: E402
from agent.registry import Registry  # noqa: E402
from agent.run import RunRequest, run_question  # noqa: E402
from agent.tools.base import MemoryToolCache  # noqa: E402


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
    tools = registry.tools(tool_names)
    store = AudioStore(Path(tempfile.mkdtemp(prefix="bench-audio-")))
    cache = MemoryToolCache()
    scored: dict[str, list[bool]] = defaultdict(list)
    guesses: dict[str, list[bool]] = defaultdict(list)  # answered as a guess
    toolless: dict[str, list[bool]] = defaultdict(list)  # answered without a tool call
    expected_guesses: dict[str, list[bool]] = defaultdict(list)  # guess where one is due
    group_walls: dict[str, list[float]] = defaultdict(list)
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
        async for event in run_question(
            request, store=store, cache=cache, similarity=registry.similarity
        ):
            if event.type == "answer":
                prediction = event.choice or event.text
                rationale = event.rationale
                guess = event.guess
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
        item["guess"] = guess
        item["without_tools"] = without_tools  # a text-only guess, not evidence
        correct = token_rule_correct(prediction, item["answer"], item.get("choices", []))
        group = group_of(item, getattr(args, "group_by", None))
        for key in {group, "all"}:
            scored[key].append(correct)
            guesses[key].append(guess)
            toolless[key].append(without_tools)
            group_walls[key].append(walls[-1])
            if item.get("expect_guess"):
                expected_guesses[key].append(guess)
        if args.verbose:
            mark = "ok " if correct else "BAD"
            if item.get("expect_guess"):
                mark = ("GUESS " if guess else "SURE  ") + mark
            print(
                f"{mark} {path.name[:40]:<40} {item['answer']!r} <- {prediction!r}"
                + (" (guess)" if guess else "")
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
    parser.add_argument(
        "--strategy", default="react", choices=["react", "caption_first", "refine", "evidence"]
    )
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write predictions here")
    parser.add_argument(
        "--group-by", default=None, help="item key to report accuracy by (default: task)"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=1))


if __name__ == "__main__":
    main()
