"""Time to the first page and to each local tool ready, from ``python app.py`` (issue 33).

    python -m bench.startup [--runs 1] [--fresh-numba] [--timeout 600]

Each run starts ``python app.py`` in a fresh data folder on a free port, with the models'
warm-up on (as a user starts it), and prints:

- ``listening``: the first answer of ``GET /``;
- ``starting page (503)``: the first ``GET /`` answered by the start page while the app is
  built (``backend.host.boot``; a server without it has none);
- ``first page``: the first ``GET /`` answered 200 (the app's page);
- per local tool, when ``/api/health`` first reported it ``ready`` (or ``failed``), from the
  ``warm_up`` field (``backend.host.warm_state``); a server without that field is waited
  for until its log says "local models ready".

``--fresh-numba`` points numba's cache (``NUMBA_CACHE_DIR``) at an empty folder: what a new
machine pays for compiling librosa's functions the first time. Timings on a loaded machine
vary widely: run it quiet, or say "under load".
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
POLL_S = 0.05


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_run(fresh_numba: bool, timeout_s: float, app_dir: Path = ROOT) -> dict[str, float | str]:
    """Start the app once; the seconds from start to each milestone."""
    figures: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        port = free_port()
        env = {
            **os.environ,
            "AUDIO_AGENT_PORT": str(port),
            "AUDIO_AGENT_DATA_DIR": str(Path(tmp) / "data"),
            "AUDIO_AGENT_WARM_UP": "1",
        }
        if fresh_numba:
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")
        log_path = Path(tmp) / "app.log"
        base = f"http://127.0.0.1:{port}"
        begun = time.monotonic()
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "app.py"], cwd=app_dir, env=env, stdout=log, stderr=log
            )
        try:
            with httpx.Client(timeout=30) as client:
                follow(client, base, proc, log_path, begun, timeout_s, figures)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return figures


def seconds(begun: float) -> float:
    return round(time.monotonic() - begun, 2)


def follow(
    client: httpx.Client,
    base: str,
    proc: subprocess.Popen[bytes],
    log_path: Path,
    begun: float,
    timeout_s: float,
    figures: dict[str, float | str],
) -> None:
    deadline = begun + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited: {log_path.read_text()[-2000:]}")
        now = time.monotonic() - begun
        try:
            if "first page" not in figures:
                page = client.get(base + "/", headers={"Accept": "text/html"})
                figures.setdefault("listening", seconds(begun))
                if page.status_code == 503:  # the app is still being built: its start page
                    figures.setdefault("starting page (503)", seconds(begun))
                elif page.status_code == 200:
                    figures["first page"] = seconds(begun)
                    print(f"  first page at {figures['first page']} s", flush=True)
            answer = client.get(base + "/api/health")
            if answer.status_code != 200:
                time.sleep(POLL_S)
                continue
            health = answer.json()
        except httpx.HTTPError:
            time.sleep(POLL_S)
            continue
        states = health.get("warm_up")
        if states is None:  # a server from before the states: its log line
            if "local models ready" in log_path.read_text(errors="replace"):
                figures["all tools ready (log)"] = round(now, 2)
                return
        else:
            for tool, state in states.get("tools", {}).items():
                key = f"{tool} {state}"
                if state in ("ready", "failed") and not any(
                    k.startswith(tool + " ") for k in figures
                ):
                    figures[key] = round(now, 2)
                    print(f"  {key} at {figures[key]} s", flush=True)
            if states.get("done"):
                figures["all tools settled"] = round(now, 2)
                return
        time.sleep(POLL_S if "first page" not in figures else 0.25)
    figures["timed out"] = f"after {timeout_s} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--fresh-numba", action="store_true", help="an empty numba cache")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument(
        "--app-dir", type=Path, default=ROOT, help="the checkout whose app.py is measured"
    )
    args = parser.parse_args(argv)
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}", flush=True)
    for run in range(1, args.runs + 1):
        print(f"run {run} (fresh data folder{', empty numba cache' if args.fresh_numba else ''})")
        figures = one_run(args.fresh_numba, args.timeout, args.app_dir)
        for name, value in figures.items():
            print(f"  {name:<32} {value} {'s' if isinstance(value, float) else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
