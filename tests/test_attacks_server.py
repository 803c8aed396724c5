"""Attacks on the server itself and its faults (issue 18, attacks 4 and 7): slow clients,
connection floods and the log, a full disk, a paused process.

Slow clients and the paused process need real server processes and real sockets; the full
disk is SQLite's own "database or disk is full", made to happen with ``max_page_count``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import soundfile as sf
from sqlalchemy import Engine, event

from agent.events import parse_event
from app import create_app
from backend.host.settings import Settings
from tests.live_registry import slow_registry as live_registry
from tests.servers import serve
from tests.sse import sse_frames
from tests.test_processes import Server, new_question


def port_of(server: Server) -> int:
    return int(server.base.rsplit(":", 1)[1])


def connect(port: int, source: str) -> socket.socket:
    """A connection from ``source`` (another loopback address: another client)."""
    sock = socket.socket()
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    return sock


def closed_by_server(sock: socket.socket, within_s: float) -> bool:
    """Whether the server closed the connection (EOF or reset) within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.5)
        if not ready:
            continue
        try:
            if sock.recv(65536) == b"":
                return True
        except OSError:
            return True
    return False


def get(port: int, source: str, path: str = "/api/health") -> bytes:
    with contextlib.closing(connect(port, source)) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def trickle_uploads(port: int, source: str, count: int, within_s: float) -> list[bytes]:
    """``count`` uploads that announce 100 kB and send a byte every half second; what the
    server answers each (b"" if nothing within ``within_s``)."""
    head = (
        b"POST /api/audio HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\n\r\n"
    )
    socks = [connect(port, source) for _ in range(count)]
    for sock in socks:
        sock.sendall(head + b"--x\r\n")
    answers = {id(s): b"" for s in socks}
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(not a for a in answers.values()):
        for sock in socks:
            if answers[id(sock)]:
                continue
            ready, _, _ = select.select([sock], [], [], 0)
            if ready:
                try:
                    answers[id(sock)] = sock.recv(65536) or b"<closed>"
                except OSError:
                    answers[id(sock)] = b"<reset>"
                continue
            with contextlib.suppress(OSError):
                sock.sendall(b"a")
        time.sleep(0.5)
    for sock in socks:
        sock.close()
    return list(answers.values())


def test_slow_clients_are_cut_and_one_address_cannot_take_every_connection(tmp_path):
    """Attack: 1,500 half-sent headers and 300 uploads trickling a byte per 10 s were all kept
    open, until the server ran out of descriptors, and its log grew by 466 MB."""
    server = Server(
        tmp_path / "data",
        tmp_path / "server.log",
        AUDIO_AGENT_TRUSTED_PROXIES="10.1.2.3",  # loopback clients are clients, not a proxy
        AUDIO_AGENT_HEADER_TIMEOUT_S="2",
        AUDIO_AGENT_BODY_TIMEOUT_S="2",
        AUDIO_AGENT_MIN_BODY_KBPS="8",
        AUDIO_AGENT_MAX_CONNECTIONS_PER_ADDRESS="30",
        AUDIO_AGENT_LOG_LINES_PER_MINUTE="5",
    )
    try:
        port = port_of(server)
        half_sent = []
        for _ in range(120):
            with contextlib.suppress(OSError):
                sock = connect(port, "127.0.0.2")
                sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                half_sent.append(sock)
        # meanwhile another client is served
        assert get(port, "127.0.0.3").startswith(b"HTTP/1.1 200")
        answers = trickle_uploads(port, "127.0.0.4", 10, within_s=60)
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers
        assert b"too slowly" in answers[0]
        # every half-sent request is cut: past the cap at once, the others at the timeout
        assert all(closed_by_server(s, within_s=30) for s in half_sent)
        for sock in half_sent:
            sock.close()
        assert get(port, "127.0.0.2").startswith(b"HTTP/1.1 200")  # the address may come back
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert log.count("refused a connection") <= 5, log[-3000:]
    assert len(log.splitlines()) < 60, log[-3000:]


def test_a_flood_from_many_addresses_cannot_exhaust_the_descriptors(tmp_path, monkeypatch):
    """Attack: with 1,024 open files the server stopped answering. Here the process may open
    256: the connection cap fits under that, the flood is cut, the server answers again."""
    import resource
    import subprocess

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    popen = subprocess.Popen

    def limited_popen(*args: Any, preexec_fn: Any = None, **kwargs: Any) -> Any:
        """The limit on top of what the server's start already runs in the child."""

        def both() -> None:
            if preexec_fn is not None:
                preexec_fn()
            limited()

        return popen(*args, preexec_fn=both, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", limited_popen)
    server = Server(
        tmp_path / "data",
        tmp_path / "server.log",
        AUDIO_AGENT_TRUSTED_PROXIES="10.1.2.3",
        AUDIO_AGENT_HEADER_TIMEOUT_S="3",
        AUDIO_AGENT_LOG_LINES_PER_MINUTE="5",
    )
    monkeypatch.setattr(subprocess, "Popen", popen)
    try:
        port = port_of(server)
        flood = []
        for n in range(400):
            with contextlib.suppress(OSError):
                sock = connect(port, f"127.0.1.{n % 40 + 1}")
                sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                flood.append(sock)
        assert all(closed_by_server(s, within_s=30) for s in flood)
        for sock in flood:
            sock.close()
        assert get(port, "127.0.0.3").startswith(b"HTTP/1.1 200")
        assert server.proc.poll() is None
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert "using 16" in log  # the cap was lowered to fit the descriptors
    assert len(log.splitlines()) < 60, log[-3000:]


def page_limit(engine: Engine) -> dict[str, int]:
    """The cap on the database's size in pages that every connection of ``engine`` takes
    when it is checked out (``limit["pages"]``; 0: none)."""
    limit = {"pages": 0}

    @event.listens_for(engine, "checkout")
    def cap(dbapi_connection, _record, _proxy):  # type: ignore[no-untyped-def]
        pages = limit["pages"] or 2_147_483_646
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    return limit


@contextlib.contextmanager
def full_disk_app(tmp_path: Path, **settings: Any) -> Iterator[tuple[str, dict[str, int]]]:
    """An app (``settings`` over the defaults) whose SQLite database can be made full
    (``limit["pages"]``: its size then), answering with a run of many slow tool calls
    (``tests.live_registry``)."""
    settings = Settings(data_dir=tmp_path, warm_up=False, **settings)
    app = create_app(settings, registry=live_registry(), ui=False)
    limit = page_limit(app.state.service.store.engine)
    with serve(app) as base:
        try:
            yield base, limit
        finally:
            limit["pages"] = 0


def fill_the_disk(data_dir: Path, limit: dict[str, int]) -> None:
    """The database may not grow any more (``max_page_count`` at its size, in every
    connection), and its free pages are used up: the next write finds the disk full."""
    with contextlib.closing(sqlite3.connect(data_dir / "audio_agent.sqlite3", timeout=30)) as db:
        db.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
        db.commit()
        pages = int(db.execute("PRAGMA page_count").fetchone()[0])
        limit["pages"] = pages
        db.execute(f"PRAGMA max_page_count = {pages}")
        with contextlib.suppress(sqlite3.OperationalError):  # "database or disk is full"
            while True:
                db.execute("INSERT INTO filler VALUES (randomblob(500))")
                db.commit()


def slow_question(http: httpx.Client, tone_wav: Path) -> tuple[str, dict[str, Any]]:
    """A new conversation and a question about an upload in it, answered with slow tool
    calls (``tests.live_registry``): its id and the question's body."""
    conv = http.post("/api/conversations", json={}).json()["id"]
    with open(tone_wav, "rb") as fh:
        audio = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
    body = {"question": "What?", "audio_id": audio, "planner": "scripted", "tools": ["slow_tool"]}
    return conv, body


def ask_while_the_disk_fills(
    http: httpx.Client, conv: str, body: dict[str, Any], data_dir: Path, limit: dict[str, int]
) -> list[dict[str, str]]:
    """Ask, fill the disk at the run's first tool result; every frame of the stream."""
    frames = []
    with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
        for frame in sse_frames(resp):
            frames.append(frame)
            if frame["event"] == "tool_result" and not limit["pages"]:
                fill_the_disk(data_dir, limit)
    return frames


def test_full_disk_gives_json_errors_and_a_final_event(tmp_path, tone_wav):
    """Attack: a full disk gave a plain-text 500, and a mid-run stream ended with no final
    event."""
    with full_disk_app(tmp_path) as (base, limit), httpx.Client(base_url=base, timeout=60) as http:
        conv, body = slow_question(http, tone_wav)
        frames = ask_while_the_disk_fills(http, conv, body, tmp_path, limit)
        last = frames[-1]
        assert last["event"] == "run_failed", [f["event"] for f in frames]
        failed = json.loads(last["data"])
        assert failed["kind"] == "storage_full" and "disk is full" in failed["message"]
        # a question long enough to need new pages of the database
        big = {
            **body,
            "question": "Why? " * 780,
            "choices": [f"{i} " + "c" * 280 for i in range(20)],
        }
        refused = http.post(f"/api/conversations/{conv}/ask", json=big)
        assert refused.status_code == 507
        assert refused.headers["content-type"] == "application/json"
        assert "disk is full" in refused.json()["detail"]


def test_a_paused_process_keeps_its_runs_and_a_stalled_one_ends_them_clearly(tmp_path, tone_wav):
    """Attack: a process paused for 25 s had its live run marked interrupted by the other
    process while it still served it, and the client's stream ended silently."""
    env = {
        "AUDIO_AGENT_HEARTBEAT_S": "0.3",
        "AUDIO_AGENT_LEASE_S": "1.5",
        "AUDIO_AGENT_STALL_S": "8",
        "AUDIO_AGENT_TEST_CALLS": "16",
        "AUDIO_AGENT_TEST_DELAY_S": "0.3",
    }
    a = Server(tmp_path / "data", tmp_path / "a.log", **env)
    b = Server(tmp_path / "data", tmp_path / "b.log", **env)
    try:
        for pause_s, expected in ((3.0, "run_finished"), (12.0, "run_failed")):
            # a recording of its own each time: no tool result comes from the cache
            wav = tmp_path / f"tone-{pause_s}.wav"
            sf.write(wav, 0.3 * np.sin(np.arange(16_000) * pause_s / 16), 16_000)
            conv, body, cookies = new_question(a.base, wav)
            received = []
            with (
                httpx.Client(base_url=a.base, timeout=90, cookies=cookies) as http,
                http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp,
            ):
                run_id = resp.headers["X-Run-Id"]
                for frame in sse_frames(resp):
                    received.append(parse_event(json.loads(frame["data"])))
                    if sum(e.type == "tool_result" for e in received) == 2 and pause_s:
                        os.kill(a.proc.pid, signal.SIGSTOP)
                        time.sleep(pause_s)
                        os.kill(a.proc.pid, signal.SIGCONT)
                        pause_s = 0
            assert received[-1].type == expected, [e.type for e in received[-3:]]
            run = httpx.get(f"{b.base}/api/runs/{run_id}", cookies=cookies).json()["run"]
            if expected == "run_finished":  # paused less than the stall limit: left alone
                assert run["status"] == "ok"
            else:  # stalled past it: taken over, and the client was told
                assert run["status"] == "interrupted"
                assert received[-1].kind == "interrupted"
                assert "stopped answering" in received[-1].message
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(a.proc.pid, signal.SIGCONT)
        a.stop()
        b.stop()
