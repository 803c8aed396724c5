"""Every ``python -m`` of this project either is a command that checks its arguments, or says
it is none: nothing exits 0 having silently done nothing (issue 35:
``python -m backend.host.hosting space OUT_DIR`` did, when the command is
``python -m backend.host.space``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.commands import commands_of, is_command, module_target, refusal
from tests.servers import ROOT

PACKAGES = ("agent", "backend", "bench", "frontend", "storage")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AUDIO_AGENT_WARM_UP": "0"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def all_commands() -> list[str]:
    return [c for p in PACKAGES for c in commands_of(p, ROOT / p)]


def test_the_commands_are_found() -> None:
    found = set(all_commands())
    assert {
        "agent",
        "bench",
        "backend.host.space",
        "backend.access.auth",
        "backend.http.mcp_stdio",
    } <= found
    assert {"bench.perf", "bench.limits", "bench.offline_eval"} <= found
    assert "backend.host.hosting" not in found and "agent.commands" not in found


def test_a_module_that_is_no_command_refuses_and_names_the_right_one(tmp_path: Path) -> None:
    done = run("-m", "backend.host.hosting", "space", "space-out", cwd=tmp_path)
    assert done.returncode == 2, done
    assert "python -m backend.host.hosting is not a command" in done.stderr
    assert "Did you mean: python -m backend.host.space" in done.stderr
    assert not (tmp_path / "space-out").exists()
    # a module inside one of backend's folders: the guard of backend/__init__.py covers them
    for module in ("storage.db", "agent.run", "bench.scoring", "backend.runs.manager"):
        done = run("-m", module, cwd=tmp_path)
        assert done.returncode == 2 and "is not a command" in done.stderr, (module, done)


def test_every_command_refuses_an_argument_it_does_not_take(tmp_path: Path) -> None:
    commands = all_commands()

    def bogus(module: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        return module, run("-m", module, "--no-such-option", cwd=tmp_path)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(bogus, commands))
    for module, done in results:
        assert done.returncode == 2, (module, done.stdout[-500:], done.stderr[-500:])
        assert "--no-such-option" in done.stderr or "usage" in done.stderr, (module, done)
    assert list(tmp_path.iterdir()) == []  # none of them wrote anything


def test_every_package_installs_the_guard() -> None:
    for package in PACKAGES:
        tree = ast.parse((ROOT / package / "__init__.py").read_text())
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "refuse_unless_command"
        ]
        assert calls, f"{package}/__init__.py does not call refuse_unless_command"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["python", "-m", "backend.host.hosting", "space", "x"],
            ("backend.host.hosting", ["space", "x"]),
        ),
        (["python", "-X", "dev", "-mbench.perf"], ("bench.perf", [])),
        (["python", "app.py", "-m", "x"], None),
        (["python", "-c", "pass"], None),
    ],
)
def test_the_command_line_is_read(argv: list[str], expected: object) -> None:
    assert module_target(argv) == expected


def test_the_refusal_lists_the_commands() -> None:
    text = refusal("backend.host.hosting", ["space"], ["backend.access.auth", "backend.host.space"])
    assert "Did you mean: python -m backend.host.space" in text
    assert "python -m backend.access.auth, python -m backend.host.space" in text
    assert is_command(ROOT / "agent" / "__main__.py")


def test_alembic_by_hand_migrates_the_database_the_app_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``alembic -c storage/alembic.ini upgrade head`` honours AUDIO_AGENT_DATA_DIR as the app
    does (it migrated ./data/ instead)."""
    import sqlite3

    from backend.host.settings import Settings
    from storage import default_url

    data = tmp_path / "data-elsewhere"
    monkeypatch.setenv("AUDIO_AGENT_DATA_DIR", str(data))
    monkeypatch.delenv("AUDIO_AGENT_DB_URL", raising=False)
    assert default_url() == Settings.from_env().database_url
    done = subprocess.run(
        [str(Path(sys.executable).with_name("alembic")), "-c", "storage/alembic.ini"]
        + ["upgrade", "head"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(data / "audio_agent.sqlite3") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone()
