"""Entry point: settings, storage, registry, the FastAPI app with the Gradio UI mounted; serve.

python app.py            # http://127.0.0.1:7860, offline default
python app.py --share    # also a public Gradio share link (needs outbound internet)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub at run time
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from typing import TYPE_CHECKING  # noqa: E402

# The web stack is imported inside the functions: worker processes for GIL-bound models
# (agent.local_models.executor) start from a fork server that imports this module, and
# must not load gradio and the whole app to run a pitch tracker.
if TYPE_CHECKING:
    from fastapi import FastAPI

    from agent.registry import Registry
    from backend import auth
    from backend.service import AgentService
    from backend.settings import Settings

log = logging.getLogger("audio_agent")


def create_service(settings: Settings, registry: Registry | None = None) -> AgentService:
    from agent.registry import Registry
    from backend.service import AgentService
    from storage import Store

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(settings.database_url)
    service = AgentService(settings, store, registry or Registry(settings.config_path))
    # Only runs of dead processes (expired lease) or of this worker's earlier life: another
    # live process on the same database keeps its runs.
    interrupted = service.runs.recover()
    if interrupted:
        log.warning("marked %d run(s) interrupted by the last shutdown", len(interrupted))
    return service


def create_app(
    settings: Settings | None = None, *, registry: Registry | None = None, ui: bool = True
) -> FastAPI:
    """The FastAPI app (REST + SSE under /api) with the Gradio UI mounted at /."""
    from fastapi import FastAPI, Request
    from fastapi.responses import RedirectResponse

    from backend import api, auth, hosting
    from backend.auth import owner_from_request
    from backend.limits import BodyLimitMiddleware, quota_gate
    from backend.retention import start_retention
    from backend.settings import Settings
    from backend.sharing import SHARED_PAGE

    settings = settings or Settings.from_env()
    service = create_service(settings, registry)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if app.state.retention is not None:
            await asyncio.to_thread(app.state.retention.stop)
        await asyncio.to_thread(service.close)  # live runs end as interrupted, stored

    app = FastAPI(
        title="Audio question answering agent", version=api.API_VERSION, lifespan=lifespan
    )
    api.install(app, service)
    app.state.service = service
    if ui:  # /c/{id}: the page, opened on that conversation (inside the identity middleware)
        from frontend.routes import ConversationPaths

        app.add_middleware(ConversationPaths)
    app.add_middleware(  # request bodies over their limit: 413 while they stream
        BodyLimitMiddleware,
        upload_bytes=service.audio.max_bytes,
        json_bytes=int(settings.limits.json_kb * 1024),
        upload_gate=quota_gate(
            service.upload_quota, lambda scope: owner_from_request(Request(scope))
        ),
    )
    auth.install(app, identity_for(settings))
    hosting.install_host_check(app, settings)
    app.state.retention = start_retention(service)  # AUDIO_AGENT_RETENTION_DAYS
    if settings.warm_up:
        threading.Thread(target=_warm_up, daemon=True, name="warm-up").start()
    if not ui:
        return app
    import gradio as gr

    from frontend import shared_view
    from frontend.ui import build_ui

    @app.get(SHARED_PAGE + "/{token}", include_in_schema=False)
    def shared_page(token: str) -> RedirectResponse:
        """A share link: the read-only page (frontend.shared_view), the token in its query."""
        return RedirectResponse(shared_view.view_url(settings.root_path, token), status_code=307)

    gr.mount_gradio_app(
        app,
        shared_view.build_shared_view(service),
        path=shared_view.VIEW_PATH,
        auth_dependency=auth.gradio_user,
        root_path=(settings.root_path + shared_view.VIEW_PATH) if settings.root_path else None,
    )
    return gr.mount_gradio_app(
        app,
        build_ui(service),
        path="/",
        max_file_size=int(settings.max_upload_mb * 1024 * 1024),  # refused before it is stored
        auth_dependency=auth.gradio_user,  # gr.Request.username: the owner (see backend.auth)
        root_path=settings.root_path or None,
    )


def identity_for(settings: Settings) -> auth.Identity:
    """Owner cookies and tokens: the secret, and the users when login is on."""
    from backend import auth, hf_oauth

    return auth.Identity(
        secret=auth.load_secret(settings.data_dir),
        users=auth.parse_users(settings.users) if settings.users else None,
        token_days=settings.token_days,
        session_days=settings.token_days,
        root_path=settings.root_path,
        embedded=settings.embedded,
        hf=hf_oauth.HfSessions(hf_oauth.session_secret(os.environ))
        if hf_oauth.enabled(os.environ)
        else None,
    )


def _warm_up() -> None:
    """Load the local models in the background so the first question is not slow."""
    from agent.registry import warm_up

    timings = warm_up(log.warning)
    total = sum(timings.values())
    log.info("local models ready in %.1f s (%s)", total,
             ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))  # fmt: skip


def _registry_hook() -> Registry | None:
    """Tests only: ``AUDIO_AGENT_TEST_REGISTRY=module:function`` builds the registry (scripted
    planners and tools) of a server started as a subprocess."""
    hook = os.environ.get("AUDIO_AGENT_TEST_REGISTRY")
    if not hook:
        return None
    import importlib

    from agent.registry import Registry

    module, _, name = hook.partition(":")
    registry = getattr(importlib.import_module(module), name)()
    assert isinstance(registry, Registry)
    return registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Ask about audio: the web app and its API.")
    parser.add_argument(
        "--share",
        action="store_true",
        help="also open a public Gradio share link (needs outbound internet; see README)",
    )
    args = parser.parse_args(argv)
    import uvicorn

    from backend import hosting
    from backend.settings import Settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("alembic", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    settings = Settings.from_env()
    if args.share:
        try:  # before anything starts: no internet, no tunnel, a clear message
            hosting.check_share_reachable()
        except hosting.ShareUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 2
        settings.allowed_hosts = settings.allowed_hosts or [
            *hosting.allowed_hosts(settings),
            *hosting.SHARE_HOSTS,
        ]
    app = create_app(settings, registry=_registry_hook())
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            root_path=settings.root_path,
        )
    )
    print(f"Serving on http://{settings.host}:{settings.port}", flush=True)
    if args.share:
        threading.Thread(
            target=hosting.open_share_tunnel, args=(server, settings), daemon=True
        ).start()
    server.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
