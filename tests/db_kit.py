"""Database fixtures: the same tests on SQLite and on a real PostgreSQL server.

Loaded as a pytest plugin for every test run (``-p tests.db_kit`` in pyproject.toml).

PostgreSQL comes from ``AUDIO_AGENT_TEST_PG_URL`` (``.ci/run`` starts a throwaway server with
``.ci/postgres.sh`` and sets it). Each test gets its own freshly created schema in that
database (selected through the URL's ``options=-csearch_path=...``), dropped afterwards, so
tests never see each other's rows and the migrations run from scratch every time.

Without the variable the PostgreSQL half of each test is skipped, with the reason, on a
developer's machine; in CI (``CI`` set to true) it fails instead, so the PostgreSQL tests can
never be silently skipped there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL_ENV = "AUDIO_AGENT_TEST_PG_URL"
BACKENDS = ("sqlite", "postgresql")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _base_pg_url() -> str:
    url = os.environ.get(PG_URL_ENV, "").strip()
    if url:
        return url
    reason = (
        f'PostgreSQL tests need {PG_URL_ENV} (e.g. `eval "$(.ci/postgres.sh start '
        f"/tmp/audio-agent-pg)\"`, see README 'Tests')"
    )
    if in_ci():
        pytest.fail(f"{reason}; CI must run them", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    """The configured PostgreSQL URL, checked once; skip (or fail in CI) without one."""
    url = _base_pg_url()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as exc:  # configured but unreachable: always a failure
        pytest.fail(f"{PG_URL_ENV} is set but PostgreSQL is unreachable: {exc}", pytrace=False)
    finally:
        engine.dispose()
    return url


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A URL whose connections use a new, empty schema; dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(pg_server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'create schema "{schema}"'))
        url = make_url(pg_server_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
        with admin.connect() as conn:
            # Engines a test did not dispose of (an app it served, say) keep idle connections:
            # end them, so they hold no locks on the schema and do not pile up.
            conn.execute(
                text(
                    "select pg_terminate_backend(pid) from pg_stat_activity "
                    "where pid <> pg_backend_pid() and datname = current_database() "
                    "and backend_type = 'client backend' and state like 'idle%'"
                )
            )
            conn.execute(text(f'drop schema "{schema}" cascade'))
    finally:
        admin.dispose()


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'nested' / 'dir' / 'agent.sqlite3'}"


@pytest.fixture(params=BACKENDS)
def any_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    return request.getfixturevalue("pg_url")
