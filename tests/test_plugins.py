"""Plugins: a package installed next to the app adds a tool and a strategy with no edit here.

``tests/fixtures/plugin_pkg`` is such a package (``audio-agent-peak``): a ``peak_time`` local
tool and a ``peak_first`` strategy, declared in its pyproject's ``audio_agent.tools`` and
``audio_agent.strategies`` entry points. pip installs it into a temporary folder; fresh
processes with that folder on PYTHONPATH (as an installed package is on a user's path) see
the tool in the catalogue, the UI's tool list, the CLI and a run, and the strategy in the
CLI, the bench and the API over real HTTP. Without the folder on the path, neither is there.
A plugin that fails to load is reported by the doctor and breaks nothing. A provider
registered by a module builds and checks the catalogue entries that name it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.doctor import CHECK_CODE, check_entry
from agent.planners.base import Planner
from agent.plugins import (
    PROVIDERS_GROUP,
    STRATEGIES_GROUP,
    TOOLS_GROUP,
    builtin_modules,
    registry,
)
from agent.providers import Provider, register_provider
from agent.registry import Registry
from agent.remote import ModelConfig
from agent.testing import ScriptedPlanner, ScriptedTurn
from tests.servers import ROOT, AppProcess

FIXTURE = ROOT / "tests" / "fixtures" / "plugin_pkg"
RECORDING = ROOT / "tests" / "fixtures" / "dog_bark_esc50.wav"
TOOL, STRATEGY = "peak_time", "peak_first"

# What one fresh process sees: the catalogue, the UI's lists, the bench's and the agent's
# CLI choices, the broken plugins, and a run in which a scripted planner calls the tool.
PROBE = r"""
import asyncio, contextlib, io, json, tempfile
from pathlib import Path

from agent import plugins
from agent.__main__ import main as agent_main
from agent.audio import AudioStore
from agent.registry import Registry
from agent.run import RunRequest, run_question
from agent.planners.base import FinalAnswer
from agent.testing import ScriptedPlanner, ScriptedTurn
from bench.__main__ import parser as bench_parser
from frontend.catalogue import Catalogue


def help_of(call):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        call()
    return out.getvalue()


registry = Registry()
catalogue = registry.catalogue()
page = Catalogue.of(catalogue)
seen = {
    "catalogue_tools": {t["name"]: t for t in catalogue["tools"] if t["available"]},
    "catalogue_strategies": [s["name"] for s in catalogue["strategies"]],
    "ui_tools": [t["name"] for t in page.available_tools],
    "ui_default_tools": page.default_tools,
    "ui_strategies": page.strategy_names,
    "agent_help": help_of(lambda: agent_main(["ask", "--help"])),
    "bench_help": help_of(lambda: bench_parser().parse_args(["run", "--help"])),
    "errors": [str(e) for e in plugins.load_errors()],
}
if "peak_time" in seen["catalogue_tools"]:
    store = AudioStore(Path(tempfile.mkdtemp()) / "audio")
    audio = store.add_file(Path(RECORDING))
    turns = [ScriptedTurn(calls=[("peak_time", {})]), ScriptedTurn(answer=FinalAnswer("early"))]
    planner = ScriptedPlanner(turns)
    request = RunRequest("When is it loudest?", [audio], planner, registry.tools(["peak_time"]))

    async def events():
        return [e async for e in run_question(request, store=store)]

    seen["run"] = [json.loads(e.model_dump_json()) for e in asyncio.run(events())]
print("PROBE" + json.dumps(seen))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package installed (by pip, from a copy: pip builds in the source tree)."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "src"
    shutil.copytree(FIXTURE, source)
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    assert list(target.glob("audio_agent_peak-*.dist-info"))
    return target


def env_with(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)])}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def probe(env: dict[str, str]) -> dict:
    script = PROBE.replace("Path(RECORDING)", f"Path({str(RECORDING)!r})")
    out = run(["-c", script], env).stdout
    return json.loads(out[out.index("PROBE") + len("PROBE") :])


def test_an_installed_plugin_adds_its_tool_and_strategy_everywhere(site: Path) -> None:
    seen = probe(env_with(site))
    assert seen["errors"] == []
    tool = seen["catalogue_tools"][TOOL]
    assert tool["label"] == "Loudest moment (plugin)" and tool["local"] is True
    assert tool["colour"] == "#7a3e9d"  # its timeline lane, from the tool itself
    assert TOOL in seen["ui_tools"] and TOOL in seen["ui_default_tools"]
    assert STRATEGY in seen["catalogue_strategies"] and STRATEGY in seen["ui_strategies"]
    assert "react" in seen["catalogue_strategies"]  # the built-ins are all still there
    assert f",{STRATEGY}}}" in seen["agent_help"].replace(" ", "")  # the last of the choices
    assert f",{STRATEGY}}}" in seen["bench_help"].replace(" ", "")
    # a scripted planner calls the plugin's tool through the real loop
    calls = [e for e in seen["run"] if e["type"] == "tool_call"]
    results = [e for e in seen["run"] if e["type"] == "tool_result"]
    assert [c["tool"] for c in calls] == [TOOL]
    assert results[0]["error"] is None and "loudest moment is at" in results[0]["output"]
    assert seen["run"][-1]["type"] == "run_finished"


def test_the_cli_runs_the_plugins_strategy_with_its_tool(site: Path) -> None:
    """``python -m agent ask --strategy peak_first --tool peak_time``: the plugin's strategy
    calls the plugin's tool, and the offline planner answers from it."""
    out = run(
        ["-m", "agent", "ask", str(RECORDING), "When is it loudest?", "--planner", "offline",
         "--tool", TOOL, "--strategy", STRATEGY, "--json"],
        env_with(site),
    ).stdout  # fmt: skip
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert events[0]["type"] == "run_started" and events[0]["strategy"] == STRATEGY
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == [TOOL]
    result = next(e for e in events if e["type"] == "tool_result")
    assert "loudest moment is at" in result["output"]
    assert [e["type"] for e in events][-2:] == ["answer", "run_finished"]


def test_the_api_lists_the_plugins_tool_and_strategy(site: Path, tmp_path: Path) -> None:
    """The app as its own process, over real HTTP: GET /api/catalogue."""
    app = AppProcess(
        tmp_path / "app.log",
        {"PYTHONPATH": env_with(site)["PYTHONPATH"], "AUDIO_AGENT_DATA_DIR": str(tmp_path)},
        unset=("AUDIO_AGENT_TEST_REGISTRY",),
    )
    try:
        catalogue = httpx.get(f"{app.base}/api/catalogue", timeout=30).json()
    finally:
        app.stop()
    strategies = {s["name"]: s for s in catalogue["strategies"]}
    assert strategies[STRATEGY]["label"].startswith("Peak first (plugin")
    assert strategies["react"]["default"] is True
    assert TOOL in {t["name"] for t in catalogue["tools"] if t["available"]}


def test_without_the_plugin_on_the_path_neither_is_there() -> None:
    seen = probe(env_with())
    assert TOOL not in seen["catalogue_tools"] and TOOL not in seen["ui_tools"]
    assert STRATEGY not in seen["catalogue_strategies"] + seen["ui_strategies"]
    assert STRATEGY not in seen["agent_help"] and STRATEGY not in seen["bench_help"]
    assert "evidence" in seen["catalogue_strategies"] and "transcribe" in seen["catalogue_tools"]


def test_a_broken_plugin_is_reported_and_breaks_nothing(tmp_path: Path) -> None:
    """An entry point whose module fails to import: logged, listed by the doctor (which then
    exits 1), and the app's own tools and strategies are all there."""
    dist = tmp_path / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[audio_agent.strategies]\nbroken = broken_plugin_module_that_is_not_there\n"
    )
    env = {k: v for k, v in env_with(tmp_path).items() if not k.endswith("_API_KEY")}
    seen = probe(env)
    [error] = seen["errors"]
    assert "broken = broken_plugin_module_that_is_not_there" in error
    assert "ModuleNotFoundError" in error
    assert {"react", "caption_first", "refine", "evidence"} <= set(seen["catalogue_strategies"])
    doctor = subprocess.run(
        [sys.executable, "-m", "agent", "doctor", "--json", "--timeout", "2"],
        cwd=ROOT, env={**env, "AUDIO_AGENT_NETWORK": "off"}, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    rows = [r for r in json.loads(doctor.stdout) if r["kind"] == "plugin"]
    assert [(r["status"], r["model"]) for r in rows] == [("error", "audio_agent.strategies")]
    assert doctor.returncode == 1


class EchoProvider(Provider):
    """A provider as a plugin module would define it: its planner, its model list."""

    name = "test_echo_api"
    interfaces = ("audio_chat",)

    def planner(self, settings: Mapping[str, Any], config: ModelConfig) -> Planner:
        turns = [ScriptedTurn(calls=[("lookup_code", {})]), ScriptedTurn(CHECK_CODE)]
        return ScriptedPlanner(turns, name=config.name, model=config.model)

    async def listed_models(self, config: ModelConfig) -> dict[str, str | None]:
        return {"echo-1": "2099-01-01"}


ECHO_CATALOGUE = """
[[planner]]
name = "echo"
provider = "test_echo_api"
model = "echo-1"
key_env = "ECHO_KEY"

[[planner]]
name = "ghost"
provider = "nobody_registered_this"

[[tool]]
name = "echo_transcribe"
provider = "test_echo_api"
interface = "transcription"
"""


@pytest.fixture
def echo_provider() -> Iterator[EchoProvider]:
    provider = register_provider(EchoProvider())
    yield provider
    registry(PROVIDERS_GROUP).remove(provider.name)


async def test_a_registered_provider_builds_and_checks_its_entries(
    echo_provider: EchoProvider, tmp_path: Path
) -> None:
    """The registry asks the entry's provider for its planner and what it serves; the doctor
    asks it for its model list: no ``if provider == ...`` anywhere else."""
    config = tmp_path / "models.toml"
    config.write_text(ECHO_CATALOGUE)
    reg = Registry(config, env={"ECHO_KEY": "k"})
    reasons = {
        e["name"]: e["reason"] for e in [*reg.catalogue()["planners"], *reg.catalogue()["tools"]]
    }
    assert {name: reasons[name] for name in ("echo", "ghost", "echo_transcribe")} == {
        "echo": None,
        "ghost": "unknown provider 'nobody_registered_this'",
        "echo_transcribe": "unknown interface 'transcription'",
    }
    assert isinstance(reg.planner("echo"), ScriptedPlanner)
    entry = next(e for e in reg.entries("planner") if e.name == "echo")
    check = await check_entry(reg, "planner", entry.settings, 5)
    assert (check.offered, check.shutdown_date, check.status) == (True, "2099-01-01", "shuts_down")
    assert check.exchange == "tool round trip ok"


def test_a_built_in_is_found_by_its_module_alone() -> None:
    """A module of agent/tools, agent/strategies or agent/providers that registers at its top
    level is loaded with no list naming it."""
    assert "agent.tools.local_asr" in builtin_modules(TOOLS_GROUP)
    assert "agent.tools.base" not in builtin_modules(TOOLS_GROUP)  # it defines the decorator
    assert "agent.strategies.react" in builtin_modules(STRATEGIES_GROUP)
    assert "agent.providers.search" in builtin_modules(PROVIDERS_GROUP)
    assert "agent.providers.deepseek" in builtin_modules(PROVIDERS_GROUP)  # a billing rule


def test_defaults_name_the_registrys_strategy_not_a_copy() -> None:
    """No module outside the strategy's own holds its name as a default: requests, the API's
    contenders and the runs take the registry's default (``default_strategy``)."""
    from agent.strategies import default_strategy
    from backend.http.api import Contender
    from backend.service import AskRequest

    assert AskRequest(question="q").strategy == default_strategy() == Contender().strategy
    pattern = re.compile(r"""[:=]\s*["']react["']""")
    copies = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("agent", "backend", "frontend", "storage")
        for path in (ROOT / folder).rglob("*.py")
        # a stored run_started of an old run names react when it named none
        if path.name not in {"react.py", "events.py"}
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert copies == []
