"""Hugging Face Spaces sign-in (``gr.LoginButton``) as an owner.

On a Space whose README front matter has ``hf_oauth: true``, Hugging Face sets
``OAUTH_CLIENT_ID``, ``OAUTH_CLIENT_SECRET`` and ``OPENID_PROVIDER_URL``. A ``gr.LoginButton`` in
the page then makes Gradio add ``/login/huggingface``, ``/login/callback`` and ``/logout`` and keep
the signed-in profile in Starlette's signed session cookie ``session`` (gradio/oauth.py in
gradio 6: the key is sha256(OAUTH_CLIENT_SECRET + "-v4"); the profile is
``session["oauth_info"]["userinfo"]``, with ``expires_at``). The owner middleware reads that
cookie here, so the page and the API both see a signed-in person as owner ``hf:<username>``,
with the same history on any device. Checked against gradio 6's oauth.py on 2026-12-01.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Mapping

from itsdangerous import BadSignature, TimestampSigner

HF_PREFIX = "hf:"
SESSION_COOKIE = "session"  # Starlette SessionMiddleware's default name, as Gradio uses it
SESSION_MAX_AGE_S = 14 * 24 * 3600  # Starlette SessionMiddleware's default max_age


def enabled(env: Mapping[str, str]) -> bool:
    """Sign-in with Hugging Face is on: a Space with OAuth (``AUDIO_AGENT_HF_OAUTH=0`` turns it
    off)."""
    if env.get("AUDIO_AGENT_HF_OAUTH", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return bool(env.get("SPACE_ID") and env.get("OAUTH_CLIENT_ID"))


def session_secret(env: Mapping[str, str]) -> str:
    """The key Gradio signs its session cookie with (gradio/oauth.py, ``attach_oauth``)."""
    return hashlib.sha256(((env.get("OAUTH_CLIENT_SECRET") or "") + "-v4").encode()).hexdigest()


class HfSessions:
    """Reads the signed-in Hugging Face user from Gradio's session cookie."""

    def __init__(self, secret: str, max_age_s: int = SESSION_MAX_AGE_S) -> None:
        self._signer = TimestampSigner(secret)
        self._max_age_s = max_age_s

    def owner(self, cookie: str | None) -> str | None:
        """``hf:<username>`` for a valid, unexpired sign-in; None otherwise."""
        if not cookie:
            return None
        try:
            raw = self._signer.unsign(cookie.encode(), max_age=self._max_age_s)
            session = json.loads(base64.b64decode(raw))
        except (BadSignature, ValueError):
            return None
        info = session.get("oauth_info") if isinstance(session, dict) else None
        if not isinstance(info, dict):
            return None
        expires_at = info.get("expires_at")
        if isinstance(expires_at, int | float) and expires_at < time.time():
            return None
        userinfo = info.get("userinfo")
        name = userinfo.get("preferred_username") if isinstance(userinfo, dict) else None
        return HF_PREFIX + name if isinstance(name, str) and name else None
