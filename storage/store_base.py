"""What every part of ``Store`` (``storage.repo``) is built with: the sessionmaker, its engine,
and writes retried when a concurrent writer took the same unique value first.

Each part (``storage.store_*``, ``storage.tool_cache``, ``storage.conversation_export``) is
given the sessionmaker in its constructor and keeps its own reference: no part inherits
another's state or reaches into it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")


def engine_of(sessions: sessionmaker[Session]) -> Engine:
    """The engine ``sessions`` is bound to."""
    bind = sessions.kw["bind"]
    assert isinstance(bind, Engine)
    return bind


def retried(
    begin: Callable[[], ContextManager[Any]], write: Callable[[Any], T], attempts: int = 5
) -> T:
    """``write`` in a transaction from ``begin`` (``engine.begin`` for plain statements,
    ``sessions.begin`` for a session), again (after a short pause) when a concurrent writer
    took the same unique value first; the last conflict is raised."""
    for attempt in range(attempts):
        try:
            with begin() as transaction:
                return write(transaction)
        except IntegrityError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")
