"""Attacks on disk space (issue 18, attack 1 and the upload-timing leak): every byte a visitor
makes the server keep counts in a quota and goes away in time, whichever route it came by.

The page's upload route (Gradio's ``/gradio_api/upload``) is attacked on a real server
process; the API's uploads in process, over real HTTP.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from app import create_app
from backend.access.body_limits import Limits
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_api import scripted_registry
from tests.test_processes import Server
from tests.test_upload_quota import tone_wav

KB = 1024


def noise(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def cache_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def page_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """A server process whose Gradio cache is a folder of the test's own."""
    cache = tmp_path / "gradio-cache"
    server = Server(
        tmp_path / "data",
        tmp_path / "server.log",
        GRADIO_TEMP_DIR=str(cache),
        AUDIO_AGENT_MAX_STORED_MB_PER_OWNER="1",
        AUDIO_AGENT_MAX_UPLOADS_PER_HOUR="0",  # only the storage quota, for the visitor
        AUDIO_AGENT_ADDRESS_UPLOAD_MB_PER_HOUR="3",
        AUDIO_AGENT_ADDRESS_UPLOADS_PER_HOUR="0",
    )
    try:
        yield server, cache
    finally:
        server.stop()


def test_page_upload_route_is_counted_per_owner_and_per_address(page_server):
    """Attack: 80 x 2 MB of random bytes through /gradio_api/upload, counted by no quota."""
    server, cache = page_server
    with httpx.Client(base_url=server.base, timeout=30) as visitor:
        visitor.get("/api/conversations")  # the visitor's cookie
        answers = [
            visitor.post("/gradio_api/upload", files={"files": (f"n{i}.bin", noise(300 * KB, i))})
            for i in range(6)
        ]
    kept = [a for a in answers if a.status_code == 200]
    assert 1 <= len(kept) <= 3, [a.status_code for a in answers]  # 1 MB: three 300 KB files
    refused = answers[len(kept)]
    assert refused.status_code == 413 and "Storage limit reached" in refused.json()["detail"]
    assert cache_bytes(cache) <= 1024 * KB

    # Without a cookie each upload is a new visitor: the address still pays (3 MB an hour).
    statuses = []
    for i in range(20):
        answer = httpx.post(
            f"{server.base}/gradio_api/upload",
            files={"files": (f"m{i}.bin", noise(300 * KB, 100 + i))},
            timeout=30,
        )
        statuses.append(answer.status_code)
    assert statuses.count(200) <= 10 - len(kept), statuses
    assert statuses[-1] == 429
    assert cache_bytes(cache) <= 3 * 1024 * KB + 64 * KB


def test_gradio_cache_is_cleaned_when_the_server_stops(page_server):
    """Gradio's cache has ``delete_cache``: nothing a visitor uploaded outlives the process."""
    server, cache = page_server
    with httpx.Client(base_url=server.base, timeout=30) as visitor:
        visitor.get("/api/conversations")
        paths = visitor.post(
            "/gradio_api/upload", files={"files": ("clip.wav", tone_wav(440, 1.0))}
        ).json()
    assert paths and all(Path(p).is_file() for p in paths)
    server.stop()
    assert not any(Path(p).exists() for p in paths)


@contextlib.contextmanager
def api_client(settings: Settings) -> Iterator[tuple[httpx.Client, Any]]:
    app = create_app(settings, registry=scripted_registry()[0], ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        yield http, app


def test_uploads_never_asked_about_count_and_expire(tmp_path):
    """Attack: 20 uploads never asked about passed a 5 MB quota, and stayed after retention."""
    one = tone_wav(300, 2.0)
    kept = len(one) + 2 * 16_000 * 2  # original and decoded copy
    settings = Settings(
        data_dir=tmp_path,
        warm_up=False,
        retention_days=1,
        limits=Limits(uploads_per_hour=0, stored_mb_per_owner=kept * 2.5 / 1024 / 1024),
    )
    with api_client(settings) as (http, app):
        statuses = [
            http.post("/api/audio", files={"file": (f"{f}.wav", tone_wav(f, 2.0))}).status_code
            for f in (300, 400, 500, 600)
        ]
        assert statuses[:2] == [201, 201] and statuses[2:] == [413, 413], statuses
        service = app.state.service  # type: ignore[attr-defined]
        from backend.service.retention import expire_uploads

        later = datetime.now(UTC) + timedelta(hours=settings.upload_ttl_hours + 1)
        assert service.prune_stale(later) == []  # no conversation: retention had nothing
        assert expire_uploads(service, later) == 2
        audio_files = [p for p in (tmp_path / "audio").rglob("*") if p.is_file()]
        assert audio_files == []
        assert http.post("/api/audio", files={"file": ("b.wav", tone_wav(700, 2.0))}).is_success


def test_identical_upload_takes_the_time_of_a_new_one(tmp_path, monkeypatch):
    """Leak: an upload of bytes somebody else stored returned at once (no decoding), telling
    that somebody has that recording. Now it is decoded like any new upload."""
    import agent.audio
    import backend.service.uploads

    calls: list[int] = []
    real = agent.audio.decode_bytes

    def counted(data, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(data))
        return real(data, **kwargs)

    monkeypatch.setattr(agent.audio, "decode_bytes", counted)
    if hasattr(backend.service.uploads, "decode_bytes"):  # the service's upload
        monkeypatch.setattr(backend.service.uploads, "decode_bytes", counted)
    data = tone_wav(523, 1.0)
    with api_client(Settings(data_dir=tmp_path, warm_up=False)) as (alice, _):
        assert alice.post("/api/audio", files={"file": ("a.wav", data)}).status_code == 201
        assert len(calls) == 1
        with httpx.Client(base_url=str(alice.base_url), timeout=30) as bob:
            assert bob.post("/api/audio", files={"file": ("b.wav", data)}).status_code == 201
        assert len(calls) == 2  # Bob's upload was decoded too


def test_disk_space_is_kept_free(tmp_path):
    """Past AUDIO_AGENT_MIN_FREE_DISK_MB, uploads are refused (507) before any byte lands."""
    free_mb = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize / 1024 / 1024
    settings = Settings(data_dir=tmp_path, warm_up=False, min_free_disk_mb=free_mb + 1024)
    with api_client(settings) as (http, _):
        refused = http.post("/api/audio", files={"file": ("a.wav", tone_wav(300, 1.0))})
        assert refused.status_code == 507 and "disk space" in refused.json()["detail"]
        assert not (tmp_path / "audio").exists() or not any((tmp_path / "audio").rglob("*.wav"))


def test_page_uploads_never_asked_about_expire_and_free_the_quota(tmp_path, monkeypatch):
    """Files sent to Gradio's upload route and never used in a question go after the time to
    live like unused API uploads: the file, its folder and its row, and the owner's quota."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-cache"))
    settings = Settings(data_dir=tmp_path / "data", warm_up=False)
    app = create_app(settings, registry=scripted_registry()[0])
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as visitor:
        visitor.get("/api/conversations")  # the visitor's cookie
        paths = visitor.post(
            "/gradio_api/upload", files={"files": ("clip.wav", tone_wav(440, 1.0))}
        ).json()
        assert paths and all(Path(p).is_file() for p in paths)
        service = app.state.service  # type: ignore[attr-defined]
        from backend.service.retention import expire_uploads
        from storage.upload_files import UploadFiles

        files = UploadFiles(service.store)
        owner = next(iter({u.owner for u in files.listed(before=datetime.now(UTC))}))
        assert files.bytes_of(owner) > 0
        assert expire_uploads(service, datetime.now(UTC)) == 0  # not yet: within its time
        later = datetime.now(UTC) + timedelta(hours=settings.upload_ttl_hours + 1)
        assert expire_uploads(service, later) == len(paths)
        assert not any(Path(p).exists() for p in paths)
        assert not any(Path(p).parent.exists() for p in paths)  # Gradio's folder too
        assert files.bytes_of(owner) == 0 and files.listed(before=later) == []
