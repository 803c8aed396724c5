"""What a process opens at start-up, the web app (app.py) and the MCP stdio server alike: the
service, and the identity that reads owners from cookies and tokens."""

from __future__ import annotations

import logging
import os

from agent.registry import Registry
from backend.access import hf_oauth
from backend.access.identity import Identity, load_secret
from backend.access.users import Users
from backend.host.settings import Settings
from backend.service import AgentService
from storage import Store
from storage.login_sessions import LoginSessions

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


def identity_for(settings: Settings, service: AgentService | None = None) -> Identity:
    """Owner cookies and tokens for these settings: the secret, the users when login is on,
    and (with the app's ``service``) the server-side sessions of logins and the new-visitor
    limit per address. The web app and the stdio MCP server (backend/http/mcp_stdio.py) alike."""
    return Identity(
        secret=load_secret(settings.data_dir),
        users=Users(settings.users) if settings.users else None,
        token_days=settings.token_days,
        session_days=settings.token_days,
        root_path=settings.root_path,
        embedded=settings.embedded,
        hf=hf_oauth.HfSessions(hf_oauth.session_secret(os.environ))
        if hf_oauth.enabled(os.environ)
        else None,
        sessions=LoginSessions(service.store) if service is not None else None,
        new_visitors_per_hour=settings.client_limits.new_visitors_per_hour,
    )
