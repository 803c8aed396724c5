"""Rows of the ``sessions`` table: login cookies and API tokens that logout can revoke.

Only the sha256 of a session id is stored; the id itself travels, signed, in the cookie or
bearer token (``backend.access.identity``). A session is valid while it exists, is not revoked and
has not expired.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update

from storage.models import LoginSession, utc_now
from storage.repo import Store

KINDS = ("cookie", "token")


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class LoginSessions:
    """The ``sessions`` table of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, session_id: str, owner: str, kind: str, lifetime_s: float) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        now = utc_now()
        with self.store.engine.begin() as conn:
            conn.execute(
                LoginSession.__table__.insert().values(
                    token_hash=session_hash(session_id),
                    owner=owner,
                    kind=kind,
                    created_at=now,
                    expires_at=now + timedelta(seconds=lifetime_s),
                    revoked_at=None,
                )
            )

    def owner_of(self, session_id: str) -> str | None:
        """The owner of a valid session (not revoked, not expired), else None."""
        stmt = select(LoginSession.owner, LoginSession.expires_at, LoginSession.revoked_at).where(
            LoginSession.token_hash == session_hash(session_id)
        )
        with self.store.engine.connect() as conn:
            row = conn.execute(stmt).first()
        if row is None or row.revoked_at is not None or _utc(row.expires_at) <= utc_now():
            return None
        return str(row.owner)

    def revoke(self, session_id: str) -> bool:
        """Revoke one session; False if it was not valid."""
        return self._revoke(LoginSession.token_hash == session_hash(session_id)) > 0

    def revoke_owner(self, owner: str) -> int:
        """Revoke every session and token of ``owner`` (logout everywhere); how many."""
        return self._revoke(LoginSession.owner == owner)

    def _revoke(self, condition: object) -> int:
        with self.store.engine.begin() as conn:
            result = conn.execute(
                update(LoginSession)
                .where(condition, LoginSession.revoked_at.is_(None))  # type: ignore[arg-type]
                .values(revoked_at=utc_now())
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def prune(self, before: datetime) -> int:
        """Forget sessions that expired or were revoked before ``before``."""
        with self.store.engine.begin() as conn:
            result = conn.execute(
                delete(LoginSession).where(
                    (LoginSession.expires_at < before) | (LoginSession.revoked_at < before)
                )
            )
            return int(result.rowcount)  # type: ignore[attr-defined]


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
