"""Memory and event-loop stalls while large JSON bodies with inline audio arrive (issue 30).

    python -m bench.body_memory [--mb 150] [--concurrent 4]

Starts ``python app.py`` in a fresh data folder, then sends, each scenario in a fresh server:

- one ``POST /v1/chat/completions`` whose ``input_audio`` is ``--mb`` MB of bytes (base64);
- ``--concurrent`` of them at once from one address;
- one MCP ``upload_audio`` call (``tools/call``) carrying the same bytes.

The bytes are not audio, so each upload is refused once decoded (415): what is measured is
reading, parsing and decoding the body, not a run. It prints the server's resident memory
before (VmRSS) and its peak (VmHWM, sampled from /proc), the peak added per body, the
statuses, and the slowest ``GET /api/health`` answer while the bodies were handled (asked
every 20 ms). Linux only (/proc).

Each body is sent in 1 MB pieces: httpx writing one large ``bytes`` copies what is left of
it after every ``send`` (quadratic, holding this process's GIL), which stalled the health
prober here for 0.2-0.6 s whatever the server did.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class Server:
    """``python app.py`` on a free port in its own data folder."""

    def __init__(self, folder: Path, upload_mb: float) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "AUDIO_AGENT_PORT": str(self.port),
            "AUDIO_AGENT_DATA_DIR": str(folder / "data"),
            "AUDIO_AGENT_WARM_UP": "0",
            "AUDIO_AGENT_MAX_UPLOAD_MB": str(upload_mb),
            "GRADIO_TEMP_DIR": str(folder / "gradio"),
        }
        self.log = (folder / "server.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=self.log, stderr=self.log
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/api/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def v1_body(data: str) -> bytes:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is heard?"},
            {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
        ],
    }
    return json.dumps({"model": "offline", "messages": [message]}).encode()


def mcp_body(data: str) -> bytes:
    call = {"name": "upload_audio", "arguments": {"data": data, "filename": "x.wav"}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).encode()


MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


def scenario(folder: Path, upload_mb: float, path: str, body: bytes, count: int) -> dict:
    """One fresh server, ``count`` bodies at once: memory and the slowest health check."""
    server = Server(folder, upload_mb)
    headers = MCP_HEADERS if path == "/mcp" else {"content-type": "application/json"}
    try:
        with httpx.Client(base_url=server.base, timeout=600) as http:
            # the same request with a few bytes first: what is loaded once is not measured
            build = mcp_body if path == "/mcp" else v1_body
            http.post(path, content=build(base64.b64encode(b"x" * 64).decode()), headers=headers)
            before = status_kb(server.proc.pid, "VmRSS")
            slowest = [0.0]
            peak = [status_kb(server.proc.pid, "VmHWM")]
            done = threading.Event()

            def watch() -> None:
                with httpx.Client(base_url=server.base, timeout=60) as probe:
                    while not done.is_set():
                        started = time.perf_counter()
                        probe.get("/api/health")
                        slowest[0] = max(slowest[0], time.perf_counter() - started)
                        peak[0] = max(peak[0], status_kb(server.proc.pid, "VmHWM"))
                        time.sleep(0.02)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()

            def pieces() -> Iterator[bytes]:
                for at in range(0, len(body), MB):
                    yield body[at : at + MB]

            def send(_: int) -> int:
                length = {"content-length": str(len(body))}
                return http.post(path, content=pieces(), headers=headers | length).status_code

            started = time.perf_counter()
            with ThreadPoolExecutor(count) as pool:
                statuses = list(pool.map(send, range(count)))
            seconds = time.perf_counter() - started
            time.sleep(0.5)
            done.set()
            watcher.join()
            peak[0] = max(peak[0], status_kb(server.proc.pid, "VmHWM"))
    finally:
        server.stop()
    added = (peak[0] - before) / 1024
    return {
        "path": path,
        "bodies": count,
        "body_mb": round(len(body) / MB, 1),
        "statuses": statuses,
        "seconds": round(seconds, 1),
        "rss_before_mb": round(before / 1024),
        "peak_added_mb": round(added),
        "peak_added_per_body_x": round(added / (len(body) / MB) / count, 2),
        "slowest_health_ms": round(slowest[0] * 1000),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=150, help="bytes of 'audio' per body (MB)")
    parser.add_argument("--concurrent", type=int, default=4)
    args = parser.parse_args(argv)
    data = base64.b64encode(os.urandom(int(args.mb * MB))).decode()
    upload_mb = args.mb + 10
    runs = [
        ("/v1/chat/completions", v1_body, 1),
        ("/v1/chat/completions", v1_body, args.concurrent),
        ("/mcp", mcp_body, 1),
    ]
    for path, build, count in runs:
        with tempfile.TemporaryDirectory() as folder:
            result = scenario(Path(folder), upload_mb, path, build(data), count)
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
