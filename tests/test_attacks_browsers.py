"""Attacks from other clients and other sites (issue 18, attacks 2, 3, 5, 8 and the leaks):
cookie-less floods, cross-origin reads and writes, missing security headers, what shared
exports and Gradio's streams give away.

Where sockets and the real middleware stack matter (CORS preflights, the flood) the server
is a real process (``python app.py``); the rest runs in process over real HTTP.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from app import create_app
from backend.host.settings import Settings
from tests.servers import serve
from tests.sse import sse_frames
from tests.test_isolation import ASK, ask, registry
from tests.test_processes import Server
from tests.test_upload_quota import tone_wav

HOST = "demo.example.org"
EVIL = "https://evil.example"
FRIEND = "https://friend.example"


@contextlib.contextmanager
def process(tmp_path: Path, **env: str) -> Iterator[Server]:
    server = Server(tmp_path / "data", tmp_path / "server.log", **env)
    try:
        yield server
    finally:
        server.stop()


# ------------------------------------------------------------------ attack 2: the flood


def visitor_question(base: str, address: str, wav: bytes) -> httpx.Response:
    """A new visitor (its own cookie jar) at ``address`` uploads and asks; the response of the
    ask, with the stream closed at once (the run goes on in the server)."""
    headers = {"X-Forwarded-For": address}
    with httpx.Client(base_url=base, timeout=30, headers=headers) as http:
        conv = http.post("/api/conversations", json={})
        if conv.status_code != 201:
            return conv
        audio = http.post("/api/audio", files={"file": ("t.wav", wav)})
        if audio.status_code != 201:
            return audio
        body = {
            **ASK,
            "planner": "scripted",
            "tools": ["slow_tool"],
            "audio_id": audio.json()["id"],
        }
        with http.stream("POST", f"/api/conversations/{conv.json()['id']}/ask", json=body) as r:
            if r.status_code != 200:
                r.read()  # the refusal's detail
            return r


def test_cookie_less_flood_from_one_address_cannot_fill_the_queue(tmp_path):
    """Attack: 90 cookie-less 'visitors' filled the run queue (8 running, 64 waiting) and a
    genuine new visitor got 'server is busy'."""
    env = {
        "AUDIO_AGENT_MAX_RUNS": "2",
        "AUDIO_AGENT_RUN_QUEUE": "8",
        "AUDIO_AGENT_TEST_CALLS": "100000",  # runs until the server stops
        "AUDIO_AGENT_TEST_DELAY_S": "0.5",
    }
    wav = tone_wav(440, 1.0)
    with process(tmp_path, **env) as server:
        flood = [visitor_question(server.base, "203.0.113.7", wav) for _ in range(14)]
        admitted = [r for r in flood if r.status_code == 200]
        assert len(admitted) <= 3, [r.status_code for r in flood]
        refused = [r for r in flood if r.status_code == 429]
        assert refused and "network address" in refused[-1].json()["detail"]
        assert all(int(r.headers["Retry-After"]) >= 1 for r in refused)
        # a genuine visitor from elsewhere is served (queued behind the running ones at most)
        with httpx.Client(
            base_url=server.base, timeout=30, headers={"X-Forwarded-For": "198.51.100.20"}
        ) as http:
            conv = http.post("/api/conversations", json={}).json()["id"]
            audio = http.post("/api/audio", files={"file": ("t.wav", wav)}).json()["id"]
            body = {**ASK, "planner": "scripted", "tools": ["slow_tool"], "audio_id": audio}
            with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as answer:
                assert answer.status_code == 200
                first = next(sse_frames(answer))
                assert first["event"] in ("queued", "run_started")


def _visitors(client: TestClient, addresses: list[str]) -> list[int]:
    statuses = []
    for address in addresses:
        client.cookies.clear()  # a new visitor each time
        answer = client.post("/api/conversations", json={}, headers={"X-Forwarded-For": address})
        statuses.append(answer.status_code)
    return statuses


def test_new_visitors_are_limited_per_address_and_forwarded_only_from_trusted_proxies(
    tmp_path,
):
    from backend.access.clients import ClientLimits

    settings = Settings(
        data_dir=tmp_path,
        warm_up=False,
        trusted_proxies=["10.0.0.1"],
        client_limits=ClientLimits(new_visitors_per_hour=2),
    )
    app = create_app(settings, registry=registry()[0], ui=False)
    addresses = ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    # A client that is not the proxy names any address it likes: it is not believed.
    with TestClient(app, client=("203.0.113.9", 5000)) as direct:
        statuses = _visitors(direct, addresses)
        assert statuses == [201, 201, 429]
        refused = direct.post("/api/conversations", json={})
        assert "Too many new visitors" in refused.json()["detail"]
        reading = direct.get("/api/conversations")
        assert reading.status_code == 200 and reading.json() == []  # reading still works...
        assert "set-cookie" not in reading.headers  # ...but hands out no visitor past the limit
    # A read first got a cookie for free, and with it a known visitor: now it counts too.
    with TestClient(app, client=("203.0.113.10", 5000)) as reader:
        statuses = []
        for _ in range(4):
            reader.cookies.clear()
            reader.get("/api/conversations")
            statuses.append(reader.post("/api/conversations", json={}).status_code)
        assert statuses == [201, 201, 429, 429]
        reader.cookies.clear()
        assert reader.get("/api/health").status_code == 200  # health checks make no visitor
        assert "set-cookie" not in reader.get("/api/health").headers
    # Through the trusted proxy, each forwarded address is its own client.
    with TestClient(app, client=("10.0.0.1", 5000)) as proxied:
        assert _visitors(proxied, addresses) == [201, 201, 201]


# ------------------------------------------------------------------ attack 3: CORS and CSRF


def test_other_sites_can_neither_read_nor_change_a_visitors_data(tmp_path):
    """Attack: on a public host name Gradio's CORS echoed any Origin with credentials; an evil
    origin read a visitor's list and ran DELETE/PATCH with the visitor's cookie."""
    env = {"AUDIO_AGENT_ALLOWED_HOSTS": f"{HOST},127.0.0.1", "AUDIO_AGENT_ALLOWED_ORIGINS": FRIEND}
    with (
        process(tmp_path, **env) as server,
        httpx.Client(base_url=server.base, timeout=30, headers={"Host": HOST}) as victim,
    ):
        conv = victim.post("/api/conversations", json={"title": "Victim's"}).json()["id"]
        target = f"/api/conversations/{conv}"

        def cross(method: str, path: str, origin: str = EVIL, **kw: Any) -> httpx.Response:
            return victim.request(method, path, headers={"Origin": origin}, **kw)

        # reads: no preflight passes, no response is readable by the other site
        for path, method in ((target, "DELETE"), ("/api/conversations", "GET"),
                             ("/gradio_api/queue/join", "POST")):  # fmt: skip
            preflight = victim.options(
                path,
                headers={
                    "Origin": EVIL,
                    "Access-Control-Request-Method": method,
                    "Access-Control-Request-Headers": "content-type",
                },
            )
            assert preflight.status_code == 400, path  # a failed preflight: nothing is sent
            assert "access-control-allow-origin" not in preflight.headers, path
        listed = cross("GET", "/api/conversations")
        assert "access-control-allow-origin" not in listed.headers
        page_config = cross("GET", "/config")  # Gradio's own routes likewise
        assert page_config.status_code == 200
        assert "access-control-allow-origin" not in page_config.headers

        # writes with the visitor's cookie: refused before anything changes
        assert cross("DELETE", target).status_code == 403
        renamed = cross("PATCH", target, json={"title": "pwned"})
        assert renamed.status_code == 403 and "not from this site" in renamed.json()["detail"]
        assert cross("POST", "/gradio_api/queue/join", json={}).status_code == 403
        assert cross("POST", "/api/conversations", origin="null", json={}).status_code == 403
        sandboxed = victim.patch(  # "null" from another site's sandboxed frame
            target,
            json={"title": "pwned"},
            headers={"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        )
        assert sandboxed.status_code == 403
        no_origin = victim.patch(
            target, json={"title": "pwned"}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert no_origin.status_code == 403
        assert victim.get(target).json()["conversation"]["title"] == "Victim's"

        # this site's own page, a configured origin, and programs (no Origin) still work
        same = cross("PATCH", target, origin=f"https://{HOST}", json={"title": "Mine"})
        assert same.status_code == 200
        assert victim.patch(target, json={"title": "Mine too"}).status_code == 200
        # our own form under Referrer-Policy: no-referrer says Origin "null", same-origin
        own_form = victim.patch(
            target,
            json={"title": "Mine"},
            headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        )
        assert own_form.status_code == 200
        friendly = victim.options(
            target, headers={"Origin": FRIEND, "Access-Control-Request-Method": "DELETE"}
        )
        assert friendly.headers["access-control-allow-origin"] == FRIEND
        assert friendly.headers["access-control-allow-credentials"] == "true"
        assert cross("DELETE", target, origin=FRIEND).status_code == 204


# ------------------------------------------------------------------ attack 8: headers


def upload_named(http: httpx.Client, name: str) -> str:
    answer = http.post("/api/audio", files={"file": (name, tone_wav(440, 1.0))})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_security_headers_on_every_response_and_audio_typed_by_its_content(tmp_path):
    settings = Settings(data_dir=tmp_path, warm_up=False)
    with (
        serve(create_app(settings, registry=registry()[0])) as base,
        httpx.Client(base_url=base, timeout=60) as http,
    ):
        audio = upload_named(http, "page.html")  # a WAV named like a web page
        answers = {
            "page": http.get("/"),
            "view": http.get("/view/?token=nothing"),
            "api": http.get("/api/conversations"),
            "health": http.get("/api/health"),
            "missing": http.get("/api/conversations/nope"),
            "audio": http.get(f"/api/audio/{audio}"),
            "refused": http.post("/api/conversations", json={"title": ""}),
        }
        for name, answer in answers.items():
            headers = answer.headers
            assert headers.get("x-content-type-options") == "nosniff", name
            assert headers.get("referrer-policy") == "no-referrer", name
            assert "frame-ancestors 'self'" in headers.get("content-security-policy", ""), name
            assert "private" in headers.get("cache-control", ""), name
        assert "script-src" in answers["page"].headers["content-security-policy"]
        assert "default-src 'none'" in answers["api"].headers["content-security-policy"]
        assert answers["audio"].headers["content-type"] == "audio/wav"
        assert answers["audio"].headers["content-disposition"].startswith("inline")


def test_embedded_app_may_be_framed_by_huggingface_only(tmp_path):
    settings = Settings(data_dir=tmp_path, warm_up=False, embedded=True)
    app = create_app(settings, registry=registry()[0], ui=False)
    with TestClient(app) as client:
        policy = client.get("/api/health").headers["content-security-policy"]
        assert "frame-ancestors 'self' https://huggingface.co" in policy
        # the cookie is SameSite=None there, so the Origin check is what stops other sites
        assert (
            client.post("/api/conversations", json={}, headers={"Origin": EVIL}).status_code == 403
        )


# ------------------------------------------------------------------ attack 5, leaks


@pytest.fixture
def shared(tmp_path: Path, tone_wav: Path) -> Iterator[tuple[httpx.Client, Any, str, str]]:
    app = create_app(Settings(data_dir=tmp_path, warm_up=False), registry=registry()[0])
    with serve(app) as base, httpx.Client(base_url=base, timeout=60) as http:
        conv = http.post("/api/conversations", json={"title": "Alice secret"}).json()["id"]
        with open(tone_wav, "rb") as fh:
            audio = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
        events = ask(http, conv, audio)
        assert events[-1]["type"] == "run_finished"
        token = http.post(f"/api/conversations/{conv}/share").json()["token"]
        yield http, app, conv, token


def test_no_server_process_names_in_exports(shared):
    """Leak: worker_id (host name and PID) in shared exports."""
    http, _, conv, token = shared
    for path in (f"/api/shared/{token}", f"/api/conversations/{conv}/export",
                 f"/api/conversations/{conv}"):  # fmt: skip
        answer = http.get(path)
        assert answer.status_code == 200 and "worker_id" not in answer.text, path


def test_share_token_check_for_open_views(shared):
    """Attack 5 (backend side): a shared view asks on each event whether its link holds."""
    http, app, conv, token = shared
    service = app.state.service
    assert service.share_is_valid(token, conv)
    assert not service.share_is_valid(token, "another-conversation")
    assert not service.share_is_valid("", conv)
    assert http.delete(f"/api/conversations/{conv}/share").status_code == 204
    assert not service.share_is_valid(token, conv)


def test_gradio_outputs_are_their_owners_only(shared):
    """Leak: Gradio output streams readable by whoever knows the session hash or event id."""
    alice, _, _, _ = shared
    started = alice.post("/gradio_api/call/load", json={"data": ["/"]})
    event_id = started.json()["event_id"]
    with httpx.Client(base_url=str(alice.base_url), timeout=60) as bob:
        stolen = bob.get(f"/gradio_api/call/load/{event_id}")
        assert stolen.status_code == 404 and "Alice secret" not in stolen.text
        config = alice.get("/config").json()
        fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "load")
        join = {"data": ["/"], "fn_index": fn_index, "session_hash": "alice-session-1"}
        assert alice.post("/gradio_api/queue/join", json=join).status_code == 200
        assert bob.post("/gradio_api/queue/join", json=join).status_code == 404
        with bob.stream(
            "GET", "/gradio_api/queue/data", params={"session_hash": "alice-session-1"}
        ) as peek:
            assert peek.status_code == 404
        assert bob.get("/gradio_api/heartbeat/alice-session-1").status_code == 404
    own = alice.get(f"/gradio_api/call/load/{event_id}")
    assert own.status_code == 200 and "Alice secret" in own.text
    assert json.loads(own.text.split("data: ", 1)[1].splitlines()[0]) is not None
