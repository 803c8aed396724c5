"""Owner ids in cookies and tokens: signing, reading, and the server-side sessions of logins.

- Visitors: ``visitor:<32 hex>`` in a signed cookie (``cookie_for``/``owner_from_cookie``).
- Users (``AUDIO_AGENT_USERS``): ``user:<name>`` in a login cookie or an API bearer token.
  Each carries a fingerprint of the user's password entry (a new password ends them) and a
  session id, a row of the ``sessions`` table (``storage.login_sessions``) that logout
  revokes. A valid session is looked up again after ``SESSION_CHECK_S`` (so a logout in
  another process takes effect within that); in this process at once.
- ``visitor_wait``: new visitors per client address (``AUDIO_AGENT_NEW_VISITORS_PER_HOUR``).
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from backend.access.clients import RateWindow
from backend.access.hf_oauth import HfSessions
from backend.access.passwords import check_login
from backend.access.users import Users
from storage.login_sessions import LoginSessions

VISITOR_PREFIX = "visitor:"
USER_PREFIX = "user:"
SECRET_FILE = "secret_key"
SESSION_CHECK_S = 5.0


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
    """Signs and reads owner cookies and API tokens; with ``sessions``, every login cookie
    and token is also a row that logout revokes."""

    secret: str
    users: Users | None = None  # None: anonymous visitors; else login required
    token_days: float = 30.0
    session_days: float = 30.0
    root_path: str = ""
    embedded: bool = False  # cookies for a cross-site iframe (set_cookie_header)
    hf: HfSessions | None = None  # sign-in with Hugging Face on a Space (backend.access.hf_oauth)
    sessions: LoginSessions | None = None  # server-side sessions (None: signatures only)
    new_visitors_per_hour: int = 0  # per client address; 0: no limit
    _cookies: URLSafeTimedSerializer = field(init=False, repr=False)
    _tokens: URLSafeTimedSerializer = field(init=False, repr=False)
    _valid: OrderedDict[str, tuple[str, float]] = field(init=False, repr=False)
    _revoked: dict[str, float] = field(init=False, repr=False)  # session or owner -> when
    _lock: threading.Lock = field(init=False, repr=False)
    _new_visitors: RateWindow = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._cookies = URLSafeTimedSerializer(self.secret, salt="audio-agent-owner")
        self._tokens = URLSafeTimedSerializer(self.secret, salt="audio-agent-api-token")
        self._valid = OrderedDict()
        self._revoked = {}
        self._lock = threading.Lock()
        self._new_visitors = RateWindow(3600)

    @property
    def login_required(self) -> bool:
        return self.users is not None

    def _fingerprint(self, user: str) -> str:
        """Changes when the user's password entry changes (old cookies and tokens stop working)."""
        spec = (self.users.get(user) if self.users else None) or ""
        return hmac.new(self.secret.encode(), f"{user}\0{spec}".encode(), "sha256").hexdigest()[:16]

    # -- visitors
    def new_visitor(self) -> str:
        return VISITOR_PREFIX + secrets.token_hex(16)

    def visitor_wait(self, address: str) -> int | None:
        """Seconds until ``address`` may make another new visitor (None: now, and counted)."""
        return self._new_visitors.take(address, self.new_visitors_per_hour)

    # -- cookies
    def cookie_for(self, owner: str) -> str:
        """A visitor's cookie, or a new login session's cookie for a user."""
        payload: dict[str, str] = {"o": owner}
        if owner.startswith(USER_PREFIX):
            payload["f"] = self._fingerprint(owner[len(USER_PREFIX) :])
            payload["s"] = self._new_session(owner, "cookie", self.session_days)
        return self._cookies.dumps(payload)

    def _read_cookie(self, value: str | None) -> dict[str, Any] | None:
        if not value:
            return None
        try:
            payload = self._cookies.loads(value)
        except BadSignature:
            return None
        return payload if isinstance(payload, dict) and isinstance(payload.get("o"), str) else None

    def owner_from_cookie(self, value: str | None) -> str | None:
        payload = self._read_cookie(value)
        if payload is None:
            return None
        owner = payload["o"]
        if self.users is None:
            return owner if owner.startswith(VISITOR_PREFIX) else None
        if not owner.startswith(USER_PREFIX):
            return None
        try:  # a login cookie expires
            self._cookies.loads(value, max_age=self.session_days * 86400)  # type: ignore[arg-type]
        except BadSignature:
            return None
        return self._user_owner(owner[len(USER_PREFIX) :], payload.get("f"), payload.get("s"))

    def cookie_session(self, value: str | None) -> str | None:
        payload = self._read_cookie(value)
        session = payload.get("s") if payload else None
        return session if isinstance(session, str) else None

    # -- login and tokens
    def login(self, user: str, password: str) -> str | None:
        """The owner id of a correct user/password pair, else None (in the same time for
        any user name: ``backend.access.passwords.check_login``)."""
        spec = self.users.get(user) if self.users is not None else None
        return USER_PREFIX + user if check_login(password, spec) else None

    def token_for(self, owner: str) -> str:
        """A bearer token for ``owner``: a user's (a revocable session), or without login a
        visitor's key (the visitor's history from other programs: backend/http/connect.py)."""
        if owner.startswith(VISITOR_PREFIX):
            return self._tokens.dumps({"v": owner[len(VISITOR_PREFIX) :]})
        user = owner[len(USER_PREFIX) :]
        session = self._new_session(owner, "token", self.token_days)
        return self._tokens.dumps({"u": user, "f": self._fingerprint(user), "s": session})

    def _read_token(self, token: str) -> dict[str, Any] | None:
        try:
            payload = self._tokens.loads(token, max_age=self.token_days * 86400)
        except BadSignature:
            return None
        return payload if isinstance(payload, dict) and isinstance(payload.get("u"), str) else None

    def owner_from_token(self, token: str) -> str | None:
        visitor = self._visitor_key(token)
        if visitor is not None:
            return visitor
        payload = self._read_token(token)
        if payload is None:
            return None
        return self._user_owner(payload["u"], payload.get("f"), payload.get("s"))

    def _visitor_key(self, token: str) -> str | None:
        """The visitor a key names, only while login is off (then only users have tokens)."""
        if self.users is not None:
            return None
        try:
            payload = self._tokens.loads(token, max_age=self.token_days * 86400)
        except BadSignature:
            return None
        if isinstance(payload, dict) and isinstance(payload.get("v"), str):
            return VISITOR_PREFIX + payload["v"]
        return None

    def token_session(self, token: str) -> str | None:
        payload = self._read_token(token)
        session = payload.get("s") if payload else None
        return session if isinstance(session, str) else None

    def _user_owner(self, user: str, fingerprint: Any, session: Any) -> str | None:
        if self.users is None or user not in self.users:
            return None
        if not isinstance(fingerprint, str) or not hmac.compare_digest(
            fingerprint, self._fingerprint(user)
        ):
            return None
        owner = USER_PREFIX + user
        if self.sessions is not None and (
            not isinstance(session, str) or self._session_owner(session) != owner
        ):
            return None
        return owner

    # -- server-side sessions
    def _new_session(self, owner: str, kind: str, days: float) -> str:
        session = secrets.token_urlsafe(24)
        if self.sessions is not None:
            self.sessions.add(session, owner, kind, days * 86400)
        return session

    def _session_owner(self, session: str) -> str | None:
        assert self.sessions is not None
        started = time.monotonic()
        with self._lock:
            cached = self._valid.get(session)
            if (
                cached is not None
                and started - cached[1] < SESSION_CHECK_S
                and not self._revoked_since(session, cached[0], cached[1])
            ):
                return cached[0]
        owner = self.sessions.owner_of(session)
        with self._lock:  # a logout while the row was read wins
            if owner is None or self._revoked_since(session, owner, started):
                self._valid.pop(session, None)
                return None
            self._valid[session] = (owner, started)
            while len(self._valid) > 10_000:
                self._valid.popitem(last=False)
        return owner

    def _revoked_since(self, session: str, owner: str, since: float) -> bool:
        never = float("-inf")
        return (
            max(self._revoked.get(session, never), self._revoked.get("\0" + owner, never)) >= since
        )

    def revoke(self, session: str | None, *, everywhere_for: str | None = None) -> int:
        """Revoke one session (a logout), or every session and token of an owner: in this
        process at once, in the others within ``SESSION_CHECK_S``."""
        if self.sessions is None or (session is None and everywhere_for is None):
            return 0
        now = time.monotonic()
        with self._lock:
            self._revoked = {k: t for k, t in self._revoked.items() if now - t < 60}
            if everywhere_for is not None:
                self._revoked["\0" + everywhere_for] = now
            if session is not None:
                self._revoked[session] = now
        if everywhere_for is not None:
            return self.sessions.revoke_owner(everywhere_for)
        return int(self.sessions.revoke(session))  # type: ignore[arg-type]
