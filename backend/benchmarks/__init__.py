"""Benchmark questions asked as ordinary stored runs, and the read side of benchmark runs.

``BenchmarkAsker`` asks one benchmark question the way the app asks any: the recordings go
into the audio store (a reference for the benchmark's owner), the question becomes a message
of the benchmark run's conversation, and the run goes through the service's run manager,
which stores every event as it happens (so each trace opens like any other, and a run cut
short is there up to its last event). ``bench`` drives it; it knows nothing of scoring.

``BenchmarkView`` is what the Benchmarks tab and the reports read: benchmark runs a viewer
may see (their own, and those of the CLI's default owner ``local``), their configurations
with accuracy, cost and time, a configuration's questions, and a question's trace.

The folder also holds the analyses of stored benchmark runs (``analysis``: attribution,
ablation, accuracy against cost) and the Shapley estimator they use (``shapley``).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.audio import AudioRef
from agent.planners.base import Planner
from agent.run import RunRequest
from agent.tools.base import Tool
from backend.service import AgentService
from storage.benchmarks import BenchRecords, BenchRunInfo, ResultRow
from storage.models import DEFAULT_OWNER

# BenchRunInfo and ResultRow: the records the Benchmarks tab reads, handed out from here.
__all__ = ["BenchRunInfo", "ResultRow"]

PUBLIC_OWNER = DEFAULT_OWNER  # benchmark runs of this owner are shown to every viewer

OnRun = Callable[[str, str], Awaitable[None] | None]


@dataclass
class Asked:
    run_id: str
    message_id: str
    events: list[ev.Event]


class BenchmarkAsker:
    """Asks benchmark questions through an ``AgentService`` (see the module docstring)."""

    def __init__(self, service: AgentService) -> None:
        self.service = service
        self.store = service.store

    def add_audio(self, paths: Sequence[Path], owner: str) -> list[AudioRef]:
        """Store the recordings (shared by identical bytes) with a reference for ``owner``."""
        refs = []
        for path in paths:
            ref = self.service.audio.add_file(path)
            self.store.recordings.add_audio(ref, size_bytes=path.stat().st_size)
            self.store.recordings.add_audio_ref(owner, ref.id, path.name)
            refs.append(dataclasses.replace(ref, name=path.name))
        return refs

    async def ask(
        self,
        *,
        conversation_id: str,
        owner: str,
        question: str,
        choices: list[str],
        audio: list[AudioRef],
        planner: Planner,
        tools: list[Tool],
        strategy: str,
        budget: int | None = None,
        message_id: str | None = None,
        on_run: OnRun | None = None,
    ) -> Asked:
        """One stored run; ``message_id``: answer that question again (a rerun) instead of
        adding it. ``on_run(run_id, message_id)`` is called before the run starts."""
        if message_id is None:
            message = self.store.messages.add_message(
                conversation_id,
                "user",
                question,
                choices=choices,
                audio_id=audio[0].id if audio else None,
            )
            message_id = message.id
        settings = self.service.settings
        request = RunRequest(
            question=question,
            choices=list(choices),
            audio=list(audio),
            planner=planner,
            tools=list(tools),
            strategy=strategy,
            budget=budget if budget is not None else settings.budget,
            tool_timeout_s=settings.tool_timeout_s,
        )
        self.store.runs.create_run(
            request.run_id,
            message_id,
            planner.name,
            strategy,
            [t.name for t in tools],
            worker_id=self.service.runs.worker_id,
        )
        if on_run is not None:
            done = on_run(request.run_id, message_id)
            if done is not None:
                await done
        run_ids = self.service.start_runs(conversation_id, [request], owner=owner)
        events = [event async for event in self.service.follow(run_ids)]
        return Asked(request.run_id, message_id, events)


# ---------------------------------------------------------------------------- the read side


@dataclass
class ConfigSummary:
    """One configuration of a benchmark run, over its scored questions."""

    key: str
    config: dict[str, Any]
    planned: int = 0
    done: int = 0
    scored: int = 0
    accuracy: float | None = None  # mean score value, 0..1
    mean_cost: float = 0.0
    mean_calls: float = 0.0
    mean_wall_s: float = 0.0
    label: str = ""
    values: list[float] = field(default_factory=list, repr=False)


def config_label(config: dict[str, Any]) -> str:
    tools = config.get("tools") or []
    tools_text = "no tools" if not tools else f"{len(tools)} tool" + ("s" if len(tools) > 1 else "")
    seed = config.get("seed")
    return " · ".join(
        str(p)
        for p in (config.get("planner"), config.get("strategy"), tools_text)
        + ((f"seed {seed}",) if seed else ())
    )


def summarise(rows: Sequence[ResultRow]) -> list[ConfigSummary]:
    """Per configuration, in the order first planned: accuracy over the scored questions
    (not-scored ones left out), and the mean cost, calls and time of the answered ones."""
    by_key: dict[str, ConfigSummary] = {}
    facts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        summary = by_key.get(row.config_key)
        if summary is None:
            summary = by_key[row.config_key] = ConfigSummary(
                row.config_key, row.config, label=config_label(row.config)
            )
        summary.planned += 1
        if row.score is None:
            continue
        summary.done += 1
        facts[row.config_key].append(row.score.get("facts") or {})
        if row.score.get("value") is not None:
            summary.values.append(float(row.score["value"]))
    for key, summary in by_key.items():
        summary.scored = len(summary.values)
        summary.accuracy = statistics.mean(summary.values) if summary.values else None
        answered = facts[key]
        if answered:
            summary.mean_cost = statistics.mean(float(f.get("cost") or 0) for f in answered)
            summary.mean_calls = statistics.mean(float(f.get("calls") or 0) for f in answered)
            summary.mean_wall_s = statistics.mean(float(f.get("wall_s") or 0) for f in answered)
    return list(by_key.values())


class BenchmarkView:
    """Benchmark runs as a viewer may see them (see the module docstring)."""

    def __init__(self, service: AgentService) -> None:
        self.service = service
        self.records = BenchRecords(service.store)

    def visible(self, owner: str) -> list[BenchRunInfo]:
        return self.records.list(dict.fromkeys([owner, PUBLIC_OWNER]))

    def get(self, bench_run_id: str, owner: str) -> BenchRunInfo | None:
        info = self.records.get(bench_run_id)
        return info if info is not None and info.owner in (owner, PUBLIC_OWNER) else None

    def rows(self, bench_run_id: str, owner: str) -> list[ResultRow]:
        return self.records.results(bench_run_id) if self.get(bench_run_id, owner) else []

    def configurations(self, bench_run_id: str, owner: str) -> list[ConfigSummary]:
        return summarise(self.rows(bench_run_id, owner))

    def trace(self, bench_run_id: str, run_id: str, owner: str) -> list[ev.Event]:
        """A question's events, if the run belongs to this benchmark run and it is visible."""
        if self.get(bench_run_id, owner) is None:
            return []
        if self.records.row_for_run(bench_run_id, run_id) is None:
            return []
        return self.service.store.runs.run_events(run_id)
