"""What a browser may do with this app from elsewhere: CORS, the Origin check, security headers.

- **CORS.** Starlette's ``CORSMiddleware`` with ``AUDIO_AGENT_ALLOWED_ORIGINS`` (exact
  ``scheme://host[:port]`` origins; none by default). Its presence also switches off Gradio's
  own CORS middleware, which echoes any origin with credentials on a public host name. A
  preflight from any other origin gets 400 without ``Access-Control-Allow-*``, and a simple
  request's response carries none, so no other site can read a visitor's data.
- **Origin check** (``OriginCheck``) on every state-changing request (POST, PUT, PATCH, DELETE
  and websocket upgrades), under every route prefix (``/api``, ``/login``, ``/logout``,
  Gradio's routes, ``/v1``, ``/mcp``): a browser names the page that sent it in ``Origin``
  (or ``Sec-Fetch-Site``); anything but this site or a configured origin gets 403 before the
  app runs. That is the CSRF defence, for login too, and it matters most when the app is
  embedded (a Space shows it in an iframe of huggingface.co, so its cookie is
  ``SameSite=None`` and the browser sends it along with cross-site requests). Requests from
  programs (curl, SDKs, a bearer token) send no ``Origin`` and pass.
- **Security headers** (``SecurityHeaders``) on every response: a Content-Security-Policy
  (the page's for HTML, ``default-src 'none'`` for data) with ``frame-ancestors`` (this site,
  plus huggingface.co when embedded, or ``AUDIO_AGENT_FRAME_ANCESTORS``), ``nosniff``,
  ``Referrer-Policy: no-referrer`` (a share link's token never leaves in a Referer), and
  ``Cache-Control: private`` on everything but Gradio's static assets.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.responses import FileResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("audio_agent.security")

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
EMBEDDING_SITES = ["https://huggingface.co"]  # where a Space shows the app (an iframe)
# Gradio's own files, the same for everybody (they keep Gradio's caching headers).
STATIC_PREFIXES = ("/assets/", "/static/", "/svelte/", "/favicon.ico", "/theme.css",
                   "/manifest.json", "/pwa_icon", "/robots.txt")  # fmt: skip
EXPOSED_HEADERS = ["X-Run-Id", "X-Run-Ids", "Retry-After"]
# The page: Gradio's scripts and styles are inline and it evaluates code (plotly); fonts may
# come from Google Fonts (Gradio's default theme). Everything it fetches is this site.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'self' 'unsafe-inline' https://fonts.googleapis.com; "
    "font-src 'self' data: https://fonts.gstatic.com; img-src 'self' data: blob:; "
    "media-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:; "
    "frame-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'"
)
DATA_POLICY = "default-src 'none'; media-src 'self'; img-src 'self'; style-src 'unsafe-inline'"
AUDIO_CACHE = "private, max-age=86400"  # a recording's bytes never change under its id
PRIVATE_CACHE = "private, no-store"


def _origin_list(raw: str | None, name: str) -> list[str]:
    origins = []
    for item in (raw or "").split(","):
        item = item.strip().rstrip("/")
        if not item:
            continue
        parts = urlsplit(item)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            raise ValueError(
                f"{name}: {item!r} is not an origin like https://example.org (scheme and "
                "host, no path)."
            )
        origins.append(f"{parts.scheme}://{parts.netloc.lower()}")
    return origins


@dataclass(frozen=True)
class BrowserPolicy:
    """``AUDIO_AGENT_ALLOWED_ORIGINS`` and the frames the page may be shown in."""

    allowed_origins: list[str] = field(default_factory=list)
    frame_ancestors: list[str] = field(default_factory=list)  # besides the site itself
    embedded: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, embedded: bool) -> BrowserPolicy:
        ancestors = env.get("AUDIO_AGENT_FRAME_ANCESTORS")
        return cls(
            allowed_origins=_origin_list(
                env.get("AUDIO_AGENT_ALLOWED_ORIGINS"), "AUDIO_AGENT_ALLOWED_ORIGINS"
            ),
            frame_ancestors=_origin_list(ancestors, "AUDIO_AGENT_FRAME_ANCESTORS")
            if ancestors is not None
            else (list(EMBEDDING_SITES) if embedded else []),
            embedded=embedded,
        )

    @property
    def frame_ancestors_directive(self) -> str:
        return "frame-ancestors " + " ".join(["'self'", *self.frame_ancestors])


def install(app: Any, policy: BrowserPolicy) -> None:
    """CORS and the Origin check; ``install_headers`` adds the headers (outermost)."""
    from starlette.middleware.cors import CORSMiddleware

    app.add_middleware(OriginCheck, policy=policy)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=policy.allowed_origins,
        allow_credentials=True,
        allow_methods=["*"],
        allow_headers=["*"],
        expose_headers=EXPOSED_HEADERS,
    )


def install_headers(app: Any, policy: BrowserPolicy) -> None:
    app.add_middleware(SecurityHeaders, policy=policy)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _without_default_port(netloc: str, scheme: str) -> str:
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    return netloc[: -len(default)] if default and netloc.endswith(default) else netloc


def same_origin(origin: str, host: str) -> bool:
    """Whether ``Origin`` names this site: its host and port are the request's ``Host``
    (the scheme is not compared: behind a TLS proxy the app itself is reached over http)."""
    parts = urlsplit(origin)
    if not parts.netloc or not host:
        return False
    return _without_default_port(parts.netloc.lower(), parts.scheme) == _without_default_port(
        host.lower(), parts.scheme
    )


def foreign_origin(scope: Scope, policy: BrowserPolicy) -> str | None:
    """The other site a browser request came from, or None (this site, a configured
    origin, or a program that names no page)."""
    headers = _headers(scope)
    origin = headers.get("origin")
    site = headers.get("sec-fetch-site", "").lower()
    if origin is not None:
        origin = origin.strip().rstrip("/")
        if origin.lower() == "null":
            # A form posted by our own page says "null" under Referrer-Policy: no-referrer
            # (the login form); the browser's Sec-Fetch-Site still tells where it came from.
            # A sandboxed frame or a file of another site says "null" too, and is not
            # same-origin.
            return None if site == "same-origin" else "null"
        if same_origin(origin, headers.get("host", "")) or origin.lower() in policy.allowed_origins:
            return None
        return origin or "null"
    if site in ("cross-site", "same-site"):
        return f"a {site} page"
    return None


class OriginCheck:
    """403 for a state-changing request (or websocket) sent by another site's page."""

    def __init__(self, app: ASGIApp, policy: BrowserPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        checked = kind == "websocket" or (kind == "http" and scope["method"] in STATE_CHANGING)
        foreign = foreign_origin(scope, self.policy) if checked else None
        if foreign is None:
            await self.app(scope, receive, send)
            return
        log.warning(
            "refused %s %s from %s (Host: %s); behind a proxy, pass the Host header through, "
            "or list the site in AUDIO_AGENT_ALLOWED_ORIGINS",
            scope.get("method", "websocket"),
            scope.get("path", ""),
            foreign,
            _headers(scope).get("host", ""),
        )
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        detail = (
            f"Refused: this request came from {foreign}, not from this site. Use the app's "
            "own page, or (for a site of yours) list its origin in AUDIO_AGENT_ALLOWED_ORIGINS."
        )
        body = json.dumps({"detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def is_static(path: str) -> bool:
    return any(marker in path for marker in STATIC_PREFIXES)


class SecurityHeaders:
    """Adds the security headers to every HTTP response (see the module doc)."""

    def __init__(self, app: ASGIApp, policy: BrowserPolicy) -> None:
        self.app = app
        self.policy = policy
        ancestors = policy.frame_ancestors_directive
        self.page_policy = f"{PAGE_POLICY}; {ancestors}"
        self.data_policy = f"{DATA_POLICY}; {ancestors}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        static = is_static(path)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                self.add(headers, path, static)
            await send(message)

        await self.app(scope, receive, with_headers)

    def add(self, headers: MutableHeaders, path: str, static: bool) -> None:
        content_type = headers.get("content-type", "")
        html = content_type.startswith("text/html")
        headers.setdefault(
            "Content-Security-Policy", self.page_policy if html else self.data_policy
        )
        headers["X-Content-Type-Options"] = "nosniff"
        headers.setdefault("Referrer-Policy", "no-referrer")
        if not self.policy.frame_ancestors:
            headers.setdefault("X-Frame-Options", "SAMEORIGIN")
        if static:
            return
        headers["Cross-Origin-Resource-Policy"] = "same-origin"
        cache = headers.get("cache-control", "")
        if content_type.startswith("audio/"):
            headers["Cache-Control"] = AUDIO_CACHE
        elif not cache or "public" in cache or "private" not in cache:
            extra = [
                d.strip() for d in cache.split(",") if d.strip() in ("no-cache", "no-transform")
            ]
            headers["Cache-Control"] = ", ".join([PRIVATE_CACHE, *extra])


# The Content-Type of a stored recording, from the container sniffed at upload (the stored
# original's extension is the sniffed kind's), never from the uploader's file name.
AUDIO_TYPES = {
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/ogg",
    "flac": "audio/flac",
    "aac": "audio/aac",
    "m4a": "audio/mp4",
    "mp4": "audio/mp4",
    "m4v": "audio/mp4",
    "mov": "audio/mp4",
    "webm": "audio/webm",
    "mkv": "audio/x-matroska",
    "mka": "audio/x-matroska",
}


def audio_response(info: Any, name: str | None = None) -> FileResponse:
    """A stored recording's original bytes, typed by what they are (``AudioInfo``)."""
    return FileResponse(
        info.original_path,
        media_type=AUDIO_TYPES.get(info.format, "application/octet-stream"),
        filename=name or None,
        content_disposition_type="inline",
    )
