"""``Store``'s runs and their events: a run registered, its events appended and folded into
its row, its heartbeat (lease), its reads, and the closing of runs a dead process left."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from agent.events import Event, RunFailed, parse_event
from storage import question_reads
from storage.models import Conversation, EventRow, Message, Run, utc_now
from storage.question_reads import OwnerActivity
from storage.row_infos import run_info
from storage.run_writes import append_batch, as_utc, fold_values, insert_run, new_run_values
from storage.schemas import RunInfo
from storage.store_base import engine_of

INTERRUPTED_ERROR = "interrupted (server stopped)"


class RunStore:
    """The runs and events part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

    def create_run(
        self,
        run_id: str,
        message_id: str,
        planner: str,
        strategy: str,
        tools: Iterable[str],
        group_id: str | None = None,
        worker_id: str | None = None,
    ) -> RunInfo:
        """Register a run (status "running") before its events are appended.

        ``worker_id``: the process that runs it; its heartbeat (lease) starts now."""
        values = new_run_values(run_id, message_id, planner, strategy, tools, group_id, worker_id)
        try:  # one plain insert; the foreign key says whether the message exists
            with self._engine.begin() as conn:
                return insert_run(conn, values)
        except IntegrityError as exc:
            with self._sessions() as s:
                missing = s.get(Message, message_id) is None
            if missing:
                raise LookupError(f"No message {message_id!r}") from exc
            raise

    def append_event(self, event: Event) -> None:
        """Store one event (committed at once) and fold it into the run's row.

        ``answer`` sets answer_text/answer_choice; ``run_finished`` sets the totals, status
        and finished_at; ``run_failed`` sets status "failed" (or "cancelled"/"interrupted"
        by its kind), error, error_kind, finished_at.
        Raises LookupError for an unknown run, ValueError for a seq already stored.
        """
        self.append_events([event], require_running=False)

    def append_events(
        self, events: Sequence[Event], *, require_running: bool = True
    ) -> RunInfo | None:
        """Store a batch of one run's events in one transaction, folded into its row (see
        ``append_event``), and refresh the run's heartbeat; returns the run as it is now
        (None for no events).

        With ``require_running`` (the run manager's writes) a run that is no longer running
        raises ``RunClosedError`` and nothing is stored: another process closed it.
        Plain inserts (no ORM objects): one small transaction per batch.
        """
        if not events:
            return None
        run_id = events[0].run_id
        if any(e.run_id != run_id for e in events):
            raise ValueError("append_events takes the events of one run")
        try:
            with self._engine.begin() as conn:
                return run_info(append_batch(conn, events, require_running=require_running))
        except IntegrityError as exc:
            seqs = ", ".join(str(e.seq) for e in events)
            raise ValueError(f"Event seq {seqs} of run {run_id!r} is already stored") from exc

    def heartbeat(self, worker_id: str) -> int:
        """Refresh the lease of every running run of this worker; returns how many."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(Run)
                .where(Run.worker_id == worker_id, Run.status == "running")
                .values(heartbeat_at=utc_now())
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def owner_activity(self, owner: str, since: datetime, day_start: datetime) -> OwnerActivity:
        """Runs of ``owner`` created since ``since``, running now, and the cost of the runs
        created since ``day_start`` (spent so far, also by runs still going)."""
        with self._engine.connect() as conn:
            return question_reads.owner_activity(conn, owner, since, day_start)

    def get_run(self, run_id: str, owner: str | None = None) -> RunInfo | None:
        """The run; None if there is none, or (``owner`` given) it is in someone else's
        conversation."""
        stmt = select(Run.__table__).where(Run.id == run_id)
        if owner is not None:
            stmt = stmt.join(Message, Message.id == Run.message_id).join(
                Conversation,
                (Conversation.id == Message.conversation_id) & (Conversation.owner == owner),
            )
        with self._engine.connect() as conn:  # a plain row: no session, no ORM object
            row = conn.execute(stmt).first()
        return run_info(row) if row is not None else None  # type: ignore[arg-type]

    def runs_for_message(self, message_id: str, owner: str | None = None) -> list[RunInfo]:
        """The runs answering one user message, oldest first (none of another owner's)."""
        stmt = select(Run).where(Run.message_id == message_id).order_by(Run.created_at, Run.id)
        if owner is not None:
            stmt = stmt.join(Message, Message.id == Run.message_id).join(
                Conversation,
                (Conversation.id == Message.conversation_id) & (Conversation.owner == owner),
            )
        with self._sessions() as s:
            return [run_info(r) for r in s.scalars(stmt)]

    def conversation_runs(
        self, conversation_id: str, from_position: int | None = None
    ) -> dict[str, list[RunInfo]]:
        """Every run of a conversation (of its messages from ``from_position`` on) by message
        id, oldest first: rows only, no events.

        One query of plain rows, whatever the length of the conversation."""
        stmt = (
            select(Run.__table__)
            .join(Message, Run.message_id == Message.id)
            .where(Message.conversation_id == conversation_id)
            .order_by(Run.created_at, Run.id)
        )
        if from_position is not None:
            stmt = stmt.where(Message.position >= from_position)
        runs: dict[str, list[RunInfo]] = {}
        with self._engine.connect() as conn:
            for row in conn.execute(stmt):
                runs.setdefault(row.message_id, []).append(run_info(row))  # type: ignore[arg-type]
        return runs

    def prior_turns(self, conversation_id: str) -> list[tuple[str, list[str], str]]:
        """(question, choices, answer) of each answered user message, in order; one query.

        The answer is the first answered run's choice, else its text (what a planner sees as
        the conversation's history)."""
        with self._engine.connect() as conn:
            return list(question_reads.prior_turns(conn, conversation_id))

    def events_for_runs(
        self, run_ids: Iterable[str], types: Iterable[str] | None = None
    ) -> dict[str, list[Event]]:
        """The events of several runs in one query, by run id, each in seq order; with
        ``types``, only the events of those types (e.g. a run's start, answer and end)."""
        wanted = list(run_ids)
        out: dict[str, list[Event]] = {run_id: [] for run_id in wanted}
        if not wanted:
            return out
        stmt = (
            select(EventRow.run_id, EventRow.payload)
            .where(EventRow.run_id.in_(wanted))
            .order_by(EventRow.run_id, EventRow.seq)
        )
        if types is not None:
            stmt = stmt.where(EventRow.type.in_(list(types)))
        with self._sessions() as s:
            rows = list(s.execute(stmt))
        for run_id, payload in rows:
            out[run_id].append(parse_event(payload))
        return out

    def run_events(self, run_id: str, after: int = 0) -> list[Event]:
        """The run's events in seq order (those after seq ``after``), as typed events."""
        stmt = select(EventRow.payload).where(EventRow.run_id == run_id).order_by(EventRow.seq)
        if after:
            stmt = stmt.where(EventRow.seq > after)
        with self._sessions() as s:
            payloads = list(s.scalars(stmt))
        return [parse_event(p) for p in payloads]

    def stale_run_workers(self, lease_s: float) -> dict[str, tuple[datetime, datetime]]:
        """Workers with running runs whose lease expired: worker id -> (its latest heartbeat,
        the creation of its oldest such run), for deciding whether the worker is dead."""
        cutoff = utc_now() - timedelta(seconds=lease_s)
        stmt = (
            select(Run.worker_id, func.max(Run.heartbeat_at), func.min(Run.created_at))
            .where(
                Run.status == "running",
                Run.worker_id.is_not(None),
                Run.heartbeat_at < cutoff,
            )
            .group_by(Run.worker_id)
        )
        with self._engine.connect() as conn:
            return {
                str(worker): (as_utc(beat), as_utc(created))
                for worker, beat, created in conn.execute(stmt)
            }

    def mark_interrupted_runs(
        self,
        worker_id: str | None = None,
        lease_s: float | None = None,
        *,
        unowned: bool = True,
        only_workers: Sequence[str] | None = None,
        message: str = INTERRUPTED_ERROR,
    ) -> list[str]:
        """Close runs left "running" by a stopped or dead server process; returns their ids.

        Without arguments every running run is closed (one process on its database). With
        ``worker_id`` and ``lease_s``: only this worker's own runs (left by its previous
        life), runs of no worker (unless ``unowned`` is False), and runs whose heartbeat is
        older than ``lease_s``: a live
        process's runs are never touched. ``only_workers``: of those, only the runs of these
        workers. Each gets status "interrupted", error ``message`` and a final
        ``run_failed`` event (kind "interrupted") after its last stored event, so replaying
        its events ends properly.
        """
        stale = [Run.status == "running"]
        if lease_s is not None:
            cutoff = utc_now() - timedelta(seconds=lease_s)
            stale.append(
                or_(
                    *([Run.worker_id.is_(None), Run.heartbeat_at.is_(None)] if unowned else []),
                    Run.heartbeat_at < cutoff,
                    *([Run.worker_id == worker_id] if worker_id else []),
                )
            )
        if only_workers is not None:
            stale.append(Run.worker_id.in_(list(only_workers)))
        with self._sessions() as s:
            run_ids = list(s.scalars(select(Run.id).where(*stale)))
        closed: list[str] = []
        for run_id in run_ids:
            with self._engine.begin() as conn:
                failed = RunFailed(run_id=run_id, seq=1, kind="interrupted", message=message)
                values = fold_values([failed])
                values["heartbeat_at"] = None
                # Conditional: a run that finished or beat its heartbeat meanwhile is kept.
                if not conn.execute(
                    update(Run).where(Run.id == run_id, *stale).values(**values)
                ).rowcount:  # type: ignore[attr-defined]
                    continue
                last = conn.scalar(select(func.max(EventRow.seq)).where(EventRow.run_id == run_id))
                failed = failed.model_copy(update={"seq": (last or 0) + 1})
                conn.execute(
                    insert(EventRow),
                    [
                        {
                            "run_id": run_id,
                            "seq": failed.seq,
                            "type": failed.type,
                            "payload": failed.model_dump(mode="json"),
                            "at": failed.at,
                        }
                    ],
                )
            closed.append(run_id)
        return closed
