"""Attacks through Gradio's own routes (issue 30, attacks 1-4): no server file, URL or byte
reaches a visitor, or Gradio's cache, except what that visitor uploaded.

The page's endpoints that take a file are found from the app's ``/gradio_api/info`` (and the
dependencies of its ``/config``), as an attacker would. The app runs in this process over real
HTTP (``tests.servers.serve``), its Gradio cache a folder of the test's own; the normal page
flow runs against a real ``app.py`` process too. The machine has no internet: a little HTTP
server on loopback stands in for "a public host", and to Gradio's public-address check
(``safehttpx``) loopback is made to count as public, so that what Gradio would fetch from a
public host it fetches from that server (and the server counts every request it gets).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from app import create_app
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_api import scripted_registry
from tests.test_processes import Server
from tests.test_upload_quota import tone_wav

FILE_DATA = {"_type": "gradio.FileData"}
MB = 1024 * 1024


@dataclass
class Site:
    base: str
    cache: Path
    data: Path
    app: Any


class Remote(http.server.ThreadingHTTPServer):
    """A site on loopback that answers every GET with a little WAV and counts the requests."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        body = tone_wav(440, 0.5)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(handler) -> None:  # noqa: N802, N805
                self.requests.append(handler.path)
                handler.send_response(200)
                handler.send_header("Content-Type", "audio/wav")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

            do_HEAD = do_GET  # noqa: N815

            def log_message(handler, *args: Any) -> None:  # noqa: N805
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("gradio-files")
    cache = root / "gradio-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_TEMP_DIR", str(cache))
        import gradio.processing_utils
        import safehttpx

        # No internet here: the loopback server plays a public host (see the module doc).
        patch.setattr(safehttpx, "is_public_ip", lambda ip: True)
        patch.setattr(gradio.processing_utils, "is_public_ip", lambda ip: True)
        settings = Settings(data_dir=root / "data", warm_up=False)
        app = create_app(settings, registry=scripted_registry()[0])
        with serve(app) as base:
            yield Site(base, cache, root / "data", app)


@pytest.fixture
def remote() -> Iterator[Remote]:
    server = Remote()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def visitor(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=60) as http:
        assert http.get("/api/conversations").status_code == 200  # the visitor's cookie
        yield http


def file_endpoints(http: httpx.Client, prefix: str = "") -> dict[str, int]:
    """The page's endpoints that take a file (api name -> fn index), from its API info: a
    parameter whose type is Gradio's FileData."""
    info = http.get(f"{prefix}/gradio_api/info").json()["named_endpoints"]
    names = [
        name.lstrip("/")
        for name, endpoint in info.items()
        if any("gradio.FileData" in json.dumps(p) for p in endpoint["parameters"])
    ]
    config = http.get(f"{prefix}/config").json()
    index = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
    return {name: index[name] for name in names}


def file_data(path: str, url: str | None = None) -> dict[str, Any]:
    return {"path": path, "url": url, "meta": FILE_DATA}


def call(http: httpx.Client, api: str, value: Any) -> tuple[int, str]:
    """``/gradio_api/call/<api>`` with one input: the status of the call, then what it
    answered (the refusal, or the whole event stream of its result)."""
    started = http.post(f"/gradio_api/call/{api}", json={"data": [value]})
    if started.status_code != 200:
        return started.status_code, started.text
    event_id = started.json()["event_id"]
    result = http.get(f"/gradio_api/call/{api}/{event_id}")
    return 200, result.text


def join(http: httpx.Client, _api: str, fn_index: int, value: Any) -> tuple[int, str]:
    """The page's own way: ``/gradio_api/queue/join``, then the session's event stream."""
    session = uuid.uuid4().hex[:11]
    body = {"data": [value], "fn_index": fn_index, "session_hash": session, "event_data": None}
    joined = http.post("/gradio_api/queue/join", json=body)
    if joined.status_code != 200:
        return joined.status_code, joined.text
    stream = http.get("/gradio_api/queue/data", params={"session_hash": session})
    return 200, stream.text


def call_by_name(http: httpx.Client, api: str, _fn_index: int, value: Any) -> tuple[int, str]:
    return call(http, api, value)


def assert_refused(status: int, text: str) -> None:
    assert 400 <= status < 500, (status, text[-600:])
    assert json.loads(text)["detail"], text


def cache_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file()] if cache.is_dir() else []


def test_nobody_attaches_another_visitors_recording_by_its_path(site):
    """Attack 1: ``attach`` (the attach button) and ``attach_1`` (the microphone) with the path
    of another visitor's recording made it the caller's: ``GET /api/audio/<id>`` went 404 ->
    200 with the victim's bytes."""
    with visitor(site.base) as victim, visitor(site.base) as attacker:
        uploaded = victim.post("/api/audio", files={"file": ("v.wav", tone_wav(612, 1.0))})
        audio_id = uploaded.json()["id"]
        original = next(site.data.glob(f"audio/*/{audio_id}/original.*"))
        endpoints = file_endpoints(attacker)
        assert {"attach", "attach_1"} <= set(endpoints), endpoints
        for api, fn_index in endpoints.items():
            assert_refused(*call(attacker, api, file_data(str(original))))
            assert_refused(*join(attacker, api, fn_index, file_data(str(original))))
            assert_refused(*call(attacker, api, {"path": str(original)}))  # no meta
            assert_refused(*call(attacker, api, str(original)))  # a bare path
            by_name = attacker.post(f"/gradio_api/call/v2/{api}", json={"path": str(original)})
            assert_refused(by_name.status_code, by_name.text)
            # /run takes the body's fn_index before the name in the path
            run = attacker.post(
                "/gradio_api/run/listing",
                json={"data": [file_data(str(original))], "fn_index": fn_index},
            )
            assert_refused(run.status_code, run.text)
            # the victim's page upload, by its path in Gradio's cache
            path = victim.post(
                "/gradio_api/upload", files={"files": ("w.wav", tone_wav(713, 1.0))}
            ).json()[0]
            assert_refused(*call(attacker, api, file_data(path)))
        assert attacker.get(f"/api/audio/{audio_id}").status_code == 404


def test_the_attach_handler_takes_only_its_owners_page_upload(site):
    """The second lock, behind the middleware: the handler's service call takes a path only
    when the upload route kept that file for this owner."""
    from backend.errors import ServiceError
    from storage.upload_files import UploadFiles

    service = site.app.state.service
    with visitor(site.base) as owner:
        path = owner.post(
            "/gradio_api/upload", files={"files": ("own.wav", tone_wav(640, 0.5))}
        ).json()[0]
    who = next(u.owner for u in UploadFiles(service.store).listed() if u.path == path)
    uploaded = service.upload(tone_wav(650, 0.5), "v.wav", owner="victim")
    original = next(site.data.glob(f"audio/*/{uploaded.id}/original.*"))
    for name, owner_id in ((path, "somebody-else"), (str(original), who), ("/etc/passwd", who)):
        with pytest.raises(ServiceError) as refused:
            service.upload_page_file(name, owner=owner_id)
        assert refused.value.status == 403
    assert service.upload_page_file(path, owner=who).name == "own.wav"


def test_server_files_never_reach_gradios_cache(site, tmp_path):
    """Attack 2: the same call naming ``/proc/self/environ``, the SQLite file or
    ``/etc/passwd`` was refused only after Gradio had copied the file into its cache."""
    (tmp_path / "link.wav").symlink_to(site.data / "audio_agent.sqlite3")
    secrets = [
        "/proc/self/environ",
        str(site.data / "audio_agent.sqlite3"),
        "/etc/passwd",
        str(tmp_path / "link.wav"),  # a symlink out
        f"{site.cache}/../{site.data.name}/secret_key",  # ..
        str(site.data / "secret_key"),
    ]
    with visitor(site.base) as attacker:
        own = attacker.post("/gradio_api/upload", files={"files": ("a.wav", tone_wav(300, 0.5))})
        endpoints = file_endpoints(attacker)
        answers = [
            answer(attacker, api, fn_index, file_data(secret))
            for secret in [*secrets, f"{own.json()[0]}/../../../../../../../../etc/passwd"]
            for api, fn_index in endpoints.items()
            for answer in (call_by_name, join)
        ]
    names = {p.name for p in cache_files(site.cache)}
    assert not names & {"environ", "passwd", "audio_agent.sqlite3", "secret_key", "link.wav"}
    for status, text in answers:
        assert_refused(status, text)


def test_large_server_files_are_not_copied(site, tmp_path):
    """Attack 3: calls naming large server files filled Gradio's cache, charged to no one."""
    big = tmp_path / "big.wav"
    big.write_bytes(os.urandom(30 * MB))
    before = sum(p.stat().st_size for p in cache_files(site.cache))
    with visitor(site.base) as attacker:
        endpoints = file_endpoints(attacker)
        answers = [
            answer(attacker, api, fn_index, file_data(str(big)))
            for api, fn_index in endpoints.items()
            for answer in (call_by_name, join, call_by_name)
        ]
    after = sum(p.stat().st_size for p in cache_files(site.cache))
    assert after - before < MB
    assert not [p for p in cache_files(site.cache) if p.name == "big.wav"]
    for status, text in answers:
        assert_refused(status, text)


def test_the_server_fetches_no_url(site, remote):
    """Attack 4: ``/gradio_api/file=http://...`` and a FileData URL in ``attach`` made the
    server download from another host for an anonymous visitor."""
    target = f"{remote.url}/x.wav"
    answers: list[tuple[int, str]] = []
    with visitor(site.base) as attacker:
        for prefix in ("", "/view"):
            for route in ("file=", "file/", "proxy="):
                got = attacker.get(f"{prefix}/gradio_api/{route}{target}")
                answers.append((got.status_code, got.text))
        own = attacker.post(
            "/gradio_api/upload", files={"files": ("a.wav", tone_wav(333, 0.5))}
        ).json()[0]
        for api, fn_index in file_endpoints(attacker).items():
            answers += [
                call(attacker, api, file_data(target, target)),
                call(attacker, api, {"path": target, "meta": FILE_DATA}),
                join(attacker, api, fn_index, file_data(target, target)),
                call(attacker, api, file_data(own, target)),  # its own upload, another URL
            ]
    assert remote.requests == []
    assert not [p for p in cache_files(site.cache) if p.name == "x.wav"]
    for status, text in answers:
        assert_refused(status, text)


def test_the_file_route_serves_only_the_callers_own_files(site):
    """``/gradio_api/file=`` served any file in Gradio's cache to whoever named it (another
    visitor's upload); a visitor still gets their own upload back (the microphone's preview)."""
    with visitor(site.base) as owner, visitor(site.base) as other:
        path = owner.post(
            "/gradio_api/upload", files={"files": ("mine.wav", tone_wav(880, 0.5))}
        ).json()[0]
        url = f"/gradio_api/file={quote(path)}"
        assert owner.get(url).status_code == 200
        assert owner.get(url).content == Path(path).read_bytes()
        for prefix in ("", "/view"):
            answer = other.get(prefix + url)
            assert_refused(answer.status_code, answer.text)
        for secret in (site.data / "audio_agent.sqlite3", Path("/etc/passwd")):
            answer = owner.get(f"/gradio_api/file={quote(str(secret))}")
            assert_refused(answer.status_code, answer.text)


class OwnerFromHeader:
    """The owner a request names in ``X-Owner`` (the app's identity middleware stands in)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from backend.access.auth import SCOPE_KEY

        if scope["type"] == "http":
            scope[SCOPE_KEY] = dict(scope["headers"]).get(b"x-owner", b"").decode() or None
        await self.app(scope, receive, send)


def test_a_file_gradio_hands_one_visitor_is_served_to_them_only(tmp_path, monkeypatch):
    """The file route served every file of Gradio's cache to whoever named it; a file an
    event gave one visitor (an output: Gradio copies it into its cache) is now theirs only."""
    import gradio as gr
    from fastapi import FastAPI

    from backend.access.gradio_files import GradioFileGuard
    from storage.repo import Store
    from storage.upload_files import UploadFiles

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "cache"))
    report = tmp_path / "report.txt"
    report.write_text("for alice only")
    with gr.Blocks() as blocks:
        button, out = gr.Button(), gr.File()
        button.click(lambda: str(report), outputs=out, api_name="report")
    app = gr.mount_gradio_app(FastAPI(), blocks, path="/")
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    app.add_middleware(GradioFileGuard, files=UploadFiles(store))
    app.add_middleware(OwnerFromHeader)
    with (
        serve(app) as base,
        httpx.Client(base_url=base, timeout=60, headers={"x-owner": "alice"}) as alice,
        httpx.Client(base_url=base, timeout=60, headers={"x-owner": "bob"}) as bob,
        httpx.Client(base_url=base, timeout=60) as nobody,
    ):
        started = alice.post("/gradio_api/call/report", json={"data": []})
        result = alice.get(f"/gradio_api/call/report/{started.json()['event_id']}").text
        data = json.loads(result.split("data:", 1)[1])
        url = f"/gradio_api/file={quote(data[0]['path'])}"
        assert alice.get(url).text == "for alice only"
        for caller in (bob, nobody):
            refused = caller.get(url)
            assert_refused(refused.status_code, refused.text)
    store.close()


def test_the_page_flow_still_works_on_a_real_server(tmp_path):
    """Upload through ``/gradio_api/upload``, then attach the path it returned (as the page
    does, with the URL the page builds for it): the recording is the visitor's."""
    server = Server(tmp_path / "data", tmp_path / "server.log", GRADIO_TEMP_DIR=str(tmp_path / "c"))
    try:
        with visitor(server.base) as http, visitor(server.base) as other:
            endpoints = file_endpoints(http)
            for api, fn_index in endpoints.items():
                path = http.post(
                    "/gradio_api/upload", files={"files": (f"{api}.wav", tone_wav(500, 1.0))}
                ).json()[0]
                url = f"{server.base}/gradio_api/file={quote(path)}"
                status, text = join(http, api, fn_index, file_data(path, url))
                assert status == 200 and "process_completed" in text, text[-800:]
                assert '"success":true' in text.replace(" ", ""), text[-800:]
                status, text = call(http, api, file_data(path, url))
                assert status == 200 and "event: complete" in text, text[-800:]
                audio_id = re.search(r"/api/audio/(\w+)", text)
                assert audio_id, text[-800:]
                assert http.get(f"/api/audio/{audio_id.group(1)}").status_code == 200
                assert http.get(url).status_code == 200  # the microphone's preview
                assert_refused(*call(other, api, file_data(path, url)))
    finally:
        server.stop()


def test_gradios_video_route_takes_no_bytes(site):
    """Gradio's ``process_recording`` keeps a posted video in its temp folder and runs ffmpeg
    on it, outside every quota; this app takes no video, so the route is not offered."""
    before = set(cache_files(site.cache))
    with visitor(site.base) as attacker:
        response = attacker.post(
            "/gradio_api/process_recording",
            files={"video": ("screen.mp4", os.urandom(2 * MB), "video/mp4")},
        )
    assert response.status_code == 404, response.text[:300]
    assert "video" in response.json()["detail"]
    assert set(cache_files(site.cache)) == before
