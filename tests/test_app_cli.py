"""``python app.py`` as a newcomer meets it: its options, and a port already in use (issue 33)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.servers import start_deadline_s

ROOT = Path(__file__).resolve().parents[1]


def run_app(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AUDIO_AGENT_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "app.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=start_deadline_s(),
    )  # fmt: skip


def test_help_lists_the_host_the_port_and_the_data_folder(tmp_path):
    done = run_app("--help", data_dir=tmp_path)
    assert done.returncode == 0, done.stderr
    for option, variable in (
        ("--host", "AUDIO_AGENT_HOST"),
        ("--port", "AUDIO_AGENT_PORT"),
        ("--data-dir", "AUDIO_AGENT_DATA_DIR"),
    ):
        assert option in done.stdout and variable in done.stdout, done.stdout


def test_a_port_in_use_is_said_at_once_with_the_way_out(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_app("--port", str(port), data_dir=tmp_path / "data")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "in use" in done.stderr, done.stderr
    assert "--port" in done.stderr and "AUDIO_AGENT_PORT" in done.stderr, done.stderr
    assert "Errno" not in done.stderr and "Traceback" not in done.stderr, done.stderr
