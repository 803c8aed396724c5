"""Opening the service for a process: the web app (app.py) and the MCP stdio server."""

from __future__ import annotations

import logging

from agent.registry import Registry
from backend.service import AgentService
from backend.settings import Settings
from storage import Store

log = logging.getLogger("audio_agent")


def open_service(settings: Settings, registry: Registry | None = None) -> AgentService:
    """The store (migrated), the catalogue and the run manager of ``settings``."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(settings.database_url)
    service = AgentService(settings, store, registry or Registry(settings.config_path))
    # Only runs of dead processes (expired lease) or of this worker's earlier life: another
    # live process on the same database keeps its runs.
    interrupted = service.runs.recover()
    if interrupted:
        log.warning("marked %d run(s) interrupted by the last shutdown", len(interrupted))
    return service
