"""Database fixtures: the same tests on SQLite and on a real PostgreSQL server.

Loaded as a pytest plugin for every test run (``-p tests.db_kit`` in pyproject.toml).

PostgreSQL comes from ``AUDIO_AGENT_TEST_PG_URL`` (``.ci/run`` starts a throwaway server with
``.ci/postgres.sh`` and sets it). Without it, when the PostgreSQL server binaries are installed
(Debian's ``postgresql`` package), the first test that needs PostgreSQL starts a throwaway
server the same way for the rest of the session (``AUDIO_AGENT_TEST_PG_AUTOSTART=0`` turns
that off), so a developer's full test run covers PostgreSQL too. Each test gets its own freshly
created schema in that database (selected through the URL's ``options=-csearch_path=...``),
dropped afterwards, so tests never see each other's rows and the migrations run from scratch.

With no server at all the PostgreSQL half of each test is skipped, with the reason, on a
developer's machine; in CI (``CI`` set to true) it fails instead, so the PostgreSQL tests can
never be silently skipped there.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url

PG_URL_ENV = "AUDIO_AGENT_TEST_PG_URL"
BACKENDS = ("sqlite", "postgresql")


@contextmanager
def counting(engine: Any, *, any_thread: bool = False) -> Iterator[list[str]]:
    """The SQL statements ``engine`` runs while the block runs: on this thread (not the run
    manager's heartbeat and lease sweeps), or with ``any_thread`` on every thread (a server's
    thread pool) except those sweeps and the tool-cache writer (storage.cache_writes, which
    commits results of runs that already ended)."""
    statements: list[str] = []
    caller = threading.get_ident()

    def before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if any_thread:
            writer = threading.current_thread().name.startswith("cache-write")
            mine = "heartbeat_at" not in statement and not writer
        else:
            mine = threading.get_ident() == caller
        if mine:
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", before)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", before)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "postgres.sh"


def _no_server(why: str) -> NoReturn:
    reason = (
        f'PostgreSQL tests need {PG_URL_ENV} (e.g. `eval "$(.ci/postgres.sh start '
        f'/tmp/audio-agent-pg)"`, see docs/testing.md); {why}'
    )
    if in_ci():
        pytest.fail(f"{reason}; CI must run them", pytrace=False)
    pytest.skip(reason)


def _autostart() -> tuple[str, Callable[[], None]]:
    """Start a throwaway server with .ci/postgres.sh; (its URL, how to stop it)."""
    if os.environ.get("AUDIO_AGENT_TEST_PG_AUTOSTART", "1").strip() in ("0", "false", "no"):
        _no_server("starting one is switched off (AUDIO_AGENT_TEST_PG_AUTOSTART=0)")
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl") and not shutil.which("pg_ctl"):
        _no_server("no PostgreSQL server binaries to start one (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="audio-agent-pg-test."))
    done = subprocess.run(
        ["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True, timeout=120
    )

    def stop() -> None:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)

    prefix = f"export {PG_URL_ENV}="
    url = next((ln[len(prefix) :] for ln in done.stdout.splitlines() if ln.startswith(prefix)), "")
    if done.returncode != 0 or not url:
        stop()
        _no_server(f"starting one failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return url, stop


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The configured (or a started) PostgreSQL URL, checked once."""
    url = os.environ.get(PG_URL_ENV, "").strip()
    stop: Callable[[], None] | None = None
    if not url:
        url, stop = _autostart()
    try:
        with _worker_database(_checked(url)) as own:
            yield own
    finally:
        if stop is not None:
            stop()


@contextmanager
def _worker_database(url: str) -> Iterator[str]:
    """Under pytest-xdist, a database of this worker's own in the server (created afresh,
    dropped at the end): a test's clean-up ends the idle connections of its database, which
    must not be another worker's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker:
        yield url
        return
    base = make_url(url)
    name = f"{base.database}_{worker}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'drop database if exists "{name}" with (force)'))
            conn.execute(text(f'create database "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'drop database if exists "{name}" with (force)'))
    finally:
        admin.dispose()


def _checked(url: str) -> str:
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
