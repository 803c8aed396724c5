"""Per-owner upload quotas: uploads per hour (429 + Retry-After) and stored bytes (413)."""

from __future__ import annotations

import io
import socket
import sqlite3
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from app import create_app
from backend.access.body_limits import Limits
from backend.access.upload_quota import UploadQuota
from backend.errors import ServiceError
from backend.host.settings import Settings
from tests.servers import serve
from tests.test_api import scripted_registry


def tone_wav(freq: float, seconds: float = 1.0) -> bytes:
    t = np.arange(int(16_000 * seconds)) / 16_000
    buffer = io.BytesIO()
    sf.write(buffer, 0.3 * np.sin(2 * np.pi * freq * t), 16_000, format="WAV")
    return buffer.getvalue()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_uploads_per_hour_window_slides():
    clock = Clock()
    quota = UploadQuota(per_hour=2, stored_bytes=0, stored_bytes_of=lambda _: 0, clock=clock)
    assert quota.refusal("a") is None
    quota.record("a")
    clock.now += 600
    quota.record("a")
    refused = quota.refusal("a")
    assert refused is not None and refused.status == 429
    assert refused.retry_after == 3000 + 1  # until the first upload is an hour old
    assert "2 uploads per hour" in refused.detail and "51 minutes" in refused.detail
    assert quota.refusal("b") is None  # another owner has their own count
    quota.admit("a", 10, already_stored=True)  # the same bytes again: no new upload
    with pytest.raises(ServiceError) as refused_error:
        quota.admit("a", 10, already_stored=False)
    assert refused_error.value.status == 429 and refused_error.value.retry_after == 3001
    clock.now += 3001
    assert quota.refusal("a") is None


def test_stored_bytes_per_owner():
    stored = {"a": 900_000}
    quota = UploadQuota(per_hour=0, stored_bytes=1_000_000, stored_bytes_of=stored.get)
    assert quota.refusal("a", 50_000) is None
    refused = quota.refusal("a", 200_000)
    assert refused is not None and refused.status == 413
    assert "Storage limit reached" in refused.detail
    assert "Delete old conversations" in refused.detail


def _counts(data_dir: Path, leave_out: str = "") -> dict[str, int]:
    with sqlite3.connect(data_dir / "audio_agent.sqlite3") as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        tables = [t for t in tables if t != leave_out]
        return {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}


def test_api_refuses_the_upload_over_the_hourly_quota(tmp_path):
    settings = Settings(
        data_dir=tmp_path, warm_up=False, limits=Limits(uploads_per_hour=2, stored_mb_per_owner=0)
    )
    app = create_app(settings, registry=scripted_registry()[0], ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        for freq in (300, 400):
            ok = http.post("/api/audio", files={"file": (f"{freq}.wav", tone_wav(freq))})
            assert ok.status_code == 201, ok.text
        before = _counts(tmp_path)
        refused = http.post("/api/audio", files={"file": ("500.wav", tone_wav(500))})
        assert refused.status_code == 429
        assert "2 uploads per hour" in refused.json()["detail"]
        assert int(refused.headers["retry-after"]) > 3000
        assert _counts(tmp_path) == before
        assert http.get("/api/health").status_code == 200
        # refused before the body is read: the answer comes after the headers alone
        host, port = base.removeprefix("http://").split(":")
        cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                f"POST /api/audio HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n"
                f"Cookie: {cookie}\r\n"  # the same visitor: the quota is per owner
                "Content-Type: multipart/form-data; boundary=x\r\n\r\n".encode()
            )
            answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 429") and b"retry-after" in answer.lower()


def test_api_refuses_the_upload_over_the_storage_quota(tmp_path):
    one = tone_wav(300, seconds=2.0)  # 64 KB
    kept = len(one) + 2 * 16_000 * 2  # the original and its decoded 16 kHz copy
    settings = Settings(
        data_dir=tmp_path,
        warm_up=False,
        limits=Limits(uploads_per_hour=0, stored_mb_per_owner=kept * 1.5 / 1024 / 1024),
    )
    app = create_app(settings, registry=scripted_registry()[0], ui=False)
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        conv = http.post("/api/conversations", json={}).json()["id"]
        audio = http.post("/api/audio", files={"file": ("a.wav", one)}).json()["id"]
        ask = {"question": "What is it?", "audio_id": audio, "planner": "scripted"}
        with http.stream("POST", f"/api/conversations/{conv}/ask", json=ask) as resp:
            assert resp.status_code == 200
            resp.read()
        # the same bytes again take no more room
        assert http.post("/api/audio", files={"file": ("a2.wav", one)}).status_code == 201
        # (the tool cache is left out: the stored recording's analyses may still be written
        # in the background; nothing of the refused upload can be among them)
        before = _counts(tmp_path, leave_out="tool_cache")
        other = tone_wav(400, seconds=2.0)
        refused = http.post("/api/audio", files={"file": ("b.wav", other)})
        assert refused.status_code == 413
        assert "Storage limit reached" in refused.json()["detail"]
        assert _counts(tmp_path, leave_out="tool_cache") == before
        # deleting the conversation frees its recording
        assert http.delete(f"/api/conversations/{conv}").status_code == 204
        assert http.post("/api/audio", files={"file": ("b.wav", other)}).status_code == 201
