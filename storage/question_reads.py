"""The reads of a question's checks, in statements built once with named parameters.

Before a question is stored, ``AgentService.prepare_many`` reads the conversation, the
owner's recording, the owner's recent activity (admission), the titles a new conversation's
name must differ from, and the earlier turns the planner sees. Building a SQLAlchemy
statement (coercing each clause, computing its cache key) costs more CPU than SQLite takes to
run it, so these are built once, as ``storage.run_writes`` builds the writes, and every call
only binds its values. Plain rows, no ORM objects.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, or_, select

from storage.models import Audio, AudioOwnerRef, Conversation, Message, Run
from storage.run_writes import as_utc
from storage.schemas import AudioInfo, ConversationInfo


@dataclass(frozen=True)
class OwnerActivity:
    """What the admission limits look at for one owner."""

    runs_recent: int  # runs created in the window (runs per minute)
    running: int  # runs running or queued now, in every process
    spent_today_usd: float  # cost of the runs created since the day started (UTC)
    oldest_recent: datetime | None = None  # the first of runs_recent


@dataclass(frozen=True)
class _Reads:
    conversation: Any  # one conversation's row
    owned_audio: Any  # a recording with one owner's reference (name, upload time)
    activity: Any  # an owner's runs: recent, running, spent today, the oldest recent
    titles_from: Any  # an owner's titles that begin with a prefix (but one conversation's)
    prior_turns: Any  # (message, question, choices, answer) of the answered questions


@functools.cache
def _reads() -> _Reads:
    conversations, audio, refs = Conversation.__table__, Audio.__table__, AudioOwnerRef.__table__
    messages, runs = Message.__table__, Run.__table__
    owner, since, day_start = bindparam("p_owner"), bindparam("p_since"), bindparam("p_day")
    owned_runs = (
        select(runs.c.id)
        .join(messages, messages.c.id == runs.c.message_id)
        .join(conversations, conversations.c.id == messages.c.conversation_id)
        .where(conversations.c.owner == owner)
    )
    prefix = bindparam("p_prefix", type_=conversations.c.title.type)  # escaped as stored
    return _Reads(
        conversation=select(conversations).where(conversations.c.id == bindparam("p_id")),
        owned_audio=select(
            audio, refs.c.name.label("ref_name"), refs.c.created_at.label("ref_created_at")
        )
        .join(refs, refs.c.audio_id == audio.c.id)
        .where(refs.c.owner == owner, audio.c.id == bindparam("p_audio_id")),
        activity=select(
            func.count(runs.c.id).filter(runs.c.created_at >= since),
            func.count(runs.c.id).filter(runs.c.status == "running"),
            func.coalesce(func.sum(runs.c.cost).filter(runs.c.created_at >= day_start), 0.0),
            func.min(runs.c.created_at).filter(runs.c.created_at >= since),
        ).where(
            runs.c.id.in_(owned_runs),
            or_(runs.c.created_at >= bindparam("p_earliest"), runs.c.status == "running"),
        ),
        # substr, not LIKE: a title's own % and _ need no escaping.
        titles_from=select(conversations.c.title).where(
            conversations.c.owner == owner,
            conversations.c.id != bindparam("p_id"),
            func.substr(conversations.c.title, 1, func.length(prefix)) == prefix,
        ),
        prior_turns=select(
            messages.c.id,
            messages.c.text,
            messages.c.choices,
            runs.c.answer_choice,
            runs.c.answer_text,
        )  # fmt: skip
        .join(runs, runs.c.message_id == messages.c.id)
        .where(
            messages.c.conversation_id == bindparam("p_id"),
            messages.c.role == "user",
            runs.c.answer_text.is_not(None),
            runs.c.answer_text != "",
        )
        .order_by(messages.c.position, runs.c.created_at, runs.c.id),
    )


def conversation(conn: Connection, conversation_id: str) -> ConversationInfo | None:
    row = conn.execute(_reads().conversation, {"p_id": conversation_id}).first()
    return conversation_info(row) if row is not None else None


def conversation_info(row: Any) -> ConversationInfo:
    """A conversation's row (plain or ORM) as the API shows it."""
    return ConversationInfo(
        id=row.id,
        owner=row.owner,
        title=row.title,
        created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at),
    )


OWNERS = {"name", "created_at"}  # an owner's own, from their reference to the recording


def owned_audio(conn: Connection, audio_id: str, owner: str) -> AudioInfo | None:
    """The recording as ``owner`` uploaded it (its name, its upload time); None without
    that owner's reference."""
    row = conn.execute(_reads().owned_audio, {"p_owner": owner, "p_audio_id": audio_id}).first()
    if row is None:
        return None
    stored = {name: getattr(row, name) for name in AudioInfo.model_fields.keys() - OWNERS}
    return AudioInfo(**stored, name=row.ref_name, created_at=as_utc(row.ref_created_at))


def owner_activity(
    conn: Connection, owner: str, since: datetime, day_start: datetime
) -> OwnerActivity:
    """Runs of ``owner`` created since ``since``, running now, and the cost of the runs
    created since ``day_start`` (spent so far, also by runs still going)."""
    values = {
        "p_owner": owner,
        "p_since": since,
        "p_day": day_start,
        "p_earliest": min(since, day_start),
    }
    recent, running, spent, oldest = conn.execute(_reads().activity, values).one()
    return OwnerActivity(
        int(recent), int(running), float(spent), as_utc(oldest) if oldest else None
    )


def titles_from(conn: Connection, owner: str, prefix: str, except_id: str = "") -> set[str]:
    """``owner``'s conversation titles that begin with ``prefix`` (not ``except_id``'s)."""
    values = {"p_owner": owner, "p_prefix": prefix, "p_id": except_id}
    return set(conn.scalars(_reads().titles_from, values))


def prior_turns(conn: Connection, conversation_id: str) -> Iterator[tuple[str, list[str], str]]:
    """(question, choices, answer) of each answered user message, in order.

    The answer is the first answered run's choice, else its text (what a planner sees as
    the conversation's history)."""
    seen: set[str] = set()
    for message_id, text, choices, choice, answer in conn.execute(
        _reads().prior_turns, {"p_id": conversation_id}
    ):
        if message_id in seen:
            continue
        seen.add(message_id)
        yield text, list(choices or []), choice or answer or ""
