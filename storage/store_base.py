"""What every part of ``Store`` (``storage.repo``) stands on: its sessions, its engine, and
writes retried when a concurrent writer took the same unique value first."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from typing import Any, TypeVar

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
        return _retried(self.engine.begin, write, attempts)

    def _retry_on_conflict(self, write: Callable[[Session], T], attempts: int = 5) -> T:
        return _retried(self._sessions.begin, write, attempts)


def _retried(
    begin: Callable[[], ContextManager[Any]], write: Callable[[Any], T], attempts: int
) -> T:
    """``write`` in a transaction from ``begin``, again (after a short pause) when a
    concurrent writer took the same unique value first; the last conflict is raised."""
    for attempt in range(attempts):
        try:
            with begin() as transaction:
                return write(transaction)
        except IntegrityError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")
