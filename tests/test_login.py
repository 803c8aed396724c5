"""Optional login (AUDIO_AGENT_USERS), API bearer tokens, the Host check and --share."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import app as app_module
from app import create_app
from backend.access import identity
from backend.access.auth import OWNER_COOKIE
from backend.access.passwords import hash_password, verify_password
from backend.access.users import parse_users
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_isolation import ASK, ask, registry

HTML = {"Accept": "text/html,application/xhtml+xml"}


def users_file(tmp_path: Path, bob_password: str = "bob-secret") -> Path:
    path = tmp_path / "users.txt"
    path.write_text(
        "# users of the private demo\n"
        "alice:alice-plain-password\n"
        f"bob:{hash_password(bob_password)}\n"
    )
    return path


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Any, str, Path]]:
    reg, _ = registry()
    settings = Settings(data_dir=tmp_path / "data", warm_up=False, users=str(users_file(tmp_path)))
    application = create_app(settings, registry=reg)
    with serve(application) as base:
        yield application, base, tmp_path


@contextlib.contextmanager
def log_in(base: str, user: str, password: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=30) as http:
        response = http.post(
            "/login", data={"username": user, "password": password, "next": "/"}, headers=HTML
        )
        assert response.status_code == 303, response.text
        assert response.headers["location"] == "/"
        yield http


def test_passwords_hashes_and_users_file(tmp_path):
    spec = hash_password("s3cret")
    assert spec.startswith("scrypt$") and "s3cret" not in spec
    assert verify_password("s3cret", spec) and not verify_password("wrong", spec)
    assert verify_password("plain", "plain") and not verify_password("plai", "plain")
    import base64
    import hashlib

    salt = b"0123456789abcdef"
    digest = hashlib.pbkdf2_hmac("sha256", b"pw", salt, 1000)
    b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")  # noqa: E731
    assert verify_password("pw", f"pbkdf2_sha256$1000${b64(salt)}${b64(digest)}")
    assert parse_users("carol:x, dave:y") == {"carol": "x", "dave": "y"}
    assert set(parse_users(str(users_file(tmp_path)))) == {"alice", "bob"}
    with pytest.raises(ValueError, match="line 1"):
        parse_users("no-colon-here")


def test_login_page_cookie_and_same_history_on_any_device(private, tone_wav):
    application, base, _ = private
    with httpx.Client(base_url=base, timeout=30) as anonymous:
        assert anonymous.get("/api/health").status_code == 200
        refused = anonymous.get("/api/conversations")
        assert refused.status_code == 401 and "Log in" in refused.json()["detail"]
        assert refused.headers["www-authenticate"] == "Bearer"
        page = anonymous.get("/", headers=HTML)
        assert page.status_code == 303 and page.headers["location"] == "/login?next=%2F"
        assert anonymous.get("/gradio_api/info").status_code == 401
        assert "<form" in anonymous.get("/login").text
        wrong = anonymous.post("/login", data={"username": "alice", "password": "nope"})
        assert wrong.status_code == 401 and "Wrong user name or password" in wrong.text
        assert OWNER_COOKIE not in anonymous.cookies
        # no open redirect after login
        elsewhere = anonymous.post(
            "/login",
            data={"username": "alice", "password": "alice-plain-password", "next": "//evil.test"},
        )
        assert elsewhere.headers["location"] == "/"

    with log_in(base, "alice", "alice-plain-password") as laptop:
        cookie = laptop.cookies[OWNER_COOKIE]
        assert laptop.get("/", headers=HTML).status_code == 200  # the page itself
        conv = laptop.post("/api/conversations", json={"title": "Alice's"}).json()
        assert conv["owner"] == "user:alice"
    with log_in(base, "alice", "alice-plain-password") as phone:
        assert [c["title"] for c in phone.get("/api/conversations").json()] == ["Alice's"]
    with log_in(base, "bob", "bob-secret") as bob:
        assert bob.get("/api/conversations").json() == []
        assert bob.get(f"/api/conversations/{conv['id']}").status_code == 404
        assert "Log out" in bob.get("/logout").text  # a GET only shows the button
        assert bob.get("/api/conversations").status_code == 200
        logout = bob.post("/logout")
        assert logout.status_code == 303 and OWNER_COOKIE not in bob.cookies
        assert bob.get("/api/conversations").status_code == 401
    # An anonymous visitor cookie signed with the same secret is no login.
    visitor = application.state.identity.cookie_for("visitor:" + "a" * 32)
    forged = httpx.get(f"{base}/api/conversations", headers={"Cookie": f"{OWNER_COOKIE}={visitor}"})
    assert forged.status_code == 401
    assert cookie != visitor


def test_bearer_tokens(private, tone_wav):
    application, base, tmp_path = private
    with httpx.Client(base_url=base, timeout=30) as http:
        bad = http.post("/api/token", json={"username": "alice", "password": "x"})
        assert bad.status_code == 401 and bad.json()["detail"] == "Wrong user name or password."
        unknown = http.post("/api/token", json={"username": "mallory", "password": "x"})
        assert unknown.status_code == 401 and unknown.json() == bad.json()
        made = http.post("/api/token", json={"username": "bob", "password": "bob-secret"})
        assert made.status_code == 200
        token = made.json()["token"]
        assert made.json()["token_type"] == "bearer" and made.json()["expires_in"] == 30 * 86400
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=30, headers=bearer) as api:
        conv = api.post("/api/conversations", json={"title": "Bob's"}).json()
        with open(tone_wav, "rb") as fh:
            audio = api.post("/api/audio", files={"file": ("t.wav", fh)}).json()
        events = ask(api, conv["id"], audio["id"])
        assert events[-1]["type"] == "run_finished"
        assert OWNER_COOKIE not in api.cookies  # tokens need no cookie
    with log_in(base, "bob", "bob-secret") as browser:
        assert [c["title"] for c in browser.get("/api/conversations").json()] == ["Bob's"]
    with log_in(base, "alice", "alice-plain-password") as alice:
        assert alice.post(f"/api/conversations/{conv['id']}/ask", json=ASK).status_code == 404
    tampered = {"Authorization": f"Bearer {token[:-3]}abc"}
    assert httpx.get(f"{base}/api/conversations", headers=tampered).status_code == 401

    # A changed password ends the tokens (and login cookies) made with the old one.
    users_file(tmp_path, bob_password="a-new-password")
    reg, _ = registry()
    settings = Settings(
        data_dir=tmp_path / "data", warm_up=False, users=str(tmp_path / "users.txt")
    )
    with serve(create_app(settings, registry=reg, ui=False)) as again:
        assert httpx.get(f"{again}/api/conversations", headers=bearer).status_code == 401


def test_gradio_handlers_get_the_logged_in_user(private):
    application, base, _ = private
    with log_in(base, "alice", "alice-plain-password") as alice:
        alice.post("/api/conversations", json={"title": "Alices notes"})
        started = alice.post("/gradio_api/call/load", json={"data": ["/"]})
        assert started.status_code == 200
        result = alice.get(f"/gradio_api/call/load/{started.json()['event_id']}").text
        assert "Alices notes" in result
    with log_in(base, "bob", "bob-secret") as bob:
        started = bob.post("/gradio_api/call/load", json={"data": ["/"]})
        assert (
            "Alices notes"
            not in bob.get(f"/gradio_api/call/load/{started.json()['event_id']}").text
        )


# ------------------------------------------------------------------------------ hosting


def test_host_header_is_checked(tmp_path, caplog):
    reg, _ = registry()
    application = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=reg, ui=False)
    with serve(application) as base:
        port = base.rsplit(":", 1)[1]
        assert httpx.get(f"{base}/api/health").status_code == 200
        assert httpx.get(f"{base}/api/health", headers={"Host": f"localhost:{port}"}).is_success
        rebound = httpx.get(f"{base}/api/health", headers={"Host": "attacker.example"})
        assert rebound.status_code == 400

    settings = Settings(
        data_dir=tmp_path, warm_up=False, allowed_hosts=["demo.example.org", "*.example.net"]
    )
    with serve(create_app(settings, registry=reg, ui=False)) as base:
        assert httpx.get(f"{base}/api/health").status_code == 400
        for host in ("demo.example.org", "a.example.net"):
            assert httpx.get(f"{base}/api/health", headers={"Host": host}).status_code == 200


def test_open_bind_without_login_warns(tmp_path, caplog):
    reg, _ = registry()
    with caplog.at_level(logging.WARNING, logger="audio_agent.hosting"):
        create_app(
            Settings(data_dir=tmp_path, warm_up=False, host="0.0.0.0"), registry=reg, ui=False
        )
    assert "every visitor" in caplog.text and "provider keys" in caplog.text
    caplog.clear()
    users = users_file(tmp_path)
    with caplog.at_level(logging.WARNING, logger="audio_agent.hosting"):
        create_app(
            Settings(data_dir=tmp_path, warm_up=False, host="0.0.0.0", users=str(users)),
            registry=reg,
            ui=False,
        )
        create_app(Settings(data_dir=tmp_path, warm_up=False), registry=reg, ui=False)
    assert "every visitor" not in caplog.text


def test_share_without_internet_fails_fast_and_clearly(tmp_path, monkeypatch, capsys):
    """The socket guard stands in for a machine without outbound internet."""
    monkeypatch.setenv("AUDIO_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(app_module, "create_app", lambda *a, **k: pytest.fail("started anyway"))
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(app_module.main(["--share"])))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "--share hung without internet"
    assert result == [2]
    err = capsys.readouterr().err
    assert "--share needs outbound internet" in err and "api.gradio.app" in err
    guard = sys.modules["conftest"]  # tests/conftest.py as pytest loaded it
    attempts = list(guard.BLOCKED)
    guard.BLOCKED.clear()  # the one attempt this test is about
    assert attempts and all("api.gradio.app" in a for a in attempts)
    assert not (tmp_path / "data").exists()  # nothing was set up


def test_identity_secret_file_is_made_once(tmp_path, monkeypatch):
    monkeypatch.delenv("AUDIO_AGENT_SECRET", raising=False)
    first = identity.load_secret(tmp_path)
    assert identity.load_secret(tmp_path) == first and len(first) >= 48


def test_space_defaults_and_cross_site_cookie(tmp_path, monkeypatch):
    for name in ("AUDIO_AGENT_HOST", "AUDIO_AGENT_PORT", "GRADIO_SERVER_NAME", "PORT"):
        monkeypatch.delenv(name, raising=False)
    assert Settings.from_env().host == "127.0.0.1" and not Settings.from_env().embedded
    monkeypatch.setenv("SPACE_ID", "someone/ask-about-audio")
    monkeypatch.setenv("PORT", "7861")
    on_space = Settings.from_env()
    assert (on_space.host, on_space.port, on_space.embedded) == ("0.0.0.0", 7861, True)
    monkeypatch.setenv("AUDIO_AGENT_EMBEDDED", "0")
    assert not Settings.from_env().embedded

    reg, _ = registry()
    settings = Settings(data_dir=tmp_path, warm_up=False, embedded=True)
    with serve(create_app(settings, registry=reg, ui=False)) as base:
        cookie = httpx.get(f"{base}/api/conversations").headers["set-cookie"]
    assert "SameSite=None" in cookie and "Secure" in cookie and "Partitioned" in cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" not in cookie


def test_root_path_behind_a_proxy(tmp_path):
    """Served under /audio by a proxy that strips the prefix: links, redirects, cookies."""
    reg, _ = registry()
    users = users_file(tmp_path)
    settings = Settings(data_dir=tmp_path, warm_up=False, users=str(users), root_path="/audio")
    with serve(create_app(settings, registry=reg)) as base:
        page = httpx.get(f"{base}/", headers=HTML)
        assert page.status_code == 303 and page.headers["location"] == "/audio/login?next=%2F"
        form = httpx.get(f"{base}/login").text
        assert 'action="/audio/login"' in form
        done = httpx.post(  # a full-strength hash: seconds on a loaded machine
            f"{base}/login",
            data={"username": "alice", "password": "alice-plain-password"},
            timeout=60,
        )
        assert done.status_code == 303 and done.headers["location"] == "/audio/"
        assert "Path=/audio" in done.headers["set-cookie"]
