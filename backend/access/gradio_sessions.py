"""Gradio's sessions bound to their owner: whoever learns a session hash reads nothing.

The page's events travel through Gradio's queue: ``POST /gradio_api/queue/join`` with a
``session_hash`` the browser made up, then ``GET /gradio_api/queue/data?session_hash=...``
streams the outputs (the chat, the trace) of every event of that session. Gradio serves that
stream to anybody who names the hash. ``GradioSessionGuard`` ties each session hash (and
each event id of the ``/gradio_api/call/`` API) to the owner who used it first, and answers
404 to any other owner on every route that names one: join, data, cancel, heartbeat, stream
and call results. Bindings live in this process (Gradio's queue does too), at most
``MAX_BINDINGS``, the least recently used forgotten first.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.access.auth import scope_owner
from backend.access.body_limits import replaying

MAX_BINDINGS = 200_000
API = "/gradio_api/"
# Routes that name a session hash (or an event id) in the path: the group is the name.
PATH_NAMES = [
    re.compile(r"/gradio_api/heartbeat/([^/]+)/?$"),
    re.compile(r"/gradio_api/stream/([^/]+)/"),
    re.compile(r"/gradio_api/call/(?:v2/)?[^/]+/([^/]+)/?$"),
]
BODY_NAMED = ("/gradio_api/queue/join", "/gradio_api/cancel")
CALL_START = re.compile(r"/gradio_api/call/(?:v2/)?[^/]+/?$")
NOT_FOUND = b'{"detail":"No such session."}'


class SessionOwners:
    """Session hash (or event id) -> the owner who used it first."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def claim(self, name: str, owner: str) -> bool:
        """Bind ``name`` to ``owner`` unless it is someone else's; whether ``owner`` may use it."""
        with self._lock:
            bound = self._owners.get(name)
            if bound is None:
                self._owners[name] = owner
                while len(self._owners) > MAX_BINDINGS:
                    self._owners.popitem(last=False)
                return True
            self._owners.move_to_end(name)
            return bound == owner


class GradioSessionGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.owners = SessionOwners()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or API not in path:
            await self.app(scope, receive, send)
            return
        owner = scope_owner(scope)
        if owner is None:  # login required and missing: Gradio refuses it
            await self.app(scope, receive, send)
            return
        names = [m.group(1) for p in PATH_NAMES if (m := p.search(path))]
        if path.rstrip("/").endswith("/gradio_api/queue/data"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            names += query.get("session_hash", [])[:1]
        if scope["method"] == "POST" and path.rstrip("/").endswith(BODY_NAMED):
            body, receive = await read_body(receive)
            names += _session_hash(body)
        if any(not self.owners.claim(name, owner) for name in names):
            await _not_found(send)
            return
        if scope["method"] == "POST" and CALL_START.search(path):
            send = self._binding_event_id(send, owner)
        await self.app(scope, receive, send)

    def _binding_event_id(self, send: Send, owner: str) -> Send:
        """A call's answer names its event id: it is the caller's."""
        chunks: list[bytes] = []

        async def bind(message: Message) -> None:
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        event_id = json.loads(b"".join(chunks)).get("event_id")
                    except (ValueError, AttributeError):
                        event_id = None
                    if isinstance(event_id, str):
                        self.owners.claim(event_id, owner)
            await send(message)

        return bind


def _session_hash(body: bytes) -> list[str]:
    try:
        data = json.loads(body)
    except ValueError:
        return []
    value = data.get("session_hash") if isinstance(data, dict) else None
    return [value] if isinstance(value, str) and value else []


async def read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body (the body limit middleware bounds it), and a receive that gives it
    again to the app."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    return body, replaying(body, receive)


async def _not_found(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(NOT_FOUND)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": NOT_FOUND})
