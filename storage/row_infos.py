"""Rows of the database as the plain pydantic models ``Store`` returns (``storage.schemas``),
and the ownership check of a conversation's row. (A conversation's row becomes
``ConversationInfo`` in ``storage.question_reads``.)

ORM objects and plain rows (``select(Table.__table__)``) alike: they read the same attributes.
"""

from __future__ import annotations

from datetime import datetime

from storage.models import Audio, AudioOwnerRef, Conversation, Message, Run
from storage.run_writes import as_utc
from storage.schemas import AudioInfo, MessageInfo, RunInfo


def owned_conversation(row: Conversation | None, owner: str | None) -> Conversation | None:
    """The row if it is ``owner``'s (or no owner is asked about); else None."""
    if row is None or (owner is not None and row.owner != owner):
        return None
    return row


def audio_info(
    row: Audio, ref: AudioOwnerRef | None = None, *, name_only_from_ref: bool = False
) -> AudioInfo:
    """An audio row; with an owner's reference, under that owner's name and upload time.

    ``name_only_from_ref``: without a reference the name is empty (never the name another
    owner uploaded it with)."""
    fallback = "" if name_only_from_ref else row.name
    name = ref.name if ref is not None else fallback
    return AudioInfo(
        id=row.id,
        name=name,
        format=row.format,
        duration_s=row.duration_s,
        sample_rate=row.sample_rate,
        channels=row.channels,
        stored_path=row.stored_path,
        original_path=row.original_path,
        size_bytes=row.size_bytes,
        created_at=as_utc(ref.created_at if ref is not None else row.created_at),
    )


def message_info(row: Message) -> MessageInfo:
    return MessageInfo(
        id=row.id,
        conversation_id=row.conversation_id,
        position=row.position,
        role=row.role,  # type: ignore[arg-type]
        text=row.text,
        choices=list(row.choices or []),
        audio_id=row.audio_id,
        created_at=as_utc(row.created_at),
    )


def run_info(row: Run) -> RunInfo:
    return RunInfo(
        id=row.id,
        message_id=row.message_id,
        group_id=row.group_id,
        planner=row.planner,
        strategy=row.strategy,
        tools=list(row.tools or []),
        status=row.status,  # type: ignore[arg-type]
        answer_text=row.answer_text,
        answer_choice=row.answer_choice,
        calls=row.calls,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cost=row.cost,
        wall_s=row.wall_s,
        error=row.error,
        error_kind=row.error_kind,
        created_at=as_utc(row.created_at),
        finished_at=_utc_opt(row.finished_at),
        worker_id=row.worker_id,
    )


def _utc_opt(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None
