"""Entry point: settings, storage, registry, the FastAPI app with the Gradio UI mounted; serve.

python app.py            # http://127.0.0.1:7860, offline default
python app.py --share    # also a public Gradio share link (needs outbound internet)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
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
    from backend.host.settings import Settings
    from backend.service import AgentService

log = logging.getLogger("audio_agent")


def create_service(settings: Settings, registry: Registry | None = None) -> AgentService:
    from backend.host.startup import open_service

    return open_service(settings, registry)


def create_app(
    settings: Settings | None = None, *, registry: Registry | None = None, ui: bool = True
) -> FastAPI:
    """The FastAPI app (REST + SSE under /api) with the Gradio UI mounted at /."""
    from fastapi import FastAPI
    from fastapi.responses import RedirectResponse

    from backend.access import auth, login, security
    from backend.access.body_limits import BodyLimitMiddleware, BodyPace
    from backend.access.clients import install_proxy_headers
    from backend.access.gradio_files import GradioFileGuard
    from backend.access.gradio_sessions import GradioSessionGuard
    from backend.access.upload_quota import UploadGuard
    from backend.host import hosting, space, warm_up
    from backend.host.settings import Settings
    from backend.host.startup import identity_for
    from backend.http import api, connect, mcp_server, openai_api
    from backend.http.sharing import SHARED_PAGE
    from backend.service.retention import start_retention

    settings = settings or Settings.from_env()
    service = create_service(settings, registry)
    for notice in space.space_notices(os.environ, settings.data_dir):  # on a Space only
        log.warning(notice)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.warm_up:  # once the server listens, at a lower priority
            warm_up.start()
        async with app.state.mcp.run():  # the MCP server at /mcp (backend/http/mcp_server.py)
            yield
        if app.state.retention is not None:
            await asyncio.to_thread(app.state.retention.stop)
        await asyncio.to_thread(service.close)  # live runs end as interrupted, stored

    app = FastAPI(
        title="Audio question answering agent", version=api.API_VERSION, lifespan=lifespan
    )
    api.install(app, service)
    app.include_router(openai_api.build_router(service))  # /v1: an OpenAI-compatible model
    app.state.mcp = mcp_server.mount(app, service)  # /mcp: the MCP server
    app.state.service = service
    # Middleware, innermost first (each add_middleware wraps the ones before it).
    if ui:  # /c/{id}: the page, opened on that conversation (inside the identity middleware)
        from frontend.routes import ConversationPaths

        app.add_middleware(ConversationPaths)
    app.add_middleware(GradioSessionGuard)  # a Gradio session's outputs: its owner's only
    app.add_middleware(GradioFileGuard, files=service.upload_files)  # files: own uploads only
    app.add_middleware(  # upload quotas per owner and address; the page's uploads counted
        UploadGuard, quota=service.upload_quota, files=service.upload_files
    )
    limits = settings.server_limits
    app.add_middleware(  # request bodies over their limit: 413 while they stream; slow: 408
        BodyLimitMiddleware,
        upload_bytes=service.audio.max_bytes,
        json_bytes=int(settings.limits.json_kb * 1024),
        pace=BodyPace(limits.body_timeout_s, limits.min_body_kbps * 1024),
    )
    identity = identity_for(settings, service)
    auth.install(app, identity, service.clients)
    if identity.login_required:
        login.install(app, identity, settings.login_limits)
    connect.install(app, identity)  # /connect: the URLs and a key for other programs
    policy = settings.browser_policy()
    security.install(app, policy)  # CORS for configured origins; the Origin check (CSRF)
    install_proxy_headers(app, settings.trusted_proxies)  # X-Forwarded-For from proxies only
    hosting.install_host_check(app, settings)
    security.install_headers(app, policy)  # outermost: every response has them
    app.state.retention = start_retention(service)  # AUDIO_AGENT_RETENTION_DAYS
    if not ui:
        return app
    import gradio as gr

    from frontend import shared_view
    from frontend.ui import build_ui

    @app.get(SHARED_PAGE + "/{token}", include_in_schema=False)
    def shared_page(token: str) -> RedirectResponse:
        """A share link: the read-only page (frontend.shared_view), the token in its query."""
        return RedirectResponse(shared_view.view_url(settings.root_path, token), status_code=307)

    view = shared_view.build_shared_view(service)
    page = build_ui(service)
    for blocks in (view, page):  # Gradio's own cache (uploads, served copies) expires too
        blocks.delete_cache = gradio_cache_expiry(settings)
    gr.mount_gradio_app(
        app,
        view,
        path=shared_view.VIEW_PATH,
        auth_dependency=auth.gradio_user,
        root_path=(settings.root_path + shared_view.VIEW_PATH) if settings.root_path else None,
    )
    return gr.mount_gradio_app(
        app,
        page,
        path="/",
        max_file_size=int(settings.max_upload_mb * 1024 * 1024),  # refused before it is stored
        # gr.Request.username: the owner (see backend.access.auth)
        auth_dependency=auth.gradio_user,
        root_path=settings.root_path or None,
    )


def gradio_cache_expiry(settings: Settings) -> tuple[int, int] | None:
    """``gr.Blocks.delete_cache``: every hour (at most), files in Gradio's cache older than
    ``AUDIO_AGENT_UPLOAD_TTL_HOURS`` go (and all of them at shutdown); None keeps them."""
    if not settings.upload_ttl_hours:
        return None
    age = max(60, int(settings.upload_ttl_hours * 3600))
    return (min(3600, age), age)


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


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, not an address here), or None."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            return "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Ask about audio: the web app and its API.",
        epilog="Every other setting is an environment variable (README: Configure it; "
        "docs/configuration.md).",
    )
    parser.add_argument(
        "--host", help="the address to listen on (AUDIO_AGENT_HOST; default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, help="the port to listen on (AUDIO_AGENT_PORT; default 7860)"
    )
    parser.add_argument(
        "--data-dir",
        help="the folder of the SQLite file and the stored audio (AUDIO_AGENT_DATA_DIR; "
        "default ./data)",
    )
    parser.add_argument(
        "--share",
        action="store_true",
        help="also open a public Gradio share link (needs outbound internet; see docs/hosting.md)",
    )
    args = parser.parse_args(argv)
    # The options are the environment variables' shorthand: one source of settings.
    for value, name in (
        (args.host, "AUDIO_AGENT_HOST"),
        (args.port, "AUDIO_AGENT_PORT"),
        (args.data_dir, "AUDIO_AGENT_DATA_DIR"),
    ):
        if value is not None:
            os.environ[name] = str(value)
    import uvicorn

    from backend.access.connection_limits import fit_to_descriptors, uvicorn_options
    from backend.access.log_limits import rate_limit_logs
    from backend.host import hosting
    from backend.host.boot import Booting
    from backend.host.settings import Settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # a line per HTTP request (the SDKs' clients: httpx, or its fork httpx2 in newer ones)
    for noisy in ("alembic", "httpx", "httpx2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    settings = Settings.from_env()
    taken = port_in_use(settings.host, settings.port)
    if taken:  # before the app loads: say so at once, with the way out
        print(
            f"error: cannot listen on {settings.host}:{settings.port}: {taken}. Is the app "
            "already running? Choose another port with --port N (or AUDIO_AGENT_PORT=N).",
            file=sys.stderr,
            flush=True,
        )
        return 2
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
    settings.server_limits = fit_to_descriptors(settings.server_limits)  # the connection cap
    # Listen at once; the app is built in a thread meanwhile (a "starting" page until then).
    app = Booting(lambda: create_app(settings, registry=_registry_hook()),
                  root_path=settings.root_path)  # fmt: skip
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        root_path=settings.root_path,
        # Header timeout and connection caps; proxy headers are read by the app itself,
        # from AUDIO_AGENT_TRUSTED_PROXIES only (backend.access.connection_limits,
        # backend.access.clients).
        **uvicorn_options(settings.server_limits, settings.trusted_proxies),
    )
    server = uvicorn.Server(config)
    app.on_failure = lambda: setattr(server, "should_exit", True)
    rate_limit_logs(settings.server_limits.log_lines_per_minute)  # after uvicorn's logging
    print(f"Serving on http://{settings.host}:{settings.port}", flush=True)
    if args.share:
        threading.Thread(
            target=hosting.open_share_tunnel, args=(server, settings), daemon=True
        ).start()
    server.run()
    if app.failed is not None:
        raise app.failed
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
