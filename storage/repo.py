"""``Store``: every read and write of the app's database, returning plain pydantic models.

Each method opens one short session and closes it before returning, so one ``Store`` can be
shared by all threads of the web app. Nothing returned holds on to a session.

The export (``storage.conversation_export``) and the tool cache (``storage.tool_cache``) are
parts of their own, on ``storage.store_base``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, func, insert, or_, select, update
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from agent.audio import AudioRef
from agent.events import Event, RunFailed, parse_event
from agent.tools.base import ToolResult
from storage import question_reads
from storage.cache_writes import CacheWrites
from storage.conversation_export import EXPORT_FORMAT, ExportStore
from storage.db import make_engine, migrate, session_factory
from storage.models import (
    DEFAULT_OWNER,
    DEFAULT_TITLE,
    Audio,
    AudioOwnerRef,
    Conversation,
    EventRow,
    Message,
    Run,
    ShareLink,
    utc_now,
)
from storage.question_reads import OwnerActivity
from storage.row_infos import audio_info, message_info, owned_conversation, run_info
from storage.run_writes import (
    TITLE_CHARS,
    append_batch,
    as_utc,
    fold_values,
    insert_conversation,
    insert_message,
    insert_run,
    make_title,
    new_run_values,
    warm_statements,
)
from storage.schemas import AudioInfo, ConversationInfo, MessageInfo, RunInfo
from storage.tool_cache import SqlToolCache, ToolCacheStore, write_cache_rows

DECODED_BYTES_PER_S = 16_000 * 2  # the stored copy of every recording: 16 kHz mono 16-bit
ROLES = ("user", "assistant")
INTERRUPTED_ERROR = "interrupted (server stopped)"

# Importable from here, as before the parts had modules of their own (tests, callers).
__all__ = [
    "DECODED_BYTES_PER_S",
    "EXPORT_FORMAT",
    "INTERRUPTED_ERROR",
    "ROLES",
    "TITLE_CHARS",
    "OwnerActivity",
    "SqlToolCache",
    "Store",
    "audio_info",
    "make_title",
]


class Store(ExportStore, ToolCacheStore):
    """The app's database. Build with ``Store(sessionmaker)`` or ``Store.open(url)``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        # Tool-cache rows and hit counts written behind the runs (storage.cache_writes).
        self.cache_writes = CacheWrites(self._write_cache)

    @classmethod
    def open(cls, url: str | URL, *, run_migrations: bool = True) -> Store:
        """Engine for ``url`` (see ``make_engine``), migrated to head unless told not to."""
        engine = make_engine(url)
        if run_migrations:
            migrate(engine)
        return cls(session_factory(engine))

    def close(self) -> None:
        self.cache_writes.close()
        self.engine.dispose()

    def warm_up(self) -> None:
        """Make a process's first question cost what later ones cost: a pooled connection,
        and the statements that store a question, its run and its events compiled once
        (SQLAlchemy caches them per engine) in a transaction that is rolled back, then the
        run path's reads. Nothing is stored."""
        with self.engine.connect() as conn:
            transaction = conn.begin()
            try:
                warm_statements(conn, owner="warm-up")
                # the tool cache's upsert and hit count
                write_cache_rows(conn, {"warm-up": ("", "", ToolResult(output=""))}, {"x": 1})
            finally:
                transaction.rollback()
        now = utc_now()
        self.get_conversation("", owner="warm-up")
        self.audio_infos([""], "warm-up")
        self.get_audio("", "warm-up")
        self.titles_from("warm-up", "warm-up")
        self.prior_turns("")
        self.owner_activity("warm-up", now, now)
        self.get_run("")
        self.run_events("")
        self.cache_get_many(["", " "])

    # ------------------------------------------------------------------ conversations

    def create_conversation(
        self, title: str = DEFAULT_TITLE, owner: str = DEFAULT_OWNER
    ) -> ConversationInfo:
        with self.engine.begin() as conn:
            return insert_conversation(conn, title, owner)

    def list_conversations(self, owner: str | None = None) -> list[ConversationInfo]:
        """Newest activity first; every owner's when ``owner`` is None."""
        stmt = select(Conversation).order_by(
            Conversation.updated_at.desc(), Conversation.created_at.desc(), Conversation.id
        )
        if owner is not None:
            stmt = stmt.where(Conversation.owner == owner)
        with self._sessions() as s:
            return [question_reads.conversation_info(r) for r in s.scalars(stmt)]

    def conversation_audio_names(self, conversation_ids: Iterable[str]) -> dict[str, list[str]]:
        """The file names of each conversation's recordings, in the order first used (one
        query for the whole sidebar)."""
        ids = list(conversation_ids)
        if not ids:
            return {}
        stmt = (
            select(Message.conversation_id, AudioOwnerRef.name)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .join(  # the owner's own name for each recording, never another owner's
                AudioOwnerRef,
                (AudioOwnerRef.audio_id == Message.audio_id)
                & (AudioOwnerRef.owner == Conversation.owner),
            )
            .where(Message.conversation_id.in_(ids))
            .order_by(Message.conversation_id, Message.position)
        )
        names: dict[str, list[str]] = {}
        with self._sessions() as s:
            for conversation_id, name in s.execute(stmt):
                found = names.setdefault(conversation_id, [])
                if name and name not in found:
                    found.append(name)
        return names

    def running_conversations(self, conversation_ids: Iterable[str]) -> set[str]:
        """Those of ``conversation_ids`` with a run still going (one query for the sidebar's
        spinners)."""
        ids = list(conversation_ids)
        if not ids:
            return set()
        stmt = (
            select(Message.conversation_id)
            .join(Run, Run.message_id == Message.id)
            .where(Message.conversation_id.in_(ids), Run.status == "running")
            .distinct()
        )
        with self.engine.connect() as conn:
            return {row[0] for row in conn.execute(stmt)}

    def get_conversation(
        self, conversation_id: str, owner: str | None = None
    ) -> ConversationInfo | None:
        """The conversation; None if there is none, or (``owner`` given) it is someone else's."""
        with self.engine.connect() as conn:  # a plain row: no session, no ORM object
            info = question_reads.conversation(conn, conversation_id)
        if info is None or (owner is not None and info.owner != owner):
            return None
        return info

    def titles_from(self, owner: str, prefix: str, except_id: str = "") -> set[str]:
        """``owner``'s conversation titles that begin with ``prefix`` (not ``except_id``'s):
        those a new title must differ from, read without the owner's whole list."""
        with self.engine.connect() as conn:
            return question_reads.titles_from(conn, owner, prefix, except_id)

    def rename_conversation(
        self, conversation_id: str, title: str, owner: str | None = None
    ) -> ConversationInfo | None:
        """Set the title (and updated_at); None if there is no such conversation (of ``owner``)."""
        with self._sessions.begin() as s:
            row = owned_conversation(s.get(Conversation, conversation_id), owner)
            if row is None:
                return None
            row.title = title
            row.updated_at = utc_now()
            s.flush()
            return question_reads.conversation_info(row)

    def delete_conversation(self, conversation_id: str, owner: str | None = None) -> bool:
        """Delete it with its messages, runs and events; False if it did not exist (or is
        not ``owner``'s).

        Rows only: ``AgentService.delete_conversation`` (``storage.cleanup``) also removes the
        audio, cache entries and files that only this conversation used."""
        stmt = delete(Conversation).where(Conversation.id == conversation_id)
        if owner is not None:
            stmt = stmt.where(Conversation.owner == owner)
        with self._sessions.begin() as s:
            result = s.execute(stmt)
            return bool(result.rowcount)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ audio

    def add_audio(self, ref: AudioRef, size_bytes: int) -> None:
        """Record a stored recording; a second call with the same id does nothing."""
        if self.get_audio(ref.id) is not None:
            return
        row = Audio(
            id=ref.id,
            name=ref.name,
            format=ref.format,
            duration_s=float(ref.duration_s),
            sample_rate=int(ref.original_sample_rate),
            channels=int(ref.original_channels),
            stored_path=str(ref.path),
            original_path=str(ref.original_path),
            size_bytes=int(size_bytes),
            created_at=utc_now(),
        )
        try:
            with self._sessions.begin() as s:
                s.add(row)
        except IntegrityError:
            # Another thread stored the same recording between the check and the insert.
            if self.get_audio(ref.id) is None:
                raise

    def get_audio(self, audio_id: str, owner: str | None = None) -> AudioInfo | None:
        """The recording; with ``owner``, only through that owner's reference (None without
        one), and with that owner's file name and upload time."""
        if owner is None:
            stmt = select(Audio.__table__).where(Audio.id == audio_id)
            with self.engine.connect() as conn:
                row = conn.execute(stmt).first()
            return audio_info(row) if row is not None else None  # type: ignore[arg-type]
        with self.engine.connect() as conn:
            return question_reads.owned_audio(conn, audio_id, owner)

    def audio_infos(self, audio_ids: Iterable[str], owner: str) -> dict[str, AudioInfo]:
        """``get_audio`` for several recordings in one query: those ``owner`` has a
        reference to, by id, under that owner's names."""
        wanted = list(dict.fromkeys(audio_ids))
        if not wanted:
            return {}
        stmt = (
            select(Audio, AudioOwnerRef)
            .join(AudioOwnerRef, AudioOwnerRef.audio_id == Audio.id)
            .where(AudioOwnerRef.owner == owner, Audio.id.in_(wanted))
        )
        with self._sessions() as s:
            return {row.id: audio_info(row, ref) for row, ref in s.execute(stmt)}

    def add_audio_ref(self, owner: str, audio_id: str, name: str = "") -> None:
        """Give ``owner`` a reference to a stored recording (kept if it exists: the first
        name this owner used stays)."""

        def write(s: Session) -> None:
            if s.get(AudioOwnerRef, (owner, audio_id)) is None:
                s.add(
                    AudioOwnerRef(owner=owner, audio_id=audio_id, name=name, created_at=utc_now())
                )
                s.flush()

        self._retry_on_conflict(write)

    def stored_bytes(self, owner: str) -> int:
        """Bytes on disk of the recordings ``owner`` uploaded or uses: the original as
        uploaded plus the decoded 16 kHz mono copy, each recording counted once, whether a
        question used it yet or not. Deleting a conversation (or an unused upload expiring)
        frees what only it held."""
        used = (
            select(Message.audio_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.owner == owner, Message.audio_id.is_not(None))
        )
        uploaded = select(AudioOwnerRef.audio_id).where(AudioOwnerRef.owner == owner)
        decoded = Audio.duration_s * DECODED_BYTES_PER_S
        with self._sessions() as s:
            total = s.execute(
                select(func.coalesce(func.sum(Audio.size_bytes + decoded), 0)).where(
                    or_(Audio.id.in_(used), Audio.id.in_(uploaded))
                )
            ).scalar_one()
        return int(total)

    # ------------------------------------------------------------------ share links

    def set_share(self, conversation_id: str, token_hash: str) -> None:
        """Make ``token_hash`` the conversation's one share link (replacing an older one)."""
        with self._sessions.begin() as s:
            s.execute(delete(ShareLink).where(ShareLink.conversation_id == conversation_id))
            s.add(
                ShareLink(
                    token_hash=token_hash, conversation_id=conversation_id, created_at=utc_now()
                )
            )

    def revoke_share(self, conversation_id: str) -> bool:
        """Drop the conversation's share link; False if it had none."""
        with self._sessions.begin() as s:
            result = s.execute(
                delete(ShareLink).where(ShareLink.conversation_id == conversation_id)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def shared_conversation_id(self, token_hash: str) -> str | None:
        """The conversation a share link opens, or None."""
        with self._sessions() as s:
            row = s.get(ShareLink, token_hash)
            return row.conversation_id if row is not None else None

    def is_shared(self, conversation_id: str) -> bool:
        stmt = select(ShareLink.token_hash).where(ShareLink.conversation_id == conversation_id)
        with self._sessions() as s:
            return s.scalar(stmt.limit(1)) is not None

    # ------------------------------------------------------------------ messages

    def add_message(
        self,
        conversation_id: str,
        role: str,
        text: str,
        choices: Iterable[str] | None = None,
        audio_id: str | None = None,
    ) -> MessageInfo:
        """Append a message (next position) and touch the conversation.

        The first user message of a conversation still titled "New conversation" also
        gives it a title (the question's first ~60 characters).
        Raises LookupError if the conversation does not exist.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        choice_list = [str(c) for c in (choices or [])]

        def write(conn: Connection) -> MessageInfo:
            return insert_message(conn, conversation_id, role, text, choice_list, audio_id)

        # Two writers may pick the same next position; the unique constraint catches it.
        return self._retry_on_conflict_plain(write)

    def add_question(
        self,
        conversation_id: str,
        text: str,
        choices: Iterable[str],
        audio_id: str | None,
        runs: Sequence[tuple[str, str, str]],
        tools: Iterable[str],
        *,
        group_id: str | None = None,
        worker_id: str | None = None,
        title: str | None = None,
    ) -> tuple[MessageInfo, list[RunInfo]]:
        """A user's question and its runs (``(run_id, planner, strategy)``, each running
        ``tools``) in one transaction: ``add_message`` then ``create_run`` for each.

        ``title``: the conversation's name if it is still "New conversation"."""
        choice_list, tool_names = [str(c) for c in choices], list(tools)

        def write(conn: Connection) -> tuple[MessageInfo, list[RunInfo]]:
            message = insert_message(
                conn, conversation_id, "user", text, choice_list, audio_id, title=title
            )
            infos = [
                insert_run(
                    conn,
                    new_run_values(
                        run_id, message.id, planner, strategy, tool_names, group_id, worker_id
                    ),
                )
                for run_id, planner, strategy in runs
            ]
            return message, infos

        return self._retry_on_conflict_plain(write)

    def list_messages(self, conversation_id: str, last: int | None = None) -> list[MessageInfo]:
        """The conversation's messages in order, or only its ``last`` ones (plain rows, no
        ORM objects: a long conversation is read in one small statement)."""
        stmt = select(Message.__table__).where(Message.conversation_id == conversation_id)
        if last is None:
            stmt = stmt.order_by(Message.position)
        else:
            stmt = stmt.order_by(Message.position.desc()).limit(max(0, last))
        with self.engine.connect() as conn:
            rows = [message_info(r) for r in conn.execute(stmt)]  # type: ignore[arg-type]
        return rows if last is None else rows[::-1]

    def count_messages(self, conversation_id: str) -> int:
        stmt = select(func.count()).where(Message.conversation_id == conversation_id)
        with self.engine.connect() as conn:
            return int(conn.scalar(stmt) or 0)

    def latest_audio_id(self, conversation_id: str) -> str | None:
        """The recording of the conversation's latest message that has one (one row read)."""
        stmt = (
            select(Message.audio_id)
            .where(Message.conversation_id == conversation_id, Message.audio_id.is_not(None))
            .order_by(Message.position.desc())
            .limit(1)
        )
        with self._sessions() as s:
            return s.scalar(stmt)

    def get_message(self, message_id: str) -> MessageInfo | None:
        with self._sessions() as s:
            row = s.get(Message, message_id)
            return message_info(row) if row is not None else None

    # ------------------------------------------------------------------ runs and events

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
            with self.engine.begin() as conn:
                return insert_run(conn, values)
        except IntegrityError as exc:
            if self.get_message(message_id) is None:
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
            with self.engine.begin() as conn:
                return run_info(append_batch(conn, events, require_running=require_running))
        except IntegrityError as exc:
            seqs = ", ".join(str(e.seq) for e in events)
            raise ValueError(f"Event seq {seqs} of run {run_id!r} is already stored") from exc

    def heartbeat(self, worker_id: str) -> int:
        """Refresh the lease of every running run of this worker; returns how many."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(Run)
                .where(Run.worker_id == worker_id, Run.status == "running")
                .values(heartbeat_at=utc_now())
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def owner_activity(self, owner: str, since: datetime, day_start: datetime) -> OwnerActivity:
        """Runs of ``owner`` created since ``since``, running now, and the cost of the runs
        created since ``day_start`` (spent so far, also by runs still going)."""
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:  # a plain row: no session, no ORM object
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
        with self.engine.connect() as conn:
            for row in conn.execute(stmt):
                runs.setdefault(row.message_id, []).append(run_info(row))  # type: ignore[arg-type]
        return runs

    def prior_turns(self, conversation_id: str) -> list[tuple[str, list[str], str]]:
        """(question, choices, answer) of each answered user message, in order; one query.

        The answer is the first answered run's choice, else its text (what a planner sees as
        the conversation's history)."""
        with self.engine.connect() as conn:
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
        with self.engine.connect() as conn:
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
            with self.engine.begin() as conn:
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
