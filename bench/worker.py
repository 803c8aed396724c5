"""A benchmark worker: the app's service in one process, asking tasks one by one and scoring.

Each worker (an in-process one, a process of the local pool, or a Ray actor) builds what the
app builds at start-up (settings, the store on the same database, the catalogue, the
service with its run manager), so every question is an ordinary stored run and the tool
cache is the app's. Admission limits are off: the benchmark's concurrency is the limit.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agent import events as ev  # noqa: E402
from agent.audio import AudioError  # noqa: E402
from agent.planners.base import PlannerError  # noqa: E402
from agent.registry import Registry  # noqa: E402
from backend.access.body_limits import Limits  # noqa: E402
from backend.benchmarks import BenchmarkAsker  # noqa: E402
from backend.host.settings import Settings  # noqa: E402
from backend.service import AgentService  # noqa: E402
from bench.judge import judge  # noqa: E402
from bench.plan import Task  # noqa: E402
from bench.scoring import RunFacts, Score, score_item  # noqa: E402
from storage import Store  # noqa: E402
from storage.benchmarks import BenchRecords  # noqa: E402

log = logging.getLogger("bench.worker")


@dataclass(frozen=True)
class WorkerEnv:
    """What a worker needs to find the app's data: picklable, sent to every process."""

    data_dir: Path
    db_url: str
    config_path: Path | None = None
    budget: int | None = None
    tool_timeout_s: float | None = None


@dataclass
class Outcome:
    result_id: int
    run_id: str | None
    score: dict[str, Any]
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def bench_settings(env: WorkerEnv, running: int = 64) -> Settings:
    settings = Settings(
        data_dir=env.data_dir,
        db_url=env.db_url,
        config_path=env.config_path,
        warm_up=False,
        max_runs=running,
        run_queue=0,
        owner_runs_per_minute=0,
        owner_max_runs=0,
        limits=Limits(uploads_per_hour=0, stored_mb_per_owner=0),
        budget=env.budget,
    )
    if env.tool_timeout_s:
        settings.tool_timeout_s = env.tool_timeout_s
    return settings


def run_facts(events: list[ev.Event]) -> RunFacts:
    """The prediction and the figures a report needs, from a run's events."""
    facts = RunFacts()
    for event in events:
        if event.type == "answer":
            facts.prediction = event.choice or event.text
            facts.reasoning = event.rationale
            facts.guess = event.guess
        elif event.type == "tool_call":
            facts.tool_calls += 1
        elif event.type == "run_finished":
            facts.calls = event.calls
            facts.input_tokens = event.input_tokens
            facts.output_tokens = event.output_tokens
            facts.cost = event.cost
            facts.wall_s = event.wall_s
            facts.status = event.status
        elif event.type == "run_failed":
            facts.status = (
                "failed" if event.kind not in ("cancelled", "interrupted") else event.kind
            )
            facts.failed = f"{event.kind}: {event.message}"
    return facts


class BenchWorker:
    def __init__(self, env: WorkerEnv, registry: Registry | None = None, running: int = 64):
        self.env = env
        self.store = Store.open(env.db_url, run_migrations=False)
        self.registry = registry or Registry(env.config_path)
        self.service = AgentService(bench_settings(env, running), self.store, self.registry)
        self.asker = BenchmarkAsker(self.service)
        self.records = BenchRecords(self.store)
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, task: Task) -> Outcome:
        """Run one task to its end (for a pool process or a Ray actor: one loop kept)."""
        return self.run_coroutine(self.run_async(task))

    def run_coroutine(self, coroutine: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coroutine)

    async def run_async(self, task: Task) -> Outcome:
        item, config = task.item, task.config
        try:
            audio = await asyncio.to_thread(self.asker.add_audio, item.audio, task.owner)
        except (AudioError, OSError) as exc:
            score = Score(item.kind, None, not_scored=f"audio: {exc}").public()
            return Outcome(task.result_id, None, score, error=str(exc))

        def attach(run_id: str, message_id: str) -> None:
            self.records.attach_run(task.result_id, run_id, message_id)

        asked = await self.asker.ask(
            conversation_id=task.conversation_id,
            owner=task.owner,
            question=item.question,
            choices=config.choices(item),
            audio=audio,
            planner=self.registry.planner(config.planner),
            tools=self.registry.tools(list(config.tools)),
            strategy=config.strategy,
            budget=config.budget,
            message_id=task.message_id,
            on_run=attach,
        )
        score = await self.score(task, asked.events)
        self.records.set_score(task.result_id, score)
        return Outcome(task.result_id, asked.run_id, score)

    async def score(self, task: Task, events: list[ev.Event]) -> dict[str, Any]:
        """Score a run from its events (also a stored run whose score was never written)."""
        facts = run_facts(events)
        verdict, why = None, None
        if task.item.kind == "open" and task.judge and facts.failed is None:
            verdict, why = await self.verdict(task, facts.prediction)
        score = score_item(task.item, facts, similarity=self.registry.similarity, verdict=verdict)
        if why:
            score.not_scored = why
        return score.public()

    async def verdict(self, task: Task, response: str) -> tuple[dict[str, Any] | None, str | None]:
        """The judge's verdict, or why there is none (reported as not scored)."""
        assert task.judge is not None
        try:
            found = await judge(
                self.registry.planner(task.judge), task.item.question, task.item.answer, response
            )
        except PlannerError as exc:
            log.warning("judge failed on %s: %s", task.item.id, exc)
            return None, f"the judge failed: {exc}"
        return found.public(), None

    def close(self) -> None:
        self.service.close()
        self.store.close()
        if self._loop is not None:
            self._loop.close()
