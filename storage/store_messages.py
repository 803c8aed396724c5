"""``Store``'s messages: a message or a whole question (message, title and runs) appended in
one transaction, and the conversation's messages read back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session, sessionmaker

from storage.models import Message
from storage.row_infos import message_info
from storage.run_writes import insert_message, insert_run, new_run_values
from storage.schemas import MessageInfo, RunInfo
from storage.store_base import engine_of, retried

ROLES = ("user", "assistant")


class MessageStore:
    """The messages part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

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
        return retried(self._engine.begin, write)

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

        return retried(self._engine.begin, write)

    def list_messages(self, conversation_id: str, last: int | None = None) -> list[MessageInfo]:
        """The conversation's messages in order, or only its ``last`` ones (plain rows, no
        ORM objects: a long conversation is read in one small statement)."""
        stmt = select(Message.__table__).where(Message.conversation_id == conversation_id)
        if last is None:
            stmt = stmt.order_by(Message.position)
        else:
            stmt = stmt.order_by(Message.position.desc()).limit(max(0, last))
        with self._engine.connect() as conn:
            rows = [message_info(r) for r in conn.execute(stmt)]  # type: ignore[arg-type]
        return rows if last is None else rows[::-1]

    def count_messages(self, conversation_id: str) -> int:
        stmt = select(func.count()).where(Message.conversation_id == conversation_id)
        with self._engine.connect() as conn:
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
