"""Engine, sessions and migrations.

``make_engine(url)`` accepts any SQLAlchemy URL. For SQLite (the default) it creates the
file's folder and sets, on every new connection, WAL journal mode (readers do not block
the writer), foreign keys on (so deletes cascade) and a busy timeout (concurrent writers
wait instead of failing). ``migrate(url_or_engine)`` brings the schema to the newest
Alembic revision without needing an alembic.ini at run time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from storage.location import url_from_env

SQLITE_BUSY_TIMEOUT_MS = 30_000
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def default_url() -> str:
    """The URL the app opens: ``AUDIO_AGENT_DB_URL``, else the SQLite file in the data folder
    (``AUDIO_AGENT_DATA_DIR``, ...; ``storage.location`` has the rule)."""
    return url_from_env(os.environ)


def _is_memory(url: URL) -> bool:
    db = url.database or ""
    return db in ("", ":memory:") or (db.startswith("file:") and "mode=memory" in db)


def make_engine(url: str | URL, **kwargs: Any) -> Engine:
    """An engine for ``url``; SQLite gets WAL, foreign keys, a busy timeout and a folder."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_pre_ping", True)
        return create_engine(parsed, **kwargs)

    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args.setdefault("check_same_thread", False)
    if _is_memory(parsed):
        # One shared connection, or every thread would see its own empty database.
        kwargs.setdefault("poolclass", StaticPool)
    else:
        db = parsed.database or ""
        path = Path(db[len("file:") :].split("?")[0] if db.startswith("file:") else db)
        path.expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    return engine


def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose loaded attributes stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def alembic_config(url_or_engine: str | URL | Engine | None = None) -> Any:
    """An Alembic ``Config`` built in code (no alembic.ini needed)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    if isinstance(url_or_engine, Engine):
        cfg.attributes["engine"] = url_or_engine
    elif url_or_engine is not None:
        # Passed as an attribute, not a main option: configparser would choke on '%'.
        cfg.attributes["url"] = str(
            url_or_engine.render_as_string(hide_password=False)
            if isinstance(url_or_engine, URL)
            else url_or_engine
        )
    return cfg


def migrate(url_or_engine: str | URL | Engine | None = None, revision: str = "head") -> None:
    """Run ``alembic upgrade <revision>`` on a URL or engine (default: ``default_url()``)."""
    from alembic import command

    command.upgrade(alembic_config(url_or_engine or default_url()), revision)
