"""Progress of a benchmark on the terminal: done / total, running accuracy, cost so far,
questions per minute and the time left (rich). Without a terminal (a log file, CI) one line
every tenth of the way instead of a bar."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn


class BenchProgress:
    def __init__(self, total: int, done: int, *, label: str, quiet: bool = False) -> None:
        self.total = total
        self.done = done
        self.started_with = done
        self.begun = time.monotonic()
        self.values: list[float] = []
        self.cost = 0.0
        self.quiet = quiet
        self.label = label
        self.live = sys.stderr.isatty() and not quiet
        self._next_line = 0.0
        self._bar: Progress | None = None
        if self.live:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task(label, total=total, completed=done, stats="")

    def add_known(self, score: dict[str, Any]) -> None:
        """A result that was there before (done earlier, or reused): counts in accuracy."""
        self._count(score)

    def _count(self, score: dict[str, Any]) -> None:
        if score.get("value") is not None:
            self.values.append(float(score["value"]))
        self.cost += float((score.get("facts") or {}).get("cost") or 0.0)

    def advance(self, score: dict[str, Any]) -> None:
        self.done += 1
        self._count(score)
        stats = self.stats()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, stats=stats)
        elif not self.quiet and (self.done >= self._next_line or self.done == self.total):
            print(f"{self.label}: {self.done}/{self.total} {stats}", file=sys.stderr, flush=True)
            self._next_line = self.done + max(1, self.total // 10)

    def per_minute(self) -> float:
        elapsed = time.monotonic() - self.begun
        ran = self.done - self.started_with
        return 60.0 * ran / elapsed if elapsed > 0 and ran else 0.0

    def stats(self) -> str:
        accuracy = f"{100 * sum(self.values) / len(self.values):.1f} %" if self.values else "-"
        rate = self.per_minute()
        left = self.total - self.done
        eta = f"{left / rate:.1f} min" if rate else "-"
        return f"acc {accuracy} · ${self.cost:.4f} · {rate:.1f} q/min · ETA {eta}"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
