"""How fast the offline default answers short clips, per strategy: seconds per second of audio.

    python -m bench.realtime [--file data/devsets-1/devsets.json] [--n 20]

Takes ``--n`` questions spread over the categories of a dev set (``python -m bench.devsets
--seed 1 --out data/devsets-1`` builds a held-out one), answers each with every strategy and
the offline planner after one warm-up question (the models loaded, as the app does at
start-up), each question with a fresh tool cache, and prints per strategy the total time over
the total audio (the real-time factor; the target: at most 0.15) and the median time per
question. The strategies take turns question by question, so other load on the machine hits
them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from agent.strategies.options import add_strategies_option

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pick(items: list[dict], n: int) -> list[dict]:
    """``n`` items, round-robin over the categories (in file order within each)."""
    by_category: dict[str, list[dict]] = {}
    for item in items:
        by_category.setdefault(item.get("category", ""), []).append(item)
    chosen: list[dict] = []
    while len(chosen) < n and any(by_category.values()):
        for group in by_category.values():
            if group and len(chosen) < n:
                chosen.append(group.pop(0))
    return chosen


async def measure(file: Path, n: int, strategies: tuple[str, ...]) -> dict[str, list[float]]:
    from agent.audio import AudioStore
    from agent.registry import Registry, warm_up
    from agent.run import RunRequest, run_question

    registry = Registry(env={})
    warm_up(lambda _: None)
    tools, planner = registry.tools(), registry.planner("offline")
    store = AudioStore(Path(tempfile.mkdtemp(prefix="bench-rt-")))
    items = pick(json.loads(file.read_text()), n + 1)
    walls: dict[str, list[float]] = {s: [] for s in strategies}
    audio_s: list[float] = []
    for index, item in enumerate(items):
        audio = store.add_file(file.parent / item["audio_id"])
        if index:
            audio_s.append(audio.duration_s)
        for strategy in strategies:
            request = RunRequest(
                item["question"],
                [audio],
                planner,
                tools,
                choices=item["choices"],
                strategy=strategy,
            )
            begun = time.perf_counter()
            async for _ in run_question(request, store=store, similarity=registry.similarity):
                pass
            if index:  # the first question of all is the warm-up
                walls[strategy].append(time.perf_counter() - begun)
    walls["_audio"] = audio_s
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=Path("data/devsets-1/devsets.json"))
    parser.add_argument("--n", type=int, default=20)
    add_strategies_option(parser)
    args = parser.parse_args()
    if not args.file.is_file():
        print(f"skipped: {args.file} is missing (python -m bench.devsets --seed 1 --out ...)")
        return
    walls = asyncio.run(measure(args.file, args.n, tuple(args.strategies)))
    audio = walls.pop("_audio")
    print(
        f"{len(audio)} questions, {sum(audio):.1f} s of audio "
        f"(median clip {statistics.median(audio):.1f} s)"
    )
    for strategy, times in walls.items():
        print(
            f"  {strategy:14} x{sum(times) / sum(audio):.3f} real time, median "
            f"{statistics.median(times):.2f} s per question"
        )


if __name__ == "__main__":
    main()
