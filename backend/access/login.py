"""Logging in and out (``AUDIO_AGENT_USERS``): the login page, API tokens, logout, and the
limits on guessing.

Routes (installed only with login on):

- ``GET /login``, ``POST /login`` (form): a login cookie (a new server-side session).
- ``POST /api/token`` (JSON ``{"username", "password"}``): a bearer token (its own session).
- ``GET /logout``: a page with the logout button (a GET changes nothing).
- ``POST /logout`` (form; ``everywhere=1``: every session and token of the user): revokes
  the session on the server and clears the cookie.
- ``POST /api/logout`` (bearer token or cookie; ``{"everywhere": true}``): revokes that token
  or session (or all of the user's), ``{"revoked": n}``.

``LoginThrottle``: failed logins are counted per (user name, client address), per user name
and per address over ``lockout_minutes``; past a limit, that kind of attempt is refused with
429 and ``Retry-After`` (the right password too) until the oldest failure ages out. The
refusal takes no password hashing, and unknown names count like known ones, so the answer
says nothing about which names exist. Counts live in this process.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from fastapi import Body, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel, Field

from backend.access.auth import OWNER_COOKIE, SCOPE_KEY, safe_next, set_cookie_header
from backend.access.clients import RateWindow, client_address, wait_text
from backend.access.identity import Identity


@dataclass(frozen=True)
class LoginLimits:
    failures_per_user_and_address: int = 5  # AUDIO_AGENT_LOGIN_FAILURES
    failures_per_user: int = 50  # AUDIO_AGENT_LOGIN_FAILURES_PER_USER (from any address)
    failures_per_address: int = 20  # AUDIO_AGENT_LOGIN_FAILURES_PER_ADDRESS (any user names)
    lockout_minutes: float = 15.0  # AUDIO_AGENT_LOGIN_LOCKOUT_MINUTES

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LoginLimits:
        d = cls()

        def number(name: str, default: float) -> float:
            raw = (env.get(name) or "").strip()
            value = float(raw) if raw else default
            if value <= 0:
                raise ValueError(f"{name} must be more than 0")
            return value

        return cls(
            failures_per_user_and_address=int(
                number("AUDIO_AGENT_LOGIN_FAILURES", d.failures_per_user_and_address)
            ),
            failures_per_user=int(
                number("AUDIO_AGENT_LOGIN_FAILURES_PER_USER", d.failures_per_user)
            ),
            failures_per_address=int(
                number("AUDIO_AGENT_LOGIN_FAILURES_PER_ADDRESS", d.failures_per_address)
            ),
            lockout_minutes=number("AUDIO_AGENT_LOGIN_LOCKOUT_MINUTES", d.lockout_minutes),
        )


class LoginThrottle:
    """Failed logins per (user, address), per user and per address (see the module doc)."""

    def __init__(self, limits: LoginLimits) -> None:
        self.limits = limits
        self._failures = RateWindow(limits.lockout_minutes * 60)

    def _keys(self, user: str, address: str) -> list[tuple[str, int]]:
        limits = self.limits
        return [
            (f"pair\0{user}\0{address}", limits.failures_per_user_and_address),
            (f"user\0{user}", limits.failures_per_user),
            (f"address\0{address}", limits.failures_per_address),
        ]

    def wait_s(self, user: str, address: str) -> int | None:
        """Seconds until this user name may be tried from this address again, or None."""
        waits = [self._failures.wait_s(key, limit) for key, limit in self._keys(user, address)]
        known = [w for w in waits if w is not None]
        return max(known) if known else None

    def failed(self, user: str, address: str) -> None:
        for key, _ in self._keys(user, address):
            self._failures.add(key)

    def message(self, wait: int) -> str:
        return (
            "Too many failed logins for this user name or from your network address. "
            f"Try again in {wait_text(wait)}."
        )


LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{title} · Ask about audio</title>
<style>
body{{font-family:system-ui,sans-serif;display:flex;justify-content:center;margin-top:12vh;
background:#f7f7f8;color:#1f2328}}
form{{background:#fff;padding:2rem;border-radius:12px;box-shadow:0 1px 4px #0002;width:20rem}}
label{{display:block;margin:.8rem 0 .3rem}}
input{{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}}
input[type=checkbox]{{width:auto}}
button{{margin-top:1.2rem;width:100%;padding:.6rem;font-size:1rem}}
.error{{color:#b00020}}
</style></head><body>
<form method="post" action="{action}">
<h1>Ask about audio</h1>
<p class="error" role="alert">{error}</p>
{fields}
</form></body></html>"""

LOGIN_FIELDS = """<input type="hidden" name="next" value="{next}">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" required{user_focus}{user_value}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password"
 required{password_focus}>
<button type="submit">Log in</button>"""

LOGOUT_FIELDS = """<p>Logged in as <strong>{user}</strong>.</p>
<label><input type="checkbox" name="everywhere" value="1"> Also log out everywhere else
(every device and API token)</label>
<button type="submit">Log out</button>"""


def login_page(identity: Identity, next_path: str = "/", error: str = "", user: str = "") -> str:
    """The login form; after a failed try it keeps the user name typed (the focus then goes to
    the password, the field to type again)."""
    return LOGIN_PAGE.format(
        title="Log in",
        action=html.escape(f"{identity.root_path}/login"),
        error=html.escape(error),
        fields=LOGIN_FIELDS.format(
            next=html.escape(safe_next(next_path)),
            user_value=f' value="{html.escape(user)}"' if user else "",
            user_focus="" if user else " autofocus",
            password_focus=" autofocus" if user else "",
        ),
    )


def logout_page(identity: Identity, owner: str) -> str:
    return LOGIN_PAGE.format(
        title="Log out",
        action=html.escape(f"{identity.root_path}/logout"),
        error="",
        fields=LOGOUT_FIELDS.format(user=html.escape(owner.removeprefix("user:"))),
    )


class TokenRequest(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=1000)


class LogoutRequest(BaseModel):
    everywhere: bool = False


def _form(raw: bytes) -> dict[str, str]:
    parsed = parse_qs(raw.decode("utf-8", "replace"))
    return {key: values[0] for key, values in parsed.items() if values}


def install(app: Any, identity: Identity, limits: LoginLimits) -> None:
    """The login routes (call only with login on)."""
    throttle = LoginThrottle(limits)
    app.state.login_throttle = throttle

    async def attempt(request: Request, user: str, password: str) -> str | int | None:
        """The owner (right password), the seconds to wait (throttled), or None (wrong)."""
        address = client_address(request.scope)
        wait = throttle.wait_s(user, address)
        if wait is not None:
            return wait
        owner = await asyncio.to_thread(identity.login, user, password)
        if owner is None:
            throttle.failed(user, address)
        return owner

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "/") -> HTMLResponse:
        return HTMLResponse(login_page(identity, next))

    @app.post("/login", include_in_schema=False)
    async def login_submit(request: Request) -> Any:
        form = _form(await request.body())
        user = form.get("username", "").strip()[:200]
        target = safe_next(form.get("next", "/"))
        result = await attempt(request, user, form.get("password", "")[:1000])
        if isinstance(result, int):
            return HTMLResponse(
                login_page(identity, target, throttle.message(result), user),
                status_code=429,
                headers={"Retry-After": str(result)},
            )
        if result is None:
            return HTMLResponse(
                login_page(identity, target, "Wrong user name or password.", user),
                status_code=401,
            )
        cookie = await asyncio.to_thread(identity.cookie_for, result)
        response = RedirectResponse(f"{identity.root_path}{target}", status_code=303)
        response.headers.append(
            "set-cookie",
            set_cookie_header(
                cookie,
                max_age=int(identity.session_days * 86400),
                secure=request.url.scheme == "https",
                path=identity.root_path or "/",
                embedded=identity.embedded,
            ),
        )
        return response

    @app.get("/logout", include_in_schema=False)
    def logout_form(request: Request) -> Any:
        owner = request.scope.get(SCOPE_KEY)
        if not owner:
            return RedirectResponse(f"{identity.root_path}/login", status_code=303)
        return HTMLResponse(logout_page(identity, owner))

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> RedirectResponse:
        form = _form(await request.body())
        owner = request.scope.get(SCOPE_KEY)
        session = identity.cookie_session(request.cookies.get(OWNER_COOKIE))
        everywhere = bool(owner) and form.get("everywhere") in ("1", "on", "true")
        await asyncio.to_thread(
            identity.revoke, session, everywhere_for=owner if everywhere else None
        )
        response = RedirectResponse(f"{identity.root_path}/login", status_code=303)
        response.delete_cookie(OWNER_COOKIE, path=identity.root_path or "/")
        return response

    @app.post("/api/logout")
    async def api_logout(request: Request, body: LogoutRequest | None = None) -> JSONResponse:
        """Revoke the bearer token (or login cookie) of this request; ``everywhere``: every
        session and token of the user."""
        owner = request.scope.get(SCOPE_KEY)
        authorization = request.headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            session = identity.token_session(authorization[7:].strip())
        else:
            session = identity.cookie_session(request.cookies.get(OWNER_COOKIE))
        revoked = await asyncio.to_thread(
            identity.revoke,
            session,
            everywhere_for=owner if body is not None and body.everywhere else None,
        )
        return JSONResponse({"revoked": revoked})

    @app.post("/api/token")
    async def api_token(request: Request, body: TokenRequest = Body(...)) -> JSONResponse:
        """A bearer token for the API: ``Authorization: Bearer <token>``."""
        result = await attempt(request, body.username.strip(), body.password)
        if isinstance(result, int):
            return JSONResponse(
                {"detail": throttle.message(result)},
                status_code=429,
                headers={"Retry-After": str(result)},
            )
        if result is None:
            return JSONResponse({"detail": "Wrong user name or password."}, status_code=401)
        token = await asyncio.to_thread(identity.token_for, result)
        return JSONResponse(
            {
                "token": token,
                "token_type": "bearer",
                "expires_in": int(identity.token_days * 86400),
            }
        )
