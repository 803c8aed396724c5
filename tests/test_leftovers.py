"""The session-end check (tests/leftovers.py) sees a process a test started and left running,
and not one that was stopped; a server that cannot start within its deadline is stopped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.leftovers import leftovers
from tests.servers import AppProcess


def test_a_process_left_running_is_found_and_a_stopped_one_is_not() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert "time.sleep(600)" in leftovers().get(sleeper.pid, "")
    finally:
        sleeper.kill()
        sleeper.wait(30)
    assert sleeper.pid not in leftovers()


def test_a_server_that_does_not_start_in_time_is_stopped(tmp_path) -> None:
    with pytest.raises(AssertionError, match="did not start within"):
        AppProcess(tmp_path / "log", {"AUDIO_AGENT_DATA_DIR": str(tmp_path)}, start_timeout_s=0)
    assert not [c for c in leftovers().values() if "app.py" in c]
