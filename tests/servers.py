"""Real HTTP in tests: an ASGI app on a free loopback port in a background thread (``serve``),
or the app as its own process, ``python app.py`` (``AppProcess``)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parent.parent


def start_deadline_s() -> float:
    """How long a server may take to start: generous, since a loaded machine (CI, a parallel
    run, other work) may take minutes to import the app; a server that did not start in time
    is stopped, never left running."""
    return float(os.environ.get("AUDIO_AGENT_TEST_START_S", "300"))


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies (Linux), so even a
    pytest that is itself killed leaves no server running."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve(app, port: int | None = None) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Serve ``app`` until the block ends; yields its base URL."""
    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_deadline_s()
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            thread.join(timeout=10)
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class AppProcess:
    """``python app.py`` started in ``cwd`` with ``env`` (over this process's environment, minus
    the names in ``unset``) on a free port passed in ``port_env``, its output appended to
    ``log``; ready once /api/health answers."""

    def __init__(
        self,
        log: Path,
        env: Mapping[str, str],
        *,
        cwd: Path = ROOT,
        unset: tuple[str, ...] = (),
        port: int | None = None,
        port_env: str = "AUDIO_AGENT_PORT",
        start_timeout_s: float | None = None,
    ) -> None:
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        environ = {k: v for k, v in os.environ.items() if k not in unset}
        environ.update({port_env: str(self.port), "AUDIO_AGENT_WARM_UP": "0", **env})
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "app.py"],
            cwd=cwd,
            env=environ,
            stdout=self.log,
            stderr=self.log,
            preexec_fn=_die_with_parent,
        )
        if start_timeout_s is None:
            start_timeout_s = start_deadline_s()
        deadline = time.monotonic() + start_timeout_s
        try:
            while True:
                assert self.proc.poll() is None, log.read_text()[-3000:]
                try:
                    if httpx.get(f"{self.base}/api/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, (
                    f"server did not start within {start_timeout_s:.0f} s"
                )
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(20)
        self.log.close()
