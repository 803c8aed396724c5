"""Alembic environment for the storage package.

The database comes from, in order: an ``engine`` or ``connection`` put in
``config.attributes`` by ``storage.db.migrate``; a ``url`` attribute; the ini's
``sqlalchemy.url``; else the database the app itself opens with this environment
(``storage.db.default_url``: ``AUDIO_AGENT_DB_URL``, else the SQLite file in
``AUDIO_AGENT_DATA_DIR`` or its default; the rule is ``storage.location``'s, shared with
``backend.host.settings``), so ``alembic -c storage/alembic.ini upgrade head`` migrates that one.
"""

from __future__ import annotations

from logging.config import fileConfig
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from storage.db import default_url, make_engine
from storage.models import Base

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _run(connection: Connection, *, own_transaction: bool) -> None:
    # Batch migrations copy and drop tables; with foreign keys on, dropping a parent would
    # cascade-delete its children. So they are off while we migrate a connection we own,
    # and back on (after the commit: the pragma is a no-op inside a transaction) at the end.
    toggle_fks = own_transaction and connection.dialect.name == "sqlite"
    if toggle_fks:
        connection.exec_driver_sql("PRAGMA foreign_keys = OFF")
    try:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        if own_transaction:
            connection.commit()
    finally:
        if toggle_fks:
            connection.rollback()
            connection.exec_driver_sql("PRAGMA foreign_keys = ON")
            connection.commit()


def run_migrations_offline() -> None:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url") or default_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection: Any = config.attributes.get("connection")
    if connection is not None:
        _run(connection, own_transaction=False)
        return
    engine = config.attributes.get("engine")
    owned = engine is None
    if owned:
        url = (
            config.attributes.get("url")
            or config.get_main_option("sqlalchemy.url")
            or default_url()
        )
        engine = make_engine(url)
    try:
        with engine.connect() as conn:
            _run(conn, own_transaction=True)
    finally:
        if owned:
            engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
