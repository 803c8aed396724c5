"""Bad inputs through the real HTTP API, one table: each gets its status and a sentence.

After every case the server still answers /api/health and nothing was stored: the row count
of every table and the files under the data directory are as they were.
"""

from __future__ import annotations

import io
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf

from app import create_app
from backend.host.settings import Settings
from tests.conftest import FIXTURES
from tests.servers import serve
from tests.test_api import scripted_registry
from tests.test_audio import encode_tone, encode_video

UPLOAD_MB = 1.0
AUDIO_MINUTES = 0.5


def wav(samples: np.ndarray, rate: int = 16_000, subtype: str = "PCM_16") -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, samples, rate, format="WAV", subtype=subtype)
    return buffer.getvalue()


def tone(seconds: float, rate: int = 16_000, channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    mono = 0.3 * np.sin(2 * np.pi * 440 * t)
    return np.stack([mono] * channels, axis=1) if channels > 1 else mono


def video_only_mp4() -> bytes:
    import av

    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mp4") as out:
        video = out.add_stream("mpeg4", rate=10)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        for i in range(10):
            image = np.full((48, 64, 3), i * 20, dtype=np.uint8)
            for packet in video.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
    return buffer.getvalue()


def long_wav_header(seconds: float, rate: int = 8_000) -> bytes:
    """A real wav longer than the limit (8 kHz mono keeps it small)."""
    return wav(np.zeros(int(seconds * rate)), rate)


FIXTURE = FIXTURES / "dog_bark_esc50.wav"
MP3 = encode_tone("mp3")
SDP = (
    b"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    b"m=audio 5004 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
)
M3U8 = b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:5,\ntests/fixtures/dog_bark_esc50.wav\n"
MPD = (
    b'<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><Period>'
    b"<BaseURL>http://127.0.0.1:9/a.wav</BaseURL></Period></MPD>"
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@dataclass
class Case:
    id: str
    method: str
    path: str  # {conv} and {audio}: the ids of a conversation and a recording that exist
    status: int
    words: str  # in the detail (case-insensitive)
    upload: tuple[str, bytes] | None = None
    body: Any = None  # JSON
    raw: bytes | None = None  # a body sent as it is
    headers: dict[str, str] = field(default_factory=dict)


def upload(case_id: str, name: str, data: bytes, status: int, words: str) -> Case:
    return Case(case_id, "POST", "/api/audio", status, words, upload=(name, data))


def ask(case_id: str, body: Any, status: int, words: str) -> Case:
    return Case(case_id, "POST", "/api/conversations/{conv}/ask", status, words, body=body)


ASK_OK = {"question": "What is it?", "planner": "scripted", "audio_id": "{audio}"}

CASES: list[Case] = [
    # -- uploads: empty, not audio, corrupt, truncated ------------------------------------
    upload("zero-byte", "empty.wav", b"", 422, "empty (0 bytes)"),
    upload("text-named-wav", "notes.wav", b"Just some text, not audio.\n" * 40, 415, "not a supported"),  # noqa: E501
    upload("png-image", "picture.mp3", PNG, 415, "not a supported"),
    upload("random-bytes", "noise.flac", b"\x13\x37" + bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)), 415, "not a supported"),  # noqa: E501
    upload("truncated-wav-header", "cut.wav", b"RIFF\x00\x00\x00\x00WAVEfmt ", 422, "could not be read"),  # noqa: E501
    upload("wav-unknown-codec", "odd.wav", b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x34\x12\x01\x00\x80\x3e\x00\x00\x00\x7d\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00", 422, "could not be read|no audio"),  # noqa: E501
    upload("wav-no-frames", "none.wav", wav(np.zeros(0)), 422, "no audio samples|could not be read"),  # noqa: E501
    upload("corrupt-flac", "bad.flac", b"fLaC" + b"\x00" * 300, 422, "could not be read|corrupt"),
    upload("corrupt-ogg", "bad.ogg", b"OggS" + b"\x17" * 300, 422, "could not be read|corrupt"),
    upload("corrupt-mp4", "bad.m4a", b"\x00\x00\x00\x18ftypM4A " + b"\x01" * 300, 422, "could not be read|corrupt|no audio"),  # noqa: E501
    upload("corrupt-webm", "bad.webm", b"\x1a\x45\xdf\xa3" + b"\x42" * 300, 422, "could not be read|corrupt"),  # noqa: E501
    upload("truncated-mp3", "cut.mp3", MP3[:300], 422, "too short|corrupt|could not be read|no audio samples"),  # noqa: E501
    upload("nan-samples", "nan.wav", wav(np.full(16_000, np.nan, np.float32), subtype="FLOAT"), 422, "NaN"),  # noqa: E501
    upload("inf-samples", "inf.wav", wav(np.full(16_000, np.inf, np.float32), subtype="FLOAT"), 422, "infinite"),  # noqa: E501
    upload("one-sample", "one.wav", wav(np.zeros(1)), 422, "too short"),
    upload("video-without-audio", "clip.mp4", video_only_mp4(), 422, "no audio stream"),
    upload("longer-than-limit", "long.wav", long_wav_header(AUDIO_MINUTES * 60 + 10), 422, "longer than the limit"),  # noqa: E501
    upload("over-size-limit", "big.wav", wav(np.zeros(int(UPLOAD_MB * 1024 * 1024))), 413, "larger than the limit of 1 MB"),  # noqa: E501
    # -- files that name other files, URLs or sockets --------------------------------------
    upload("ffconcat-relative", "list.wav", b"ffconcat version 1.0\nfile 'tests/fixtures/dog_bark_esc50.wav'\n", 415, "concat playlist"),  # noqa: E501
    upload("ffconcat-absolute", "list.mp3", f"ffconcat version 1.0\nfile '{FIXTURE}'\n".encode(), 415, "concat playlist"),  # noqa: E501
    upload("concat-protocol", "c.wav", f"concat:{FIXTURE}|{FIXTURE}".encode(), 415, "concat:"),
    upload("sdp-loopback", "stream.sdp", SDP, 415, "SDP"),
    upload("hls-m3u8", "list.m3u8", M3U8, 415, "HLS"),
    upload("dash-mpd", "manifest.mpd", MPD, 415, "DASH"),
    upload("url-text", "link.wav", b"http://127.0.0.1:9/a.wav", 415, "URL"),
    # -- upload requests that are not uploads ----------------------------------------------
    Case("upload-without-file", "POST", "/api/audio", 422, "field required|missing", raw=b"x=1", headers={"content-type": "application/x-www-form-urlencoded"}),  # noqa: E501
    Case("upload-as-json", "POST", "/api/audio", 422, "field required|missing", body={"file": "x"}),
    # -- JSON bodies: malformed, wrong types, too big --------------------------------------
    Case("malformed-json", "POST", "/api/conversations", 422, "JSON decode error", raw=b'{"title": ', headers={"content-type": "application/json"}),  # noqa: E501
    Case("title-wrong-type", "POST", "/api/conversations", 422, "valid string", body={"title": 123}),  # noqa: E501
    Case("body-is-a-list", "POST", "/api/conversations", 422, "valid dictionary|object", body=["a"]),  # noqa: E501
    Case("empty-title", "POST", "/api/conversations", 422, "title is empty", body={"title": "   "}),
    Case("long-title", "POST", "/api/conversations", 422, "limit is 200", body={"title": "t" * 500}),  # noqa: E501
    Case("rename-empty", "PATCH", "/api/conversations/{conv}", 422, "title is empty", body={"title": " \t\n"}),  # noqa: E501
    Case("rename-missing-title", "PATCH", "/api/conversations/{conv}", 422, "field required|missing", body={}),  # noqa: E501
    Case("title-lone-surrogate", "POST", "/api/conversations", 422, "unpaired UTF-16 surrogate", raw=b'{"title": "\\ud800"}', headers={"content-type": "application/json"}),  # noqa: E501
    Case("rename-lone-surrogate", "PATCH", "/api/conversations/{conv}", 422, "unpaired UTF-16 surrogate", raw=b'{"title": "a\\udfffb"}', headers={"content-type": "application/json"}),  # noqa: E501
    Case("deeply-nested-json", "POST", "/api/conversations", 400, "error parsing the body", raw=b"[" * 30_000, headers={"content-type": "application/json"}),  # noqa: E501
    Case("invalid-utf8-json", "POST", "/api/conversations", 400, "error parsing the body", raw=b'{"title": "\xff\xfe"}', headers={"content-type": "application/json"}),  # noqa: E501
    Case("json-over-cap", "POST", "/api/conversations", 413, "larger than the limit of 64 KB", body={"title": "x", "pad": "p" * 100_000}),  # noqa: E501
    ask("ten-mb-question", {**ASK_OK, "question": "why " * 2_500_000}, 413, "larger than the limit"),  # noqa: E501
    ask("long-question", {**ASK_OK, "question": "q" * 5000}, 422, "question is 5,000 characters"),
    ask("too-many-choices", {**ASK_OK, "choices": [f"c{i}" for i in range(30)]}, 422, "at most 26"),
    ask("long-choice", {**ASK_OK, "choices": ["a" * 1000, "b"]}, 422, "answer choice 1 is 1,000"),
    ask("one-choice", {**ASK_OK, "choices": ["only"]}, 400, "at least two"),
    ask("blank-question", {**ASK_OK, "question": "  "}, 400, "type a question"),
    ask("question-wrong-type", {**ASK_OK, "question": ["a"]}, 422, "valid string"),
    ask("choices-wrong-type", {**ASK_OK, "choices": "A, B"}, 422, "valid list"),
    Case("budget-nan", "POST", "/api/conversations/{conv}/ask", 422, "finite number", raw=b'{"question": "q", "budget": NaN}', headers={"content-type": "application/json"}),  # noqa: E501
    Case("budget-5000-digits", "POST", "/api/conversations/{conv}/ask", 400, "error parsing the body", raw=b'{"question": "q", "budget": 1' + b"0" * 5000 + b"}", headers={"content-type": "application/json"}),  # noqa: E501
    Case("strategy-lone-surrogate", "POST", "/api/conversations/{conv}/ask", 422, "unpaired UTF-16 surrogate", raw=b'{"question": "q", "strategy": "\\udfff"}', headers={"content-type": "application/json"}),  # noqa: E501
    ask("budget-zero", {**ASK_OK, "budget": 0}, 422, "greater than or equal to 1"),
    ask("unknown-strategy", {**ASK_OK, "strategy": "guess"}, 400, "unknown strategy"),
    ask("unknown-planner", {**ASK_OK, "planner": "nope"}, 400, "nope"),
    ask("traversal-audio-id", {**ASK_OK, "audio_id": "../../etc/passwd"}, 404, "unknown audio"),
    Case("compare-no-contenders", "POST", "/api/conversations/{conv}/compare", 422, "at least 1", body={**ASK_OK, "contenders": []}),  # noqa: E501
    Case("compare-nine-contenders", "POST", "/api/conversations/{conv}/compare", 422, "at most 8", body={**ASK_OK, "contenders": [{"planner": "scripted"}] * 9}),  # noqa: E501
    # -- ids that are paths ----------------------------------------------------------------
    Case("traversal-conversation", "GET", "/api/conversations/..%2F..%2Fetc%2Fpasswd", 404, "not found|no conversation"),  # noqa: E501
    Case("traversal-conversation-ask", "POST", "/api/conversations/%2e%2e%2f%2e%2e%2fetc%2fpasswd/ask", 404, "not found|no conversation", body=ASK_OK),  # noqa: E501
    Case("traversal-delete", "DELETE", "/api/conversations/..%2F..%2Fdata", 404, "not found|no conversation"),  # noqa: E501
    Case("traversal-audio", "GET", "/api/audio/..%2F..%2Fetc%2Fpasswd", 404, "not found|no audio"),
    Case("traversal-audio-info", "GET", "/api/audio/..%2F..%2Fetc%2Fpasswd/info", 404, "not found|no audio"),  # noqa: E501
    Case("dots-audio-id", "GET", "/api/audio/" + "." * 64, 404, "no audio"),
    Case("traversal-run", "GET", "/api/runs/..%2F..%2Fetc%2Fpasswd", 404, "not found|no run"),
    Case("traversal-run-events", "GET", "/api/runs/%2e%2e/events", 404, "not found|no run"),
    Case("unknown-message-summary", "GET", "/api/messages/..%2Fx/summary", 404, "not found|no runs"),  # noqa: E501
    Case("unknown-conversation-rename", "PATCH", "/api/conversations/nope", 404, "no conversation", body={"title": "x"}),  # noqa: E501
]  # fmt: skip


@dataclass
class Server:
    base: str
    data_dir: Path
    conversation: str
    audio: str
    cookies: dict[str, str]  # the visitor who owns the conversation and the recording

    def snapshot(self) -> tuple[dict[str, int], list[tuple[str, int]]]:
        """Row counts of every table, and every file under the data directory with its size."""
        with sqlite3.connect(self.data_dir / "audio_agent.sqlite3") as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            counts = {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
        files = sorted(
            (str(p.relative_to(self.data_dir)), p.stat().st_size)
            for p in self.data_dir.rglob("*")
            if p.is_file() and not p.name.startswith("audio_agent.sqlite3")
        )
        return counts, files


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("bad-inputs")
    registry, _ = scripted_registry()
    settings = Settings(
        data_dir=data_dir,
        warm_up=False,
        max_upload_mb=UPLOAD_MB,
        max_audio_minutes=AUDIO_MINUTES,
    )
    app = create_app(settings, registry=registry, ui=False)
    with serve(app) as base, httpx.Client(base_url=base) as http:
        conv = http.post("/api/conversations", json={"title": "kept"}).json()["id"]
        audio = http.post("/api/audio", files={"file": ("tone.wav", wav(tone(1.0)))}).json()["id"]
        yield Server(base, data_dir, conv, audio, dict(http.cookies))


def fill(value: Any, server: Server) -> Any:
    if isinstance(value, str):
        return value.replace("{conv}", server.conversation).replace("{audio}", server.audio)
    if isinstance(value, dict):
        return {k: fill(v, server) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, server) for v in value]
    return value


def test_the_table_has_at_least_forty_cases():
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_with_a_reason(server: Server, case: Case):
    before = server.snapshot()
    kwargs: dict[str, Any] = {"headers": case.headers}
    if case.upload is not None:
        kwargs["files"] = {"file": (case.upload[0], case.upload[1], "application/octet-stream")}
    elif case.raw is not None:
        kwargs["content"] = case.raw
    elif case.body is not None:
        kwargs["json"] = fill(case.body, server)
    with httpx.Client(base_url=server.base, timeout=30, cookies=server.cookies) as http:
        response = http.request(case.method, fill(case.path, server), **kwargs)
        assert response.status_code == case.status, response.text[:500]
        detail = response.json()["detail"]
        text = detail if isinstance(detail, str) else json.dumps(detail)
        assert any(w.lower() in text.lower() for w in case.words.split("|")), text[:500]
        health = http.get("/api/health", timeout=5)
        assert health.status_code == 200 and health.json()["status"] == "ok"
    assert server.snapshot() == before


@pytest.mark.parametrize(
    ("name", "data", "fmt", "channels"),
    [
        ("six-channels.wav", wav(tone(1.0, 48_000, channels=6), 48_000), "wav", 6),
        ("silence.wav", wav(np.zeros(16_000)), "wav", 1),
        ("an-mp3-named.wav", MP3, "mp3", 2),
        ("clip.webm", encode_video("webm", "libvpx", "libopus"), "webm", 1),
    ],
    ids=["six-channels", "silence", "mp3-named-wav", "webm-video"],
)
def test_odd_but_valid_uploads_are_accepted(server: Server, name, data, fmt, channels):
    with httpx.Client(base_url=server.base, timeout=30) as http:
        response = http.post("/api/audio", files={"file": (name, data)})
        assert response.status_code == 201, response.text
        info = response.json()
        assert info["format"] == fmt and info["channels"] == channels
        assert 0.9 < info["duration_s"] < 1.1


def _raw_post(base: str, path: str, head: dict[str, str]) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{k}: {v}" for k, v in head.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def _read_response(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, json.loads(rest[:length])


def test_huge_upload_is_refused_from_its_content_length(server: Server):
    before = server.snapshot()
    sock = _raw_post(
        server.base,
        "/api/audio",
        {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(1 << 30)},
    )
    with sock:
        sock.sendall(b"--x\r\n")  # the client has started; the server answers without reading
        status, body = _read_response(sock)
    assert status == 413 and "larger than the limit of 1 MB" in body["detail"]
    assert server.snapshot() == before


def test_streamed_upload_is_cut_off_at_the_limit(server: Server, tmp_path, monkeypatch):
    """No Content-Length (chunked): the body is counted as it arrives and refused as soon as
    it crosses the limit; the client is stopped long before it has sent the whole file."""
    import tempfile

    spool = tmp_path / "spool"  # where the multipart parser would spill the file
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    before = server.snapshot()
    total = 200 * 1024 * 1024
    sent = 0
    sock = _raw_post(
        server.base,
        "/api/audio",
        {"Content-Type": "multipart/form-data; boundary=x", "Transfer-Encoding": "chunked"},
    )
    with sock:
        part = b'--x\r\nContent-Disposition: form-data; name="file"; filename="h.wav"\r\n\r\n'
        sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        block = b"\x00" * 65536
        sock.settimeout(0.0)
        answered = b""
        while sent < total:
            try:
                answered += sock.recv(65536)
                break  # the server has answered
            except BlockingIOError:
                pass
            except ConnectionError:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(block), block))
                sent += len(block)
            except (BlockingIOError, ConnectionError):
                time.sleep(0.01)
        sock.settimeout(10)
        try:
            while chunk := sock.recv(65536):  # the server closes the connection after its 413
                answered += chunk
        except ConnectionError:
            pass
    assert answered.startswith(b"HTTP/1.1 413"), answered[:200]
    assert b"larger than the limit of 1 MB" in answered
    assert sent < total / 4  # stopped early: a few MB of socket buffers at most
    assert server.snapshot() == before
    assert not [p for p in spool.rglob("*") if p.is_file()]


def test_long_decode_does_not_block_other_requests(tmp_path):
    """While one upload decodes (in a worker thread), /api/health keeps answering."""
    registry, _ = scripted_registry()
    app = create_app(
        Settings(data_dir=tmp_path, warm_up=False, max_upload_mb=100, max_audio_minutes=60),
        registry=registry,
        ui=False,
    )
    service = app.state.service
    decoding = threading.Event()
    real_upload = service.upload

    def observed_upload(*args, **kwargs):  # type: ignore[no-untyped-def]
        decoding.set()
        try:
            return real_upload(*args, **kwargs)
        finally:
            decoding.clear()

    service.upload = observed_upload
    t = np.arange(10 * 60 * 44_100, dtype=np.float32) / 44_100
    data = wav((0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 44_100)  # 10 min, 53 MB
    del t
    answered_while_decoding = 0
    with serve(app) as base:
        result: dict[str, Any] = {}

        def post() -> None:
            result["response"] = httpx.post(
                f"{base}/api/audio", files={"file": ("long.wav", data)}, timeout=120
            )

        thread = threading.Thread(target=post)
        thread.start()
        with httpx.Client(base_url=base, timeout=60) as http:
            while thread.is_alive():
                if decoding.is_set():
                    assert http.get("/api/health").status_code == 200
                    if decoding.is_set():  # answered before the decode finished
                        answered_while_decoding += 1
                else:
                    time.sleep(0.005)
        thread.join()
    assert result["response"].status_code == 201, result["response"].text
    assert answered_while_decoding >= 3


def test_page_upload_route_has_the_same_limit(tmp_path):
    """Gradio's own upload route (the page's file picker) is cut off the same way."""
    app = create_app(
        Settings(data_dir=tmp_path / "data", warm_up=False, max_upload_mb=UPLOAD_MB),
        registry=scripted_registry()[0],
    )
    with serve(app) as base:
        declared = _raw_post(
            base,
            "/gradio_api/upload",
            {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(1 << 30)},
        )
        with declared:
            status, body = _read_response(declared)
        assert status == 413 and "larger than the limit of 1 MB" in body["detail"]
        big = wav(np.zeros(int(UPLOAD_MB * 1024 * 1024)))  # 2 MB, sent without a length
        head = b'--x\r\nContent-Disposition: form-data; name="files"; filename="big.wav"\r\n\r\n'

        def body() -> Iterator[bytes]:  # a generator: httpx sends it chunked, no length
            yield head
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]
            yield b"\r\n--x--\r\n"

        response = httpx.post(
            f"{base}/gradio_api/upload",
            content=body(),
            headers={"Content-Type": "multipart/form-data; boundary=x"},
            timeout=30,
        )
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        small = httpx.post(
            f"{base}/gradio_api/upload", files={"files": ("tone.wav", wav(tone(1.0)))}, timeout=30
        )
        assert small.status_code == 200, small.text  # the page's own uploads still work
