"""``Store``'s conversations: create, list (with the sidebar's recordings and spinners), read,
rename, delete."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from storage import question_reads
from storage.models import (
    DEFAULT_OWNER,
    DEFAULT_TITLE,
    AudioOwnerRef,
    Conversation,
    Message,
    Run,
    utc_now,
)
from storage.row_infos import owned_conversation
from storage.run_writes import insert_conversation
from storage.schemas import ConversationInfo
from storage.store_base import engine_of


class ConversationStore:
    """The conversations part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

    def create_conversation(
        self, title: str = DEFAULT_TITLE, owner: str = DEFAULT_OWNER
    ) -> ConversationInfo:
        with self._engine.begin() as conn:
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
        with self._engine.connect() as conn:
            return {row[0] for row in conn.execute(stmt)}

    def get_conversation(
        self, conversation_id: str, owner: str | None = None
    ) -> ConversationInfo | None:
        """The conversation; None if there is none, or (``owner`` given) it is someone else's."""
        with self._engine.connect() as conn:  # a plain row: no session, no ORM object
            info = question_reads.conversation(conn, conversation_id)
        if info is None or (owner is not None and info.owner != owner):
            return None
        return info

    def titles_from(self, owner: str, prefix: str, except_id: str = "") -> set[str]:
        """``owner``'s conversation titles that begin with ``prefix`` (not ``except_id``'s):
        those a new title must differ from, read without the owner's whole list."""
        with self._engine.connect() as conn:
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
