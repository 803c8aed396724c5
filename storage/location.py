"""Where the app's data lives: the data folder and the database URL, from the environment.

One rule for every way in: the web app's settings (``backend.host.settings``), ``Store``'s
default and ``alembic -c storage/alembic.ini upgrade head`` run by hand all get the URL here,
so a migration by hand touches the database the app opens.

- ``AUDIO_AGENT_DB_URL``: any SQLAlchemy URL; it wins.
- else the SQLite file ``audio_agent.sqlite3`` in the data folder: ``AUDIO_AGENT_DATA_DIR``;
  on a Hugging Face Space (``SPACE_ID`` set) with persistent storage, that storage
  (``/data``, or ``AUDIO_AGENT_SPACE_STORAGE`` in tests); else ``data/``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_URL_ENV = "AUDIO_AGENT_DB_URL"
DATA_DIR_ENV = "AUDIO_AGENT_DATA_DIR"
DB_FILE = "audio_agent.sqlite3"
# Where a Space mounts its persistent storage (https://huggingface.co/docs/hub/spaces-storage);
# only at run time, never during the build. Tests point it elsewhere.
SPACE_STORAGE = Path(os.environ.get("AUDIO_AGENT_SPACE_STORAGE", "/data"))


def on_space(env: Mapping[str, str]) -> bool:
    return bool(env.get("SPACE_ID"))


def storage_is_persistent(storage: Path) -> bool:
    return storage.is_dir() and os.access(storage, os.W_OK | os.X_OK)


def default_data_dir(env: Mapping[str, str], storage: Path | None = None) -> Path:
    """``AUDIO_AGENT_DATA_DIR``; on a Space with persistent storage, that storage; else data/."""
    if env.get(DATA_DIR_ENV):
        return Path(env[DATA_DIR_ENV])
    storage = storage or SPACE_STORAGE
    if on_space(env) and storage_is_persistent(storage):
        return storage
    return Path("data")


def database_url(data_dir: Path, db_url: str | None = None) -> str:
    """``db_url`` when given, else the SQLite file in ``data_dir`` (as an absolute path)."""
    return db_url or f"sqlite:///{(data_dir / DB_FILE).resolve()}"


def url_from_env(env: Mapping[str, str]) -> str:
    """The database URL the app would open with this environment."""
    return database_url(default_data_dir(env), env.get(DB_URL_ENV) or None)
