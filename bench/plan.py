"""Configurations, the keys that identify a run by what it computes, and the tasks sent to
the workers.

A run is identified by its ``run_key``: the sha256 of the question as asked (the recordings'
sha256s, the text, the choices in the order shown, the answer and, for MMAU-Pro, the
instruction) and of the configuration (planner and the model behind it, strategy, the tool
set and their models, seed, budget). Two benchmark runs asking the same thing share the run:
it is made once and reused.

The seed is not sent to any model: it picks the choices' order when they are shuffled
(``shuffle``), and a different seed is a different run, so asking an LLM planner again with
another seed samples it again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.formats import Item, shuffled_choices

TEXT_ONLY = "none"  # --tools none: the planner alone, the paper's text-only baseline


def sha256_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Config:
    planner: str
    strategy: str
    tools: tuple[str, ...]  # sorted; () is the text-only baseline
    seed: int = 0
    budget: int | None = None
    shuffle: bool = False

    def public(self) -> dict[str, Any]:
        return {**asdict(self), "tools": list(self.tools)}

    @property
    def key(self) -> str:
        return sha256_json(self.public())

    @classmethod
    def of(cls, data: dict[str, Any]) -> Config:
        return cls(
            planner=data["planner"],
            strategy=data["strategy"],
            tools=tuple(sorted(data.get("tools") or ())),
            seed=int(data.get("seed") or 0),
            budget=data.get("budget"),
            shuffle=bool(data.get("shuffle")),
        )

    def choices(self, item: Item) -> list[str]:
        return shuffled_choices(item, self.seed) if self.shuffle else list(item.choices)


def audio_sha256(paths: list[Path], cache: dict[Path, str]) -> list[str]:
    out = []
    for path in paths:
        if path not in cache:
            cache[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append(cache[path])
    return out


def run_key(item: Item, config: Config, audio_ids: list[str], models: dict[str, Any]) -> str:
    """See the module docstring. ``models``: the model id behind each planner/tool name."""
    return sha256_json(
        {
            "audio": audio_ids,
            "question": item.question,
            "choices": config.choices(item),
            "answer": item.answer,
            "kind": item.kind,
            "instruction": [item.raw.get("task_identifier"), item.raw.get("kwargs")],
            "config": config.public(),
            "models": {n: models.get(n) for n in (config.planner, *config.tools)},
        }
    )


@dataclass
class Task:
    """One (question, configuration) to run: what a worker needs, nothing more."""

    result_id: int
    bench_run_id: str
    conversation_id: str
    owner: str
    item: Item
    config: Config
    message_id: str | None = None  # answer this stored question again (a rerun)
    judge: str | None = None  # planner name of the judge for open-ended items
    extra: dict[str, Any] = field(default_factory=dict)
