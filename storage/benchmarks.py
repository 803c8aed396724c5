"""Benchmark runs and their results (tables ``bench_runs`` and ``bench_results``).

A benchmark run is a conversation like any other (its questions are messages, each answered
by an ordinary run whose events are stored as they happen) plus a row saying what was asked
for, and one result row per (question, configuration) naming the run that answered it and
its score. ``run_key`` identifies a run by what it computed (the question and the
configuration), so an identical run is found again, in this or any other benchmark run, and
reused instead of repeated.

    records = BenchRecords(store)
    bench = records.create(...)             # or records.latest(fingerprint, owner)
    records.plan(bench.id, rows)            # one row per (question, configuration)
    records.attach_run(result_id, run_id, message_id)   # before the run starts
    records.set_score(result_id, score)     # after it ended
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from storage.models import DEFAULT_OWNER, BenchResult, BenchRun, Run, new_id, utc_now
from storage.repo import Store

# A run that ended with its answer (or with its own failure: a wrong answer, scored so);
# "running", "cancelled" and "interrupted" runs never ended and are run again.
ENDED_STATUSES = ("ok", "forced", "degraded", "failed")


class BenchRunInfo(BaseModel):
    id: str
    owner: str
    kind: str
    name: str
    benchmark: str
    questions_path: str
    questions_sha256: str
    fingerprint: str
    config: dict[str, Any]
    conversation_id: str | None
    total: int
    created_at: datetime
    finished_at: datetime | None = None


class ResultRow(BaseModel):
    """A planned (question, configuration) pair and, once run, its run and score."""

    id: int = 0
    bench_run_id: str = ""
    item_id: str
    config_key: str
    run_key: str
    config: dict[str, Any]
    labels: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None
    message_id: str | None = None
    score: dict[str, Any] | None = None
    run_status: str | None = None  # of its run, when read with it


class BenchRecords:
    """Reads and writes of the benchmark tables, on the app's ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def _engine(self) -> Any:
        return self.store.engine

    # ------------------------------------------------------------------ benchmark runs

    def create(
        self,
        *,
        kind: str,
        name: str,
        benchmark: str,
        questions_path: str,
        questions_sha256: str,
        fingerprint: str,
        config: dict[str, Any],
        conversation_id: str | None,
        owner: str = DEFAULT_OWNER,
    ) -> BenchRunInfo:
        values = {
            "id": new_id(),
            "owner": owner,
            "kind": kind,
            "name": name,
            "benchmark": benchmark,
            "questions_path": questions_path,
            "questions_sha256": questions_sha256,
            "fingerprint": fingerprint,
            "config": config,
            "conversation_id": conversation_id,
            "total": 0,
            "created_at": utc_now(),
            "finished_at": None,
        }
        with self._engine.begin() as conn:
            conn.execute(insert(BenchRun), [values])
        return BenchRunInfo(**values)

    def get(self, bench_run_id: str) -> BenchRunInfo | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                select(BenchRun.__table__).where(BenchRun.id == bench_run_id)
            ).first()
        return BenchRunInfo(**row._mapping) if row is not None else None

    def latest(self, fingerprint: str, owner: str) -> BenchRunInfo | None:
        """The latest benchmark run with this fingerprint (made by the same command)."""
        stmt = (
            select(BenchRun.__table__)
            .where(BenchRun.fingerprint == fingerprint, BenchRun.owner == owner)
            .order_by(BenchRun.created_at.desc())
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(stmt).first()
        return BenchRunInfo(**row._mapping) if row is not None else None

    def list(self, owners: Iterable[str] | None = None) -> list[BenchRunInfo]:
        """Newest first; only those of ``owners`` when given."""
        stmt = select(BenchRun.__table__).order_by(BenchRun.created_at.desc())
        if owners is not None:
            stmt = stmt.where(BenchRun.owner.in_(list(owners)))
        with self._engine.connect() as conn:
            return [BenchRunInfo(**r._mapping) for r in conn.execute(stmt)]

    def set_conversation(self, bench_run_id: str, conversation_id: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                update(BenchRun)
                .where(BenchRun.id == bench_run_id)
                .values(conversation_id=conversation_id)
            )

    def finish(self, bench_run_id: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                update(BenchRun).where(BenchRun.id == bench_run_id).values(finished_at=utc_now())
            )

    # ------------------------------------------------------------------ results

    def plan(self, bench_run_id: str, rows: Sequence[ResultRow]) -> None:
        """Add the planned rows that are not there yet (a continued run keeps its own)."""
        values = [
            {
                "bench_run_id": bench_run_id,
                "item_id": r.item_id,
                "config_key": r.config_key,
                "run_key": r.run_key,
                "config": r.config,
                "labels": r.labels,
                "run_id": None,
                "message_id": None,
                "score": None,
                "created_at": utc_now(),
            }
            for r in rows
        ]
        with self._engine.begin() as conn:
            dialect = conn.dialect.name
            module = postgresql if dialect == "postgresql" else sqlite
            for start in range(0, len(values), 500):
                stmt = module.insert(BenchResult).values(values[start : start + 500])
                conn.execute(stmt.on_conflict_do_nothing())
            total = conn.scalar(
                select(func.count())
                .select_from(BenchResult)
                .where(BenchResult.bench_run_id == bench_run_id)
            )
            conn.execute(update(BenchRun).where(BenchRun.id == bench_run_id).values(total=total))

    def results(self, bench_run_id: str) -> list[ResultRow]:
        """Every row of a benchmark run with its run's status, in planning order."""
        stmt = (
            select(BenchResult.__table__, Run.status.label("run_status"))
            .outerjoin(Run, Run.id == BenchResult.run_id)
            .where(BenchResult.bench_run_id == bench_run_id)
            .order_by(BenchResult.id)
        )
        with self._engine.connect() as conn:
            return [ResultRow(**r._mapping) for r in conn.execute(stmt)]

    def row_for_run(self, bench_run_id: str, run_id: str) -> ResultRow | None:
        """The row of a benchmark run answered by ``run_id`` (None: not one of its runs)."""
        stmt = (
            select(BenchResult.__table__, Run.status.label("run_status"))
            .join(Run, Run.id == BenchResult.run_id)
            .where(BenchResult.bench_run_id == bench_run_id, BenchResult.run_id == run_id)
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(stmt).first()
        return ResultRow(**row._mapping) if row is not None else None

    def ended_by_key(self, run_keys: Iterable[str]) -> dict[str, ResultRow]:
        """For each key, a scored row of any benchmark run whose run ended (to reuse)."""
        keys = list(dict.fromkeys(run_keys))
        found: dict[str, ResultRow] = {}
        with self._engine.connect() as conn:
            for start in range(0, len(keys), 500):
                stmt = (
                    select(BenchResult.__table__, Run.status.label("run_status"))
                    .join(Run, Run.id == BenchResult.run_id)
                    .where(
                        BenchResult.run_key.in_(keys[start : start + 500]),
                        BenchResult.score.is_not(None),
                        Run.status.in_(ENDED_STATUSES),
                    )
                    .order_by(BenchResult.id)
                )
                for r in conn.execute(stmt):
                    found.setdefault(r.run_key, ResultRow(**r._mapping))
        return found

    def attach_run(self, result_id: int, run_id: str, message_id: str | None) -> None:
        """Name the run answering a row (before it starts: a kill leaves the link)."""
        with self._engine.begin() as conn:
            conn.execute(
                update(BenchResult)
                .where(BenchResult.id == result_id)
                .values(run_id=run_id, message_id=message_id, score=None)
            )

    def set_score(self, result_id: int, score: dict[str, Any]) -> None:
        with self._engine.begin() as conn:
            conn.execute(update(BenchResult).where(BenchResult.id == result_id).values(score=score))

    def reuse(self, result_id: int, source: ResultRow, score: dict[str, Any]) -> None:
        """Point a row at a run another row already has (an identical run made before)."""
        with self._engine.begin() as conn:
            conn.execute(
                update(BenchResult)
                .where(BenchResult.id == result_id)
                .values(run_id=source.run_id, message_id=source.message_id, score=score)
            )
