"""Deleting a conversation with everything only it used, and pruning old conversations.

``purge_conversation`` deletes, in one transaction, the conversation (its messages, runs and
events cascade) and, for every recording it referenced that nothing else references any more,
the ``audio`` row and the cached tool results for that audio. It returns those recordings so
the caller can remove their files after the commit (``backend.service`` does, together with
the UI's temporary copies and exports).

A recording is still referenced when any remaining message of any owner points at it, or any
remaining run's ``run_started`` event lists it (``REFERENCE_CHECKS``), or another owner has
an upload reference to it (``audio_refs``); the deleting owner's own reference goes with the
recording, or on its own when none of their conversations uses the kept recording any more.

``stale_conversations`` lists conversations untouched (``updated_at``) before a time, except
those with a run still going, for ``AUDIO_AGENT_RETENTION_DAYS``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from storage.models import (
    Audio,
    AudioOwnerRef,
    Conversation,
    EventRow,
    Message,
    Run,
    ToolCacheEntry,
)
from storage.repo import Store, audio_info
from storage.schemas import AudioInfo


@dataclass
class Purged:
    """What ``purge_conversation`` removed from the database."""

    conversation_id: str
    owner: str
    audio: list[AudioInfo] = field(default_factory=list)  # files still to be removed
    cache_entries: int = 0


def _audio_ids_of_runs(s: Session, run_filter: object) -> set[str]:
    payloads = s.scalars(
        select(EventRow.payload)
        .join(Run, Run.id == EventRow.run_id)
        .join(Message, Message.id == Run.message_id)
        .where(EventRow.type == "run_started", run_filter)  # type: ignore[arg-type]
    )
    return {a for p in payloads for a in (p.get("audio_ids") or []) if isinstance(a, str)}


def _referenced_by_messages(s: Session, audio_ids: set[str]) -> set[str]:
    return set(
        s.scalars(select(Message.audio_id).where(Message.audio_id.in_(audio_ids)).distinct())
    )


def _referenced_by_runs(s: Session, audio_ids: set[str]) -> set[str]:
    # Only runs whose message has no audio_id, or another one, can list these ids without
    # a message pointing at them; rare, so the JSON is read in Python on both databases.
    return _audio_ids_of_runs(s, Message.audio_id.is_(None) | Message.audio_id.not_in(audio_ids))


def _referenced_by_other_owners(s: Session, audio_ids: set[str], owner: str) -> set[str]:
    """Another owner's upload of the same bytes keeps them (they reach it through it)."""
    if not audio_ids:
        return set()
    return set(
        s.scalars(
            select(AudioOwnerRef.audio_id).where(
                AudioOwnerRef.audio_id.in_(audio_ids), AudioOwnerRef.owner != owner
            )
        )
    )


def _drop_unused_refs(s: Session, audio_ids: set[str], owner: str) -> None:
    """The owner's references to kept recordings none of their conversations uses any more."""
    if not audio_ids:
        return
    used = set(
        s.scalars(
            select(Message.audio_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.owner == owner, Message.audio_id.in_(audio_ids))
        )
    )
    if audio_ids - used:
        s.execute(
            delete(AudioOwnerRef).where(
                AudioOwnerRef.owner == owner, AudioOwnerRef.audio_id.in_(audio_ids - used)
            )
        )


# Each returns the ids among ``audio_ids`` that something still in the database points at.
REFERENCE_CHECKS: list[Callable[[Session, set[str]], Iterable[str]]] = [
    _referenced_by_messages,
    _referenced_by_runs,
]


def purge_conversation(store: Store, conversation_id: str) -> Purged | None:
    """Delete the conversation and what only it used (see module doc); None if not found."""
    store.tool_cache.cache_writes.flush()  # cache rows still being written go with the rest
    with store.sessions.begin() as s:
        conv = s.get(Conversation, conversation_id, with_for_update=True)
        if conv is None:
            return None
        purged = Purged(conversation_id, conv.owner)
        mine = set(
            s.scalars(
                select(Message.audio_id).where(
                    Message.conversation_id == conversation_id, Message.audio_id.is_not(None)
                )
            )
        )
        mine |= _audio_ids_of_runs(s, Message.conversation_id == conversation_id)
        s.delete(conv)
        s.flush()  # the cascade removes messages, runs and events before the checks below
        orphans = set(mine)
        for check in REFERENCE_CHECKS:
            if not orphans:
                break
            orphans -= set(check(s, orphans))
        if mine:  # upload references (storage.models.AudioOwnerRef)
            orphans -= _referenced_by_other_owners(s, orphans, purged.owner)
            _drop_unused_refs(s, mine - orphans, purged.owner)
        if orphans:
            rows = list(s.scalars(select(Audio).where(Audio.id.in_(orphans)).with_for_update()))
            purged.audio = [audio_info(r) for r in sorted(rows, key=lambda r: r.id)]
            s.execute(delete(Audio).where(Audio.id.in_(orphans)))
            result = s.execute(delete(ToolCacheEntry).where(ToolCacheEntry.audio_id.in_(orphans)))
            store.tool_cache.cache_writes.forget(set(orphans))
            purged.cache_entries = int(result.rowcount)  # type: ignore[attr-defined]
        return purged


def stale_conversations(store: Store, before: datetime) -> list[str]:
    """Ids of conversations last touched before ``before`` with no run still running."""
    running = (
        select(Message.conversation_id)
        .join(Run, Run.message_id == Message.id)
        .where(Run.status == "running")
    )
    stmt = (
        select(Conversation.id)
        .where(Conversation.updated_at < before, Conversation.id.not_in(running))
        .order_by(Conversation.updated_at, Conversation.id)
    )
    with store.sessions() as s:
        return list(s.scalars(stmt))


def expire_unused_uploads(store: Store, before: datetime) -> list[AudioInfo]:
    """Upload references made before ``before`` that no conversation of their owner uses
    (a recording uploaded and never asked about) are dropped; recordings left without any
    reference, message or run are deleted with their cached tool results. Returns those
    recordings, whose files the caller removes."""
    store.tool_cache.cache_writes.flush()
    with store.sessions.begin() as s:
        used_by_owner = (
            select(Message.audio_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.owner == AudioOwnerRef.owner, Message.audio_id.is_not(None))
        )
        stale = list(
            s.execute(
                select(AudioOwnerRef.owner, AudioOwnerRef.audio_id).where(
                    AudioOwnerRef.created_at < before, AudioOwnerRef.audio_id.not_in(used_by_owner)
                )
            )
        )
        if not stale:
            return []
        for owner, audio_id in stale:
            s.execute(
                delete(AudioOwnerRef).where(
                    AudioOwnerRef.owner == owner, AudioOwnerRef.audio_id == audio_id
                )
            )
        orphans = {audio_id for _, audio_id in stale}
        for check in REFERENCE_CHECKS:
            if not orphans:
                break
            orphans -= set(check(s, orphans))
        if orphans:
            orphans -= set(
                s.scalars(select(AudioOwnerRef.audio_id).where(AudioOwnerRef.audio_id.in_(orphans)))
            )
        if not orphans:
            return []
        rows = list(s.scalars(select(Audio).where(Audio.id.in_(orphans)).with_for_update()))
        s.execute(delete(Audio).where(Audio.id.in_(orphans)))
        s.execute(delete(ToolCacheEntry).where(ToolCacheEntry.audio_id.in_(orphans)))
        store.tool_cache.cache_writes.forget(set(orphans))
        return [audio_info(r) for r in sorted(rows, key=lambda r: r.id)]
