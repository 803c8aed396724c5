"""Who is asking: the owner id of a request (an anonymous visitor or a logged-in user).

Interface shared by the API routes and the Gradio handlers:

- FastAPI routes: ``owner: str = Depends(current_owner)``
- Gradio handlers: ``owner_from_request(request)`` with ``request: gr.Request``

``IdentityMiddleware`` (installed by ``install``) resolves the owner of every HTTP request
before any route or the Gradio app sees it, and puts it in the ASGI scope:

- Anonymous (the default): a visitor without a valid cookie gets a new id
  (``visitor:<32 hex>``) in a signed, HttpOnly, SameSite=Lax cookie on the first response,
  whatever the route; the page and the API share it. The signing secret is
  ``AUDIO_AGENT_SECRET`` or, when unset, one generated once and kept in
  ``<data dir>/secret_key`` (mode 0600), so ids survive restarts. Dropping the cookie makes a
  new visitor, so new visitors that send anything (POST, PUT, PATCH, DELETE) are limited per
  client address (``AUDIO_AGENT_NEW_VISITORS_PER_HOUR``; 429 past it: reading still works).
- Login (``AUDIO_AGENT_USERS`` set): the owner is ``user:<name>``, from the login cookie
  (``/login``) or an API bearer token (``POST /api/token``). Each cookie and token names a
  row of the ``sessions`` table, so logging out revokes it on the server
  (``backend.access.login``); a changed password ends them too. The users file is read again when
  it changes. Without a login, pages redirect to ``/login`` and everything else gets 401;
  only ``/login``, ``/logout``, ``/api/token`` and ``/api/health`` are open.

Passwords: ``python -m backend.access.auth hash`` prints a ``user:scrypt$...`` line for the users
file (``backend.access.passwords``); plain ``user:password`` lines work too (for a quick private
demo).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import HTTPException, Request

from backend.access.clients import ClientDirectory, client_address, wait_text
from backend.access.hf_oauth import SESSION_COOKIE
from backend.access.identity import Identity
from backend.access.passwords import hash_password
from storage.models import DEFAULT_OWNER

log = logging.getLogger("audio_agent.auth")

OWNER_COOKIE = "audio_agent_owner"
SCOPE_KEY = "audio_agent.owner"
VISITOR_COOKIE_DAYS = 400  # the longest a browser keeps a cookie
OPEN_PATHS = ("/login", "/logout", "/api/token", "/api/health")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# Asked by load balancers and uptime checks, never by a person: no visitor is made for them
# (each would count against the checker's address).
NO_VISITOR_PATHS = ("/api/health",)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# ------------------------------------------------------------------------------ the interface


def current_owner(request: Request) -> str:
    """The owner id of an API request (FastAPI dependency); 401 when login is required."""
    return _scope_owner(request.scope)


def owner_from_request(request: Any) -> str:
    """The owner id of a Gradio event (``gr.Request``) or a Starlette request.

    ``None`` (a handler called directly, outside any request) is the single local owner,
    like an app built without the middleware."""
    if request is None:
        return DEFAULT_OWNER
    inner = getattr(request, "request", None)  # gr.Request wraps the Starlette request
    scope = getattr(inner, "scope", None)
    if scope is None:
        scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and SCOPE_KEY in scope:
        return _scope_owner(scope)
    # A queued Gradio event without the Starlette request still has the user that the
    # mounted app's auth_dependency (``gradio_user``) returned.
    username = getattr(request, "username", None)
    if isinstance(username, str) and username:
        return username
    raise HTTPException(401, "No owner for this request; reload the page.")


def gradio_user(request: Request) -> str | None:
    """``auth_dependency`` of the mounted Gradio app: the owner id (None: not logged in)."""
    return request.scope.get(SCOPE_KEY)


def scope_owner(scope: MutableMapping[str, Any]) -> str | None:
    """The owner the middleware found for an ASGI scope; None when login is required and
    missing; the local owner when the middleware is not installed."""
    return scope.get(SCOPE_KEY, DEFAULT_OWNER)


def _scope_owner(scope: Scope) -> str:
    if SCOPE_KEY not in scope:
        # The middleware is not installed: an app built without ``install`` (unit tests of
        # the router alone) has the single local owner.
        return DEFAULT_OWNER
    owner = scope[SCOPE_KEY]
    if owner is None:
        raise HTTPException(401, "Log in first.", headers={"WWW-Authenticate": "Bearer"})
    return str(owner)


# ------------------------------------------------------------------------------ middleware


class IdentityMiddleware:
    """Resolves the owner of each HTTP request into ``scope[SCOPE_KEY]`` (pure ASGI, so
    streamed responses such as SSE pass through untouched), and remembers each owner's
    client address (``clients``)."""

    def __init__(
        self, app: ASGIApp, identity: Identity, clients: ClientDirectory | None = None
    ) -> None:
        self.app = app
        self.identity = identity
        self.clients = clients

    def _resolve(self, headers: dict[str, str]) -> str | None:
        identity = self.identity
        owner: str | None = None
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):  # a user's token, or a visitor's key
            owner = identity.owner_from_token(authorization[7:].strip())
        if owner is None and identity.hf is not None:  # signed in with Hugging Face
            owner = identity.hf.owner(_cookie(headers, SESSION_COOKIE))
        if owner is None:
            owner = identity.owner_from_cookie(_cookie(headers, OWNER_COOKIE))
        return owner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        identity = self.identity
        if identity.login_required and (
            "authorization" in headers or OWNER_COOKIE in headers.get("cookie", "")
        ):  # a session lookup may read the database: not on the event loop
            owner = await asyncio.to_thread(self._resolve, headers)
        else:
            owner = self._resolve(headers)
        address = client_address(scope)
        new_cookie: str | None = None
        path = _app_path(scope)
        if owner is None and not identity.login_required and not _one_of(path, NO_VISITOR_PATHS):
            owner = identity.new_visitor()
            changes = scope["type"] == "websocket" or scope.get("method") not in SAFE_METHODS
            # Every visitor cookie handed out counts against the address: dropping the cookie
            # on every request must not make unlimited owners (nor may a read first, whose
            # cookie would then be a known visitor's). Past the limit a read is served to a
            # passing visitor who owns nothing and gets no cookie; a change is refused.
            wait = identity.visitor_wait(address)
            if wait is not None and changes:
                await _refuse_new_visitor(send, identity.new_visitors_per_hour, wait)
                return
            if wait is None:
                new_cookie = identity.cookie_for(owner)
        scope[SCOPE_KEY] = owner
        if owner is not None and self.clients is not None:
            self.clients.saw(owner, address)
        if owner is None and scope["type"] == "http" and not _is_open(path):
            await self._refuse(scope, headers, path, send)
            return
        if new_cookie is None:
            await self.app(scope, receive, send)
            return
        cookie = set_cookie_header(
            new_cookie,
            max_age=VISITOR_COOKIE_DAYS * 86400,
            secure=_is_https(scope),
            path=self.identity.root_path or "/",
            embedded=self.identity.embedded,
        )

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    async def _refuse(self, scope: Scope, headers: dict[str, str], path: str, send: Send) -> None:
        wants_page = (
            scope.get("method") in ("GET", "HEAD")
            and "text/html" in headers.get("accept", "")
            and not path.startswith("/api/")
        )
        if wants_page:
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            location = f"{self.identity.root_path}/login?next={quote(target, safe='')}"
            await _respond(send, 303, b"", [(b"location", location.encode())])
            return
        body = b'{"detail":"Log in first (POST /api/token for an API bearer token)."}'
        await _respond(
            send,
            401,
            body,
            [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
        )


async def _refuse_new_visitor(send: Send, per_hour: int, wait: int) -> None:
    detail = (
        f"Too many new visitors from your network address ({per_hour} an hour). Allow cookies "
        f"for this site so that you stay the same visitor, or try again in {wait_text(wait)}."
    )
    await _respond(
        send,
        429,
        json.dumps({"detail": detail}).encode(),
        [(b"content-type", b"application/json"), (b"retry-after", str(wait).encode())],
    )


def set_cookie_header(
    value: str, *, max_age: int, secure: bool, path: str = "/", embedded: bool = False
) -> str:
    """The owner cookie: HttpOnly, SameSite=Lax (Secure over https). ``embedded`` (the app
    shown in another site's iframe, as on a Hugging Face Space): SameSite=None; Secure;
    Partitioned, the only kind a browser sends from inside a cross-site iframe."""
    parts = [f"{OWNER_COOKIE}={value}", f"Path={path}", f"Max-Age={max_age}", "HttpOnly"]
    if embedded:
        parts += ["SameSite=None", "Secure", "Partitioned"]
    else:
        parts.append("SameSite=Lax")
        if secure:
            parts.append("Secure")
    return "; ".join(parts)


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _cookie(headers: dict[str, str], name: str) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed Cookie header is no identity
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _app_path(scope: Scope) -> str:
    path = str(scope.get("path", "/"))
    root = str(scope.get("root_path", "") or "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def _is_open(path: str) -> bool:
    return _one_of(path, OPEN_PATHS)


def _one_of(path: str, paths: tuple[str, ...]) -> bool:
    """``path`` is one of ``paths``, with or without a trailing slash."""
    return any(path == p or path == p + "/" for p in paths)


def _is_https(scope: Scope) -> bool:
    return scope.get("scheme") in ("https", "wss")


def safe_next(target: str) -> str:
    """Only a path of this site (no scheme, no host: no open redirect)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


def install(app: Any, identity: Identity, clients: ClientDirectory | None = None) -> None:
    """The identity middleware, and (with login) the login routes (``backend.access.login``)."""
    app.state.identity = identity
    app.add_middleware(IdentityMiddleware, identity=identity, clients=clients)


def main(argv: list[str] | None = None) -> int:
    """``python -m backend.access.auth hash [user]``: a users-file line with a scrypt hash."""
    import argparse
    import getpass

    parser = argparse.ArgumentParser(
        prog="python -m backend.access.auth",
        description="Print a line for the AUDIO_AGENT_USERS file with the password hashed.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    hashing = sub.add_parser(
        "hash", help="print user:scrypt$... (reads the password from the terminal or stdin)"
    )
    hashing.add_argument("user", nargs="?", default=None, help="the user name (else asked)")
    args = parser.parse_args(argv)
    user = args.user if args.user is not None else input("user: ").strip()
    password = (
        getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    )
    if not user or ":" in user or not password:
        print("A user name without ':' and a non-empty password, please.", file=sys.stderr)
        return 2
    print(f"{user}:{hash_password(password)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
