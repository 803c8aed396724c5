"""Sign-in with Hugging Face on a Space: Gradio's session cookie makes the owner ``hf:<user>``.

The session cookie is made by Starlette's own SessionMiddleware with the key Gradio derives from
the Space's OAuth secret, exactly as Gradio's /login/callback stores the profile; no request
leaves the machine.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app import create_app
from backend.access import hf_oauth
from backend.access.auth import OWNER_COOKIE
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_isolation import registry

SPACE_ENV = {
    "SYSTEM": "spaces",  # what a Space sets; gradio.utils.get_space() reads it
    "SPACE_ID": "lab/ask-about-audio",
    "OAUTH_CLIENT_ID": "client-id",
    "OAUTH_CLIENT_SECRET": "client-secret",
    "OAUTH_SCOPES": "openid profile",
    "OPENID_PROVIDER_URL": "https://huggingface.co",
}


def hf_session_cookie(username: str, *, expires_in: float = 3600, secret: str | None = None) -> str:
    """The ``session`` cookie Gradio's OAuth callback leaves after a sign-in."""

    def login(request: Any) -> PlainTextResponse:
        request.session["oauth_info"] = {
            "userinfo": {"preferred_username": username, "name": username.title()},
            "expires_at": int(time.time() + expires_in),
        }
        return PlainTextResponse("ok")

    key = secret or hf_oauth.session_secret(SPACE_ENV)
    app = Starlette(
        routes=[Route("/login/callback", login)],
        middleware=[Middleware(SessionMiddleware, secret_key=key, same_site="none")],
    )
    with TestClient(app) as client:
        client.get("/login/callback")
        return client.cookies[hf_oauth.SESSION_COOKIE]


@pytest.fixture
def space(tmp_path, monkeypatch):
    import gradio.oauth

    for name, value in SPACE_ENV.items():
        monkeypatch.setenv(name, value)
        if hasattr(gradio.oauth, name):  # read once when gradio was imported, as on a Space
            monkeypatch.setattr(gradio.oauth, name, value)
    reg, _ = registry()
    application = create_app(Settings(data_dir=tmp_path / "data", warm_up=False), registry=reg)
    with serve(application) as base:
        yield base


def test_enabled_only_on_a_space_with_oauth() -> None:
    assert hf_oauth.enabled(SPACE_ENV)
    assert not hf_oauth.enabled({"SPACE_ID": "lab/x"})  # a Space without hf_oauth
    assert not hf_oauth.enabled({**SPACE_ENV, "AUDIO_AGENT_HF_OAUTH": "0"})


def test_signed_in_user_has_the_same_history_on_any_device(space) -> None:
    alice = hf_session_cookie("alice")
    with httpx.Client(base_url=space, timeout=30) as laptop:
        laptop.cookies.set(hf_oauth.SESSION_COOKIE, alice)
        made = laptop.post("/api/conversations", json={"title": "on the laptop"}).json()
        assert made["owner"] == "hf:alice"
    with httpx.Client(base_url=space, timeout=30) as phone:  # another device, same sign-in
        phone.cookies.set(hf_oauth.SESSION_COOKIE, hf_session_cookie("alice"))
        titles = [c["title"] for c in phone.get("/api/conversations").json()]
        assert titles == ["on the laptop"]
        assert phone.get(f"/api/conversations/{made['id']}").status_code == 200
    with httpx.Client(base_url=space, timeout=30) as stranger:  # anonymous visitor: own space
        assert stranger.get("/api/conversations").json() == []
        assert stranger.get(f"/api/conversations/{made['id']}").status_code == 404
        assert OWNER_COOKIE in stranger.cookies
    with httpx.Client(base_url=space, timeout=30) as bob:
        bob.cookies.set(hf_oauth.SESSION_COOKIE, hf_session_cookie("bob"))
        assert bob.get("/api/conversations").json() == []


@pytest.mark.parametrize(
    "cookie",
    [
        pytest.param(lambda: hf_session_cookie("alice", expires_in=-60), id="expired"),
        pytest.param(lambda: hf_session_cookie("alice", secret="another-key"), id="forged"),
        pytest.param(lambda: "not-a-session", id="garbage"),
    ],
)
def test_expired_or_forged_sign_in_is_an_anonymous_visitor(space, cookie) -> None:
    with httpx.Client(base_url=space, timeout=30) as client:
        client.cookies.set(hf_oauth.SESSION_COOKIE, cookie())
        made = client.post("/api/conversations", json={"title": "x"}).json()
        assert made["owner"].startswith("visitor:")


def test_page_has_the_sign_in_button_on_a_space(space) -> None:
    config = httpx.get(space + "/config", timeout=30).json()
    login = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "hf-login"]
    assert login and "Hugging Face" in str(login[0]["props"].get("value"))
