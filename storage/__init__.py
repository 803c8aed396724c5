"""Storage: SQLAlchemy models, migrations and the ``Store`` that reads and writes them.

Knows the agent's events (``agent.events``), nothing about HTTP or Gradio.

    from storage import Store, SqlToolCache
    store = Store.open("sqlite:///data/audio_agent.sqlite3")   # engine + migrate to head
    store.runs.mark_interrupted_runs()
"""

from agent.commands import refuse_unless_command
from storage.db import default_url, make_engine, migrate, session_factory
from storage.repo import EXPORT_FORMAT, SqlToolCache, Store
from storage.schemas import AudioInfo, ConversationInfo, MessageInfo, RunInfo

refuse_unless_command(__name__, __file__)  # `python -m storage.db ...` is not a command

__all__ = [
    "EXPORT_FORMAT",
    "AudioInfo",
    "ConversationInfo",
    "MessageInfo",
    "RunInfo",
    "SqlToolCache",
    "Store",
    "default_url",
    "make_engine",
    "migrate",
    "session_factory",
]
