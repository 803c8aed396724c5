"""Listen first, build the app behind: ``python app.py`` answers within a second or two of its
start, while the app (Gradio's import, the page's components, the database) is built in a
thread. Until then every request gets a 503: the page's address a small page that says the
app is starting and opens the real page by itself when it is ready; ``/api/health`` (and
every other path) a JSON ``{"status": "starting"}`` with ``Retry-After``. Once built, the
app's own lifespan runs (its startup, later its shutdown) and every request goes to it.

Why: importing Gradio and building the page takes most of a start (seconds on a quiet
2-core machine, a minute under load); a browser opened on the address meanwhile got
"connection refused" and nothing to wait on (issue 33).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger("audio_agent")
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

RETRY_AFTER_S = 1
START_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ask about audio: starting</title>
<style>body{{font:16px system-ui,sans-serif;margin:15vh auto;max-width:32em;padding:0 1em;
color:#222}}@media (prefers-color-scheme:dark){{body{{background:#111;color:#ddd}}}}</style>
</head><body><h1>Ask about audio</h1>
<p role="status" id="starting">The app is starting (<span id="seconds">{seconds}</span> s);
this page opens by itself when it is ready.</p>
<script>
(() => {{
  const begun = Date.now() - {seconds} * 1000;
  const seconds = document.getElementById("seconds");
  const check = async () => {{
    seconds.textContent = Math.round((Date.now() - begun) / 1000);
    try {{
      const answer = await fetch({health}, {{cache: "no-store"}});
      if (answer.status !== 503) {{ location.reload(); return; }}
    }} catch (e) {{}}
    setTimeout(check, 300);
  }};
  setTimeout(check, 300);
}})();
</script></body></html>
"""
HEADERS = [
    (b"cache-control", b"no-store"),
    (b"retry-after", str(RETRY_AFTER_S).encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
PAGE_CSP = (
    b"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    b"connect-src 'self'; frame-ancestors 'none'"
)


class Booting:
    """An ASGI app that answers "starting" until ``build()`` (run in a thread once the server
    listens) has returned the real app, then hands everything to it. ``on_failure`` is
    called when the build or the app's startup fails (``failed`` holds the error): the
    caller stops the server."""

    def __init__(
        self,
        build: Callable[[], App],
        *,
        root_path: str = "",
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self.build = build
        self.root_path = root_path.rstrip("/")
        self.on_failure = on_failure
        self.app: App | None = None
        self.failed: BaseException | None = None
        self.begun = time.monotonic()
        self.ready_after_s: float | None = None
        self._starting: asyncio.Task[None] | None = None
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._app_lifespan: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif self.app is not None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await self.starting(scope, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1013})  # try again later

    # -- the server's lifespan: ours at once, the app's once it is built ----------------------
    async def lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        self.begun = time.monotonic()
        self._starting = asyncio.create_task(self.start())
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        await self.stop()
        await send({"type": "lifespan.shutdown.complete"})

    async def start(self) -> None:
        try:
            app = await asyncio.to_thread(self.build)
            self._app_lifespan = asyncio.create_task(
                app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                    self._to_app.get, self._from_app.put)
            )  # fmt: skip
            await self._to_app.put({"type": "lifespan.startup"})
            answer = await self._from_app.get()
            if answer["type"] != "lifespan.startup.complete":
                raise RuntimeError(answer.get("message") or "the app's startup failed")
        except Exception as exc:  # noqa: BLE001 - said, and the server stops
            log.error("the app could not start: %s", exc, exc_info=exc)
            self.failed = exc
            if self.on_failure is not None:
                self.on_failure()
            return
        self.app = app
        self.ready_after_s = round(time.monotonic() - self.begun, 2)
        log.info("the app is ready %.1f s after the server listened", self.ready_after_s)

    async def stop(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()  # the build thread ends with the process
            return
        if self.app is None or self._app_lifespan is None:
            return
        await self._to_app.put({"type": "lifespan.shutdown"})
        await self._from_app.get()
        await self._app_lifespan

    # -- while starting ---------------------------------------------------------------------
    async def starting(self, scope: Scope, send: Send) -> None:
        path = scope.get("path", "/")
        wants_page = scope.get("method") == "GET" and "text/html" in _accept(scope)
        if wants_page and not path.startswith(("/api/", "/v1/", "/mcp")):
            seconds = int(time.monotonic() - self.begun)
            health = html.escape(json.dumps(self.root_path + "/api/health"), quote=False)
            body = START_PAGE.format(seconds=seconds, health=health).encode()
            headers = [
                *HEADERS,
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-security-policy", PAGE_CSP),
            ]
        else:
            body = json.dumps(
                {"status": "starting", "detail": "The app is starting; try again in a moment."}
            ).encode()
            headers = [*HEADERS, (b"content-type", b"application/json")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _accept(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"accept":
            return str(value.decode("latin-1"))
    return ""
