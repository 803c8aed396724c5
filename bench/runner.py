"""Complete a benchmark run: plan its (question, configuration) rows, skip what is done, reuse
identical runs, hand the rest to an executor, and record every result as it arrives.

Resuming is the same call again. A row is done when its run ended (ok, forced, degraded, or
failed: a failure is that question's outcome) and its score is written; a run that ended but
was never scored (the command died in between) is scored from its stored events; a run that
never ended (killed, interrupted) is run again on the same question message. Nothing that
ended is ever run twice: before running a row, any benchmark run's ended run with the same
``run_key`` is reused instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.registry import Registry
from bench.formats import Item
from bench.plan import Config, Task, audio_sha256, run_key, sha256_json
from bench.progress import BenchProgress
from bench.worker import BenchWorker
from storage.benchmarks import ENDED_STATUSES, BenchRecords, BenchRunInfo, ResultRow

ExecutorFactory = Callable[[], Any]


@dataclass
class Completion:
    rows: list[ResultRow]
    ran: int  # runs made by this call
    reused: int  # rows answered by an identical run made before
    rescored: int  # ended runs scored from their stored events
    seconds: float = 0.0


def model_ids(registry: Registry) -> dict[str, Any]:
    return {e.name: e.model for kind in ("planner", "tool") for e in registry.entries(kind)}


def fingerprint(kind: str, questions_sha: str, config: dict[str, Any]) -> str:
    return sha256_json({"kind": kind, "questions": questions_sha, "config": config})


class Bench:
    """Benchmark runs in the app's database (``worker`` is the driver's own: its store,
    catalogue and similarity model; it also runs the inline executor's tasks)."""

    def __init__(self, worker: BenchWorker) -> None:
        self.worker = worker
        self.store = worker.store
        self.records = BenchRecords(worker.store)
        self.registry = worker.registry
        self._audio_sha: dict[Path, str] = {}

    def open(
        self,
        *,
        kind: str,
        name: str,
        benchmark: str,
        questions: Path,
        config: dict[str, Any],
        owner: str,
        fresh: bool = False,
    ) -> tuple[BenchRunInfo, bool]:
        """The benchmark run this same command made before (to continue or report), or a
        new one (True: new); ``fresh``: always a new one (its rows still reuse identical
        runs)."""
        questions_sha = hashlib.sha256(questions.read_bytes()).hexdigest()
        print_key = fingerprint(kind, questions_sha, config)
        found = None if fresh else self.records.latest(print_key, owner)
        if found is not None and found.conversation_id is not None:
            return found, False
        conversation = self.store.conversations.create_conversation(
            f"Benchmark: {name}"[:200], owner=owner
        )
        info = self.records.create(
            kind=kind,
            name=name,
            benchmark=benchmark,
            questions_path=str(questions.resolve()),
            questions_sha256=questions_sha,
            fingerprint=print_key,
            config=config,
            conversation_id=conversation.id,
            owner=owner,
        )
        return info, True

    def plan_rows(self, items: Sequence[Item], configs: Sequence[Config]) -> list[ResultRow]:
        models = model_ids(self.registry)
        rows = []
        for item in items:
            if not item.runnable:
                continue
            audio = audio_sha256(item.audio, self._audio_sha)
            for config in configs:
                rows.append(
                    ResultRow(
                        item_id=item.id,
                        config_key=config.key,
                        run_key=run_key(item, config, audio, models),
                        config=config.public(),
                        labels=item.labels(),
                    )
                )
        return rows

    def complete(
        self,
        info: BenchRunInfo,
        items: Sequence[Item],
        configs: Sequence[Config],
        executor: ExecutorFactory,
        *,
        judge: str | None = None,
        quiet: bool = False,
        retry_failed: bool = False,
    ) -> Completion:
        import time

        begun = time.monotonic()
        assert info.conversation_id is not None
        self.records.plan(info.id, self.plan_rows(items, configs))
        by_id = {item.id: item for item in items}
        rows = self.records.results(info.id)
        progress = BenchProgress(len(rows), 0, label=info.name[:40], quiet=quiet)
        done: list[ResultRow] = []
        todo: list[ResultRow] = []
        rescored = reused = 0
        for row in rows:
            ended = row.run_status in ENDED_STATUSES
            if retry_failed and (row.run_status == "failed" or _crashed(row)):
                todo.append(row)
            elif row.score is not None and (ended or row.run_status is None or _crashed(row)):
                done.append(row)
            elif ended and row.run_id is not None:
                row.score = self._rescore(row, by_id[row.item_id], judge)
                rescored += 1
                done.append(row)
            else:
                todo.append(row)
        earlier = self.records.ended_by_key(r.run_key for r in todo)
        leaders: dict[int, ResultRow] = {}  # by result id: the rows that run
        running: set[str] = set()
        followers: dict[str, list[ResultRow]] = {}
        tasks = []
        for row in todo:
            source = earlier.get(row.run_key)
            if (
                source is not None
                and source.id != row.id
                and not (retry_failed and source.run_status == "failed")
            ):
                self.records.reuse(row.id, source, source.score or {})
                row.score, row.run_id = source.score, source.run_id
                reused += 1
                done.append(row)
            elif row.run_key in running:
                followers.setdefault(row.run_key, []).append(row)
            else:
                running.add(row.run_key)
                leaders[row.id] = row
                tasks.append(self._task(info, row, by_id[row.item_id], judge))
        progress.done = len(done)
        progress.started_with = len(done)
        for row in done:
            progress.add_known(row.score or {})
        ran = 0
        if tasks:
            runner = executor()
            try:
                for outcome in runner.run(tasks):
                    ran += 1
                    if outcome.run_id is None and outcome.error:  # no worker wrote it
                        self.records.set_score(outcome.result_id, outcome.score)
                    progress.advance(outcome.score)
                    leader = leaders[outcome.result_id]
                    for row in followers.pop(leader.run_key, []):
                        source = leader.model_copy(update={"run_id": outcome.run_id})
                        self.records.reuse(row.id, source, outcome.score)
                        progress.advance(outcome.score)
            finally:
                runner.close()
        progress.close()
        final = self.records.results(info.id)
        if all(r.score is not None for r in final):
            self.records.finish(info.id)
        return Completion(final, ran, reused, rescored, time.monotonic() - begun)

    def _task(self, info: BenchRunInfo, row: ResultRow, item: Item, judge: str | None) -> Task:
        return Task(
            result_id=row.id,
            bench_run_id=info.id,
            conversation_id=info.conversation_id or "",
            owner=info.owner,
            item=item,
            config=Config.of(row.config),
            message_id=row.message_id,
            judge=judge,
        )

    def _rescore(self, row: ResultRow, item: Item, judge: str | None) -> dict[str, Any]:
        assert row.run_id is not None
        events = self.store.runs.run_events(row.run_id)
        task = Task(row.id, row.bench_run_id, "", "", item, Config.of(row.config), judge=judge)
        score = self.worker.run_coroutine(self.worker.score(task, events))
        self.records.set_score(row.id, score)
        return score


def _crashed(row: ResultRow) -> bool:
    return bool(((row.score or {}).get("facts") or {}).get("crashed"))
