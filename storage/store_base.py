"""What every part of ``Store`` (``storage.repo``) stands on: its sessions, its engine, and
writes retried when a concurrent writer took the same unique value first."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")


class StoreBase:
    """The sessions ``Store`` is built with; each part of it (``storage.store_*``,
    ``storage.tool_cache``, ``storage.conversation_export``) opens its own from them."""

    _sessions: sessionmaker[Session]

    @property
    def engine(self) -> Engine:
        bind = self._sessions.kw["bind"]
        assert isinstance(bind, Engine)
        return bind

    def _retry_on_conflict_plain(self, write: Callable[[Connection], T], attempts: int = 5) -> T:
        """``_retry_on_conflict`` for writes in plain statements (no session)."""
        for attempt in range(attempts):
            try:
                with self.engine.begin() as conn:
                    return write(conn)
            except IntegrityError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def _retry_on_conflict(self, write: Callable[[Session], T], attempts: int = 5) -> T:
        for attempt in range(attempts):
            try:
                with self._sessions.begin() as s:
                    return write(s)
            except IntegrityError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")
