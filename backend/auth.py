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
  ``<data dir>/secret_key`` (mode 0600), so ids survive restarts.
- Login (``AUDIO_AGENT_USERS`` set): the owner is ``user:<name>``, from the login cookie
  (``/login``) or an API bearer token (``POST /api/token``). Without either, pages redirect to
  ``/login`` and everything else gets 401; only ``/login``, ``/logout``, ``/api/token`` and
  ``/api/health`` are open.

Passwords: ``python -m backend.auth hash`` prints a ``user:scrypt$...`` line for the users
file; plain ``user:password`` lines work too (for a quick private demo).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import logging
import os
import secrets
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import HTTPException, Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from pydantic import BaseModel, Field

from backend.hf_oauth import SESSION_COOKIE, HfSessions
from storage.models import DEFAULT_OWNER

log = logging.getLogger("audio_agent.auth")

OWNER_COOKIE = "audio_agent_owner"
SCOPE_KEY = "audio_agent.owner"
VISITOR_PREFIX = "visitor:"
USER_PREFIX = "user:"
SECRET_FILE = "secret_key"
VISITOR_COOKIE_DAYS = 400  # the longest a browser keeps a cookie
OPEN_PATHS = ("/login", "/logout", "/api/token", "/api/health")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")

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


def _scope_owner(scope: Scope) -> str:
    if SCOPE_KEY not in scope:
        # The middleware is not installed: an app built without ``install`` (unit tests of
        # the router alone) has the single local owner.
        return DEFAULT_OWNER
    owner = scope[SCOPE_KEY]
    if owner is None:
        raise HTTPException(401, "Log in first.", headers={"WWW-Authenticate": "Bearer"})
    return str(owner)


# ------------------------------------------------------------------------------ passwords


def hash_password(password: str, *, n: int = 2**14, r: int = 8, p: int = 1) -> str:
    """``scrypt$n$r$p$salt$hash`` (salt and hash in URL-safe base64)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, spec: str) -> bool:
    """Check ``password`` against a users-file entry: a scrypt or pbkdf2_sha256 hash, or
    (anything else) the password itself."""
    parts = spec.split("$")
    try:
        if parts[0] == "scrypt" and len(parts) == 6:
            n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
            salt, want = _unb64(parts[4]), _unb64(parts[5])
            got = hashlib.scrypt(
                password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(want), maxmem=2**27
            )
            return hmac.compare_digest(got, want)
        if parts[0] == "pbkdf2_sha256" and len(parts) == 4:
            rounds, salt, want = int(parts[1]), _unb64(parts[2]), _unb64(parts[3])
            got = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, rounds, len(want))
            return hmac.compare_digest(got, want)
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(password.encode(), spec.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parse_users(value: str) -> dict[str, str]:
    """``AUDIO_AGENT_USERS``: a path to a file of ``user:password-or-hash`` lines, or such
    pairs inline, separated by newlines or commas. Blank lines and ``#`` comments skipped."""
    path = Path(value).expanduser()
    text = path.read_text() if path.is_file() else value.replace(",", "\n")
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, spec = line.partition(":")
        if not sep or not name.strip() or not spec:
            raise ValueError(
                f"AUDIO_AGENT_USERS line {number}: expected 'user:password' or 'user:<hash>'."
            )
        users[name.strip()] = spec.strip()
    if not users:
        raise ValueError("AUDIO_AGENT_USERS names no users.")
    return users


# ------------------------------------------------------------------------------ identity


def load_secret(data_dir: Path) -> str:
    """``AUDIO_AGENT_SECRET``, else the secret kept in the data directory (made once, 0600)."""
    from_env = os.environ.get("AUDIO_AGENT_SECRET", "").strip()
    if from_env:
        return from_env
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_text().strip()
        if secret:
            return secret
        raise RuntimeError(f"{path} is empty; delete it to make a new secret.") from None
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


@dataclass
class Identity:
    """Signs and reads owner cookies and API tokens."""

    secret: str
    users: dict[str, str] | None = None  # None: anonymous visitors; else login required
    token_days: float = 30.0
    session_days: float = 30.0
    root_path: str = ""
    embedded: bool = False  # cookies for a cross-site iframe (set_cookie_header)
    hf: HfSessions | None = None  # sign-in with Hugging Face on a Space (backend.hf_oauth)
    _cookies: URLSafeTimedSerializer = field(init=False, repr=False)
    _tokens: URLSafeTimedSerializer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cookies = URLSafeTimedSerializer(self.secret, salt="audio-agent-owner")
        self._tokens = URLSafeTimedSerializer(self.secret, salt="audio-agent-api-token")

    @property
    def login_required(self) -> bool:
        return self.users is not None

    def _fingerprint(self, user: str) -> str:
        """Changes when the user's password entry changes (old cookies and tokens stop working)."""
        spec = (self.users or {}).get(user, "")
        return hmac.new(self.secret.encode(), f"{user}\0{spec}".encode(), "sha256").hexdigest()[:16]

    # -- cookies
    def new_visitor(self) -> str:
        return VISITOR_PREFIX + secrets.token_hex(16)

    def cookie_for(self, owner: str) -> str:
        payload: dict[str, str] = {"o": owner}
        if owner.startswith(USER_PREFIX):
            payload["f"] = self._fingerprint(owner[len(USER_PREFIX) :])
        return self._cookies.dumps(payload)

    def owner_from_cookie(self, value: str | None) -> str | None:
        if not value:
            return None
        try:
            payload = self._cookies.loads(value)
        except BadSignature:
            return None
        owner = payload.get("o") if isinstance(payload, dict) else None
        if not isinstance(owner, str):
            return None
        if self.users is None:
            return owner if owner.startswith(VISITOR_PREFIX) else None
        if not owner.startswith(USER_PREFIX):
            return None
        try:  # a login cookie expires
            self._cookies.loads(value, max_age=self.session_days * 86400)
        except BadSignature:
            return None
        return self._user_owner(owner[len(USER_PREFIX) :], payload.get("f"))

    # -- login and tokens
    def login(self, user: str, password: str) -> str | None:
        """The owner id of a correct user/password pair, else None."""
        spec = (self.users or {}).get(user)
        if spec is None:
            verify_password(password, hash_password("x", n=2**14))  # same time either way
            return None
        return USER_PREFIX + user if verify_password(password, spec) else None

    def token_for(self, owner: str) -> str:
        """A bearer token for ``owner``: a user's, or without login a visitor's key (the
        visitor's history from other programs: backend/connect.py)."""
        if owner.startswith(VISITOR_PREFIX):
            return self._tokens.dumps({"v": owner[len(VISITOR_PREFIX) :]})
        user = owner[len(USER_PREFIX) :]
        return self._tokens.dumps({"u": user, "f": self._fingerprint(user)})

    def owner_from_token(self, token: str) -> str | None:
        try:
            payload = self._tokens.loads(token, max_age=self.token_days * 86400)
        except BadSignature:
            return None
        if isinstance(payload, dict) and isinstance(payload.get("v"), str):
            return VISITOR_PREFIX + payload["v"] if self.users is None else None
        if not isinstance(payload, dict) or not isinstance(payload.get("u"), str):
            return None
        return self._user_owner(payload["u"], payload.get("f"))

    def _user_owner(self, user: str, fingerprint: Any) -> str | None:
        if self.users is None or user not in self.users:
            return None
        if not isinstance(fingerprint, str) or not hmac.compare_digest(
            fingerprint, self._fingerprint(user)
        ):
            return None
        return USER_PREFIX + user


# ------------------------------------------------------------------------------ middleware


class IdentityMiddleware:
    """Resolves the owner of each HTTP request into ``scope[SCOPE_KEY]`` (pure ASGI, so
    streamed responses such as SSE pass through untouched)."""

    def __init__(self, app: ASGIApp, identity: Identity) -> None:
        self.app = app
        self.identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        identity = self.identity
        owner: str | None = None
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):  # a user's token, or a visitor's key
            owner = identity.owner_from_token(authorization[7:].strip())
        if owner is None and identity.hf is not None:  # signed in with Hugging Face
            owner = identity.hf.owner(_cookie(headers, SESSION_COOKIE))
        if owner is None:
            owner = identity.owner_from_cookie(_cookie(headers, OWNER_COOKIE))
        new_cookie: str | None = None
        if owner is None and not identity.login_required:
            owner = identity.new_visitor()
            new_cookie = identity.cookie_for(owner)
        scope[SCOPE_KEY] = owner
        path = _app_path(scope)
        if owner is None and scope["type"] == "http" and not _is_open(path):
            await self._refuse(scope, headers, path, send)
            return
        if new_cookie is None:
            await self.app(scope, receive, send)
            return
        cookie = set_cookie_header(
            new_cookie,
            max_age=VISITOR_COOKIE_DAYS * 86400,
            secure=_is_https(scope, headers),
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
    return any(path == p or path == p + "/" for p in OPEN_PATHS)


def _is_https(scope: Scope, headers: dict[str, str]) -> bool:
    return scope.get("scheme") in ("https", "wss")


def _safe_next(target: str) -> str:
    """Only a path of this site (no scheme, no host: no open redirect)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/"
    return target


# ------------------------------------------------------------------------------ login routes

LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Log in · Ask about audio</title>
<style>
body{{font-family:system-ui,sans-serif;display:flex;justify-content:center;margin-top:12vh;
background:#f7f7f8;color:#1f2328}}
form{{background:#fff;padding:2rem;border-radius:12px;box-shadow:0 1px 4px #0002;width:20rem}}
label{{display:block;margin:.8rem 0 .3rem}}
input{{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}}
button{{margin-top:1.2rem;width:100%;padding:.6rem;font-size:1rem}}
.error{{color:#b00020}}
</style></head><body>
<form method="post" action="{action}">
<h1>Ask about audio</h1>
<p class="error" role="alert">{error}</p>
<input type="hidden" name="next" value="{next}">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form></body></html>"""


def login_page(identity: Identity, next_path: str = "/", error: str = "") -> str:
    return LOGIN_PAGE.format(
        action=html.escape(f"{identity.root_path}/login"),
        next=html.escape(_safe_next(next_path)),
        error=html.escape(error),
    )


class TokenRequest(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=1000)


def install(app: Any, identity: Identity) -> None:
    """The identity middleware, and (with login) /login, /logout and POST /api/token."""
    from fastapi import Body
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

    app.state.identity = identity
    app.add_middleware(IdentityMiddleware, identity=identity)
    if not identity.login_required:
        return

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "/") -> HTMLResponse:
        return HTMLResponse(login_page(identity, next))

    @app.post("/login", include_in_schema=False)
    async def login_submit(request: Request) -> Any:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        user = (form.get("username") or [""])[0].strip()
        password = (form.get("password") or [""])[0]
        target = _safe_next((form.get("next") or ["/"])[0])
        owner = identity.login(user, password)
        if owner is None:
            return HTMLResponse(
                login_page(identity, target, "Wrong user name or password."), status_code=401
            )
        response = RedirectResponse(f"{identity.root_path}{target}", status_code=303)
        response.headers.append(
            "set-cookie",
            set_cookie_header(
                identity.cookie_for(owner),
                max_age=int(identity.session_days * 86400),
                secure=request.url.scheme == "https",
                path=identity.root_path or "/",
                embedded=identity.embedded,
            ),
        )
        return response

    @app.get("/logout", include_in_schema=False)
    def logout() -> RedirectResponse:
        response = RedirectResponse(f"{identity.root_path}/login", status_code=303)
        response.delete_cookie(OWNER_COOKIE, path=identity.root_path or "/")
        return response

    @app.post("/api/token")
    def api_token(body: TokenRequest = Body(...)) -> JSONResponse:
        """A bearer token for the API: ``Authorization: Bearer <token>``."""
        owner = identity.login(body.username.strip(), body.password)
        if owner is None:
            return JSONResponse({"detail": "Wrong user name or password."}, status_code=401)
        return JSONResponse(
            {
                "token": identity.token_for(owner),
                "token_type": "bearer",
                "expires_in": int(identity.token_days * 86400),
            }
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m backend.auth hash [user]``: a users-file line with a scrypt hash."""
    import getpass

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "hash":
        print("usage: python -m backend.auth hash [user]  (reads the password from stdin/tty)")
        return 2
    user = args[1] if len(args) > 1 else input("user: ").strip()
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
