"""``Store``'s share links: one per conversation, kept as the hash of its token."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from storage.models import ShareLink, utc_now
from storage.store_base import engine_of


class ShareStore:
    """The share links part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

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
