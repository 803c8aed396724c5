"""``Store``: every read and write of the app's database, returning plain pydantic models.

Each method opens one short session and closes it before returning, so one ``Store`` can be
shared by all threads of the web app. Nothing returned holds on to a session.

``Store`` is composed here of its parts, one module each, reached as its attributes:
``conversations`` (``storage.store_conversations``), ``recordings``
(``storage.store_recordings``), ``shares`` (``storage.store_shares``), ``messages``
(``storage.store_messages``), ``runs`` and their events (``storage.store_runs``), ``export``
(``storage.conversation_export``) and ``tool_cache`` (``storage.tool_cache``). Each part is
given the sessionmaker and keeps its own state (``storage.store_base`` holds what they share
as functions: the engine of a sessionmaker, a write retried on conflict); no part inherits
another's fields or reaches into them. ``store.runs.get_run(...)``, never a flat
``store.get_run(...)``.
"""

from __future__ import annotations

from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from agent.events import ToolResult
from storage.conversation_export import EXPORT_FORMAT, ExportStore
from storage.db import make_engine, migrate, session_factory
from storage.models import utc_now
from storage.question_reads import OwnerActivity
from storage.row_infos import audio_info
from storage.run_writes import TITLE_CHARS, make_title, warm_statements
from storage.store_base import engine_of
from storage.store_conversations import ConversationStore
from storage.store_messages import ROLES, MessageStore
from storage.store_recordings import DECODED_BYTES_PER_S, RecordingStore
from storage.store_runs import INTERRUPTED_ERROR, RunStore
from storage.store_shares import ShareStore
from storage.tool_cache import SqlToolCache, ToolCacheStore, write_cache_rows

# Importable from here, as before the parts had modules of their own (tests, callers).
__all__ = [
    "DECODED_BYTES_PER_S",
    "EXPORT_FORMAT",
    "INTERRUPTED_ERROR",
    "ROLES",
    "TITLE_CHARS",
    "OwnerActivity",
    "SqlToolCache",
    "Store",
    "audio_info",
    "make_title",
]


class Store:
    """The app's database. Build with ``Store(sessionmaker)`` or ``Store.open(url)``.

    Composed of its parts, each given the sessionmaker and owning what it keeps (the tool
    cache its writes behind the runs); reach the data through them, by concept:
    ``store.conversations``, ``store.recordings``, ``store.shares``, ``store.messages``,
    ``store.runs`` (and their events), ``store.export`` and ``store.tool_cache``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        # For the storage modules whose one transaction spans the parts (storage.cleanup).
        self.sessions = sessions
        self.engine = engine_of(sessions)
        self.conversations = ConversationStore(sessions)
        self.recordings = RecordingStore(sessions)
        self.shares = ShareStore(sessions)
        self.messages = MessageStore(sessions)
        self.runs = RunStore(sessions)
        self.export = ExportStore(sessions)
        self.tool_cache = ToolCacheStore(sessions)

    @classmethod
    def open(cls, url: str | URL, *, run_migrations: bool = True) -> Store:
        """Engine for ``url`` (see ``make_engine``), migrated to head unless told not to."""
        engine = make_engine(url)
        if run_migrations:
            migrate(engine)
        return cls(session_factory(engine))

    def close(self) -> None:
        self.tool_cache.cache_writes.close()
        self.engine.dispose()

    def warm_up(self) -> None:
        """Make a process's first question cost what later ones cost: a pooled connection,
        and the statements that store a question, its run and its events compiled once
        (SQLAlchemy caches them per engine) in a transaction that is rolled back, then the
        run path's reads. Nothing is stored."""
        with self.engine.connect() as conn:
            transaction = conn.begin()
            try:
                warm_statements(conn, owner="warm-up")
                # the tool cache's upsert and hit count, for one row and for several
                # (SQLAlchemy compiles ``executemany`` apart)
                row = ("", "", ToolResult(output=""))
                write_cache_rows(conn, {"warm-up": row}, {"x": 1})
                write_cache_rows(conn, {"warm-up": row, "warm-up 2": row}, {"x": 1, "y": 1})
            finally:
                transaction.rollback()
        now = utc_now()
        self.conversations.get_conversation("", owner="warm-up")
        self.recordings.audio_infos([""], "warm-up")
        self.recordings.get_audio("", "warm-up")
        self.conversations.titles_from("warm-up", "warm-up")
        self.runs.prior_turns("")
        self.runs.owner_activity("warm-up", now, now)
        self.runs.get_run("")
        self.runs.run_events("")
        self.tool_cache.cache_get_many(["", " "])
