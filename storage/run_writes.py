"""The writes of a question and its run, in plain statements on one connection.

Asking a question stores a message and a run row, then the run's events in batches; each of
these is a few SQL statements with no ORM unit of work (``Store`` calls them inside its own
transactions). ``warm_statements`` runs all of them once in a transaction that is rolled
back, so the first question of a process finds its connection open and its statements
compiled (SQLAlchemy caches compiled statements per engine) instead of paying for both.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Connection,
    Float,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    insert,
    literal,
    select,
    update,
)

from agent.events import (
    Answer,
    Event,
    RunFailed,
    RunFinished,
    RunStarted,
    Thought,
    ToolResultEvent,
)
from storage.models import (
    DEFAULT_TITLE,
    Audio,
    Conversation,
    EventRow,
    Message,
    Run,
    new_id,
    utc_now,
)
from storage.schemas import ConversationInfo, MessageInfo, RunInfo

TITLE_CHARS = 60


class RunClosedError(LookupError):
    """Events for a run that is no longer running (e.g. marked interrupted by another
    process after its lease expired): nothing of the batch was stored."""


def make_title(text: str, limit: int = TITLE_CHARS) -> str:
    """A one-line title from a question: whitespace collapsed, cut near ``limit`` chars."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


def insert_conversation(conn: Connection, title: str, owner: str) -> ConversationInfo:
    now = utc_now()
    row = {"id": new_id(), "owner": owner, "title": title, "created_at": now, "updated_at": now}
    conn.execute(_statements().insert_conversation, row)
    return ConversationInfo(**{**row, "created_at": as_utc(now), "updated_at": as_utc(now)})


@dataclass(frozen=True)
class _Statements:
    """A question's statements, built once with named parameters: building a SQLAlchemy
    statement (coercing every clause, computing its cache key) costs more CPU than running
    it on SQLite, and these run several times per question."""

    insert_conversation: Any
    insert_message: Any
    insert_run: Any
    insert_events: Any
    touch: Any  # the conversation's updated_at; RETURNING its id (None: no such conversation)
    touch_and_title: Any  # the same, and the title when it is still the default
    next_position: Any  # the last position, and whether the audio exists
    next_position_no_audio: Any
    fold: Any  # a batch of events folded into its run's row (``fold_values``); RETURNING it
    fold_running: Any  # the same, only while the run is running


@functools.cache
def _statements() -> _Statements:
    conversations, messages, runs = Conversation.__table__, Message.__table__, Run.__table__
    conversation_id = bindparam("p_conversation_id")
    touch = (
        update(conversations)
        .where(conversations.c.id == conversation_id)
        .values(updated_at=bindparam("p_now"))
    )
    untitled = and_(
        conversations.c.title == DEFAULT_TITLE,
        ~exists().where(messages.c.conversation_id == conversation_id, messages.c.role == "user"),
    )
    titled = bindparam("p_title", type_=conversations.c.title.type)  # escaped as stored
    last = func.max(messages.c.position)
    where = messages.c.conversation_id == conversation_id
    fold = update(runs).where(runs.c.id == bindparam("p_run_id")).values(**_folded(runs))
    return _Statements(
        insert_conversation=insert(conversations),
        insert_message=insert(messages),
        insert_run=insert(Run.__table__),
        insert_events=insert(EventRow.__table__),
        touch=touch.returning(conversations.c.id),
        touch_and_title=touch.values(
            title=case((untitled, titled), else_=conversations.c.title)
        ).returning(conversations.c.id),
        next_position=select(
            last, exists().where(Audio.__table__.c.id == bindparam("p_audio_id"))
        ).where(where),
        next_position_no_audio=select(last, literal(True)).where(where),
        fold=fold.returning(runs),
        fold_running=fold.where(runs.c.status == "running").returning(runs),
    )


def _folded(runs: Any) -> dict[str, Any]:
    """Each column's new value in the one statement that folds any batch (``fold_values``
    gives the parameters): one shape for every batch, so it is built and compiled once. A
    parameter left NULL keeps the column; an answer and the cost say whether they apply."""

    def param(name: str, column: Any) -> Any:
        value = bindparam(f"p_{name}", type_=column.type)
        # PostgreSQL must know each parameter's type; its dialect casts strings, integers
        # and times itself, not floats. (No cast on SQLite for times: it would make them
        # numbers.)
        return cast(value, column.type) if isinstance(column.type, Float) else value

    def kept_unless_given(name: str) -> Any:
        column = runs.c[name]
        return func.coalesce(param(name, column), column)

    answered = cast(bindparam("p_answered", type_=Boolean()), Boolean())
    total = param("cost", runs.c.cost)
    spent = cast(bindparam("p_spent", type_=runs.c.cost.type), runs.c.cost.type)
    values = {name: kept_unless_given(name) for name in FOLDED_COLUMNS}
    for name in ("answer_text", "answer_choice"):  # an answer without a choice clears it
        values[name] = case((answered, param(name, runs.c[name])), else_=runs.c[name])
    values["cost"] = case((total.is_not(None), total), else_=runs.c.cost + spent)
    values["heartbeat_at"] = param("heartbeat_at", runs.c.heartbeat_at)
    return values


# Columns a batch may set (``fold_values``); NULL in its parameters keeps them as they are.
FOLDED_COLUMNS = (
    "calls", "input_tokens", "output_tokens", "wall_s", "status", "finished_at", "error",
    "error_kind",
)  # fmt: skip


def insert_message(
    conn: Connection,
    conversation_id: str,
    role: str,
    text: str,
    choices: list[str],
    audio_id: str | None,
    title: str | None = None,
) -> MessageInfo:
    """Append a message at the next position and touch the conversation (see
    ``Store.add_message``). Raises LookupError for an unknown conversation or audio.

    ``title``: the name a conversation still called "New conversation" takes from its first
    question (default: the question, cut short)."""
    # Write first: that takes the conversation's row lock on PostgreSQL and the write lock
    # on SQLite before the next position is read, so writers to one conversation take turns
    # instead of racing for it (and retrying).
    statements = _statements()
    now = utc_now()
    params: dict[str, Any] = {"p_conversation_id": conversation_id, "p_now": now}
    new_title = (title or make_title(text)) if role == "user" else ""
    if new_title:  # the first question names a conversation still called "New conversation"
        touched = conn.scalar(statements.touch_and_title, {**params, "p_title": new_title})
    else:
        touched = conn.scalar(statements.touch, params)
    if touched is None:
        raise LookupError(f"No conversation {conversation_id!r}")
    if audio_id is None:
        position = conn.execute(statements.next_position_no_audio, params).one()
    else:
        position = conn.execute(statements.next_position, {**params, "p_audio_id": audio_id})
        position = position.one()
    last, has_audio = position
    if not has_audio:
        raise LookupError(f"No audio {audio_id!r}; call add_audio first")
    row = {
        "id": new_id(),
        "conversation_id": conversation_id,
        "position": (last or 0) + 1,
        "role": role,
        "text": text,
        "choices": choices,
        "audio_id": audio_id,
        "created_at": now,
    }
    conn.execute(statements.insert_message, row)
    return MessageInfo(**{**row, "created_at": as_utc(now)})


def new_run_values(
    run_id: str,
    message_id: str,
    planner: str,
    strategy: str,
    tools: Iterable[str],
    group_id: str | None,
    worker_id: str | None,
) -> dict[str, Any]:
    """A new run's row: status "running", no totals yet; its lease starts now."""
    now = utc_now()
    return {
        "id": run_id,
        "message_id": message_id,
        "group_id": group_id,
        "planner": planner,
        "strategy": strategy,
        "tools": list(tools),
        "status": "running",
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": 0.0,
        "created_at": now,
        "worker_id": worker_id,
        "heartbeat_at": now if worker_id else None,
    }


def insert_run(conn: Connection, values: dict[str, Any]) -> RunInfo:
    """Insert a run row (IntegrityError if its message does not exist)."""
    conn.execute(_statements().insert_run, values)
    shown = {k: v for k, v in values.items() if k in RunInfo.model_fields}
    return RunInfo(**{**shown, "created_at": as_utc(values["created_at"])})


def append_batch(conn: Connection, events: Sequence[Event], *, require_running: bool) -> Any:
    """Insert one run's events and fold them into its row (see ``Store.append_events``);
    returns the run's row as it is now."""
    run_id = events[0].run_id
    values = fold_values(events)
    params: dict[str, Any] = {f"p_{name}": values.get(name) for name in FOLDED_COLUMNS}
    params.update(
        p_run_id=run_id,
        p_heartbeat_at=utc_now(),
        p_answered="answer_text" in values,
        p_answer_text=values.get("answer_text"),
        p_answer_choice=values.get("answer_choice"),
        p_cost=values.get("cost"),
        p_spent=values.get("spent", 0.0),
    )
    rows = [
        {
            "run_id": run_id,
            "seq": e.seq,
            "type": e.type,
            "payload": e.model_dump(mode="json"),
            "at": e.at,
        }
        for e in events
    ]
    statements = _statements()
    fold = statements.fold_running if require_running else statements.fold
    row = conn.execute(fold, params).first()
    if row is None:
        status = conn.scalar(select(Run.status).where(Run.id == run_id))
        if status is None:
            raise LookupError(f"No run {run_id!r}; call create_run first")
        raise RunClosedError(f"Run {run_id!r} is {status}, no longer running")
    conn.execute(_statements().insert_events, rows)
    return row


def fold_values(events: Sequence[Event]) -> dict[str, Any]:
    """Column values of a run's row after a batch of its events: the answer, the totals and
    status when it ends; the cost grows with each paid step (``spent``: what the batch adds)
    until ``run_finished`` sets the total (``cost``)."""
    values: dict[str, Any] = {}
    spent = 0.0
    for event in events:
        if isinstance(event, Thought | ToolResultEvent):
            spent += event.cost
        elif isinstance(event, Answer):
            values.update(answer_text=event.text, answer_choice=event.choice)
        elif isinstance(event, RunFinished):
            values.update(
                calls=event.calls,
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                cost=event.cost,
                wall_s=event.wall_s,
                status=event.status,
                finished_at=event.at,
            )
        elif isinstance(event, RunFailed):
            values.update(
                status=failed_status(event),
                error=event.message,
                error_kind=event.kind,
                finished_at=event.at,
            )
    if spent and "cost" not in values:
        values["spent"] = spent
    return values


def failed_status(event: RunFailed) -> str:
    return event.kind if event.kind in ("cancelled", "interrupted") else "failed"


def warm_statements(conn: Connection, owner: str) -> None:
    """Store a question, its run and a run's kinds of event batches on ``conn``; the caller
    rolls the transaction back (``Store.warm_up``)."""
    conversation = insert_conversation(conn, DEFAULT_TITLE, owner)
    message = insert_message(conn, conversation.id, "user", "warm-up", [], None)
    values = new_run_values(new_id(), message.id, "", "", [], None, "warm-up")
    insert_run(conn, values)
    run_id = values["id"]
    started = RunStarted(run_id=run_id, seq=1, question="", planner="")
    paid = Thought(run_id=run_id, seq=2, turn=1, text="", cost=0.001)
    answer = Answer(run_id=run_id, seq=3, text="")
    finished = RunFinished(
        run_id=run_id, seq=4, calls=0, input_tokens=0, output_tokens=0, cost=0.0, wall_s=0.0
    )
    # Batches of one event and of several: SQLAlchemy compiles a statement apart for each
    # (``executemany`` is part of its cache key).
    for batch in ([started, paid], [answer], [finished]):
        append_batch(conn, batch, require_running=batch[0] is not finished)
    failed = RunFailed(run_id=run_id, seq=5, kind="internal_error", message="")
    append_batch(conn, [failed], require_running=False)
    insert_message(conn, conversation.id, "assistant", "warm-up", [], None)
    with contextlib.suppress(LookupError):  # a question about a recording (none here)
        insert_message(conn, conversation.id, "user", "warm-up", [], "warm-up")


def as_utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes; everything stored is UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
