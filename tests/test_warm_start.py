"""Start-up warms what a process's first planner call would otherwise build: after
``agent.sdk_warm_up.warm_up`` the first streamed and whole turns of a fresh process, of the
Chat Completions planner and of the Responses API planner, against a real (fake) server on
loopback, build no pydantic schema and read no type hints (the SDK's lazy work that made a
first question ~4x slower than the next, and a Responses API one 0.6 s slower)."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from agent.planners.base import FinalAnswer
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from app import create_service
from backend.host.settings import Settings
from backend.service import AskRequest
from backend.service.owned import OwnedService
from tests.fake_openai import FakeOpenAI, Reply, ResponsesReply
from tests.servers import serve, start_deadline_s

ROOT = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: the test process has long since built all of it.
FIRST_TURNS = r"""
import asyncio, json, sys, typing
import pydantic._internal._generate_schema as generate

from agent import sdk_warm_up
from agent.planners.base import ChatMessage
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.planners.openai_responses import OpenAIResponsesPlanner
from agent.remote import ModelConfig

# Built before counting, as the app's registry builds its planners at start-up.
planners = [
    kind(ModelConfig.from_entry(
        {"name": "gpt", "provider": "openai_compatible", "model": "fake-model",
         "base_url": sys.argv[1], "streaming": stream}
    ))
    for kind in (OpenAICompatPlanner, OpenAIResponsesPlanner)
    for stream in (True, False)
]
if sys.argv[2] == "warm":
    sdk_warm_up.warm_up()
counts = {"schemas": 0, "type_hints": 0}
built, hints = generate.GenerateSchema.generate_schema, typing.get_type_hints

def counted_schema(self, *args, **kwargs):
    counts["schemas"] += 1
    return built(self, *args, **kwargs)

def counted_hints(*args, **kwargs):
    counts["type_hints"] += 1
    return hints(*args, **kwargs)

generate.GenerateSchema.generate_schema = counted_schema
typing.get_type_hints = counted_hints

async def turns():
    for planner in planners:
        async for _ in planner.stream_turn([ChatMessage("user", "Which sound?")], []):
            pass

asyncio.run(turns())
print(json.dumps(counts))
"""


def first_turns(url: str, warm: bool) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_TURNS, url, "warm" if warm else "cold"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=start_deadline_s(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_first_planner_turns_after_warm_up_build_nothing() -> None:
    server = FakeOpenAI()
    with serve(server.app) as base:
        for _ in range(4):
            server.chat.append(Reply(text="It is a dog. <answer>Dog</answer>", usage=(120, 9)))
            server.responses.append(
                ResponsesReply(text="<answer>Dog</answer>", summary="A bark.", calls=[("f", "{}")])
            )
        cold = first_turns(f"{base}/v1", warm=False)
        warm = first_turns(f"{base}/v1", warm=True)
    assert cold["schemas"] > 0  # what the warm-up is for: without it the first turn builds
    assert warm == {"schemas": 0, "type_hints": 0}, warm


GEMINI_AND_COMPATIBLE = """
[[planner]]
name = "gemini"
provider = "gemini"
model = "gemini-fake"
key_env = "FAKE_GEMINI_KEY"

[[planner]]
name = "compatible"
provider = "openai_compatible"
model = "m"
base_url = "http://127.0.0.1:9/v1"
key_optional = true
"""


def test_start_up_builds_the_planners_and_their_clients(tmp_path: Path, monkeypatch) -> None:
    """``Registry.build_planners`` (run in the start-up warm-up) makes each available remote
    planner and its SDK client, Gemini's too (made on first use otherwise), and sends
    nothing; a client that cannot be made is reported, not raised."""
    from agent.planners import gemini
    from agent.registry import Registry

    made: list[str] = []
    real = gemini.make_client

    def counted(config):  # type: ignore[no-untyped-def]
        made.append(config.name)
        return real(config)

    monkeypatch.setattr(gemini, "make_client", counted)
    catalogue = tmp_path / "models.toml"
    catalogue.write_text(GEMINI_AND_COMPATIBLE)
    registry = Registry(catalogue, env={"FAKE_GEMINI_KEY": "AIzaFAKE-0123456789"})
    assert registry.build_planners() == []
    assert made == ["gemini"]
    registry.planner("gemini").client  # noqa: B018 - the same client, not made again
    assert made == ["gemini"]

    def refused(config):  # type: ignore[no-untyped-def]
        raise ValueError("no such key format")

    monkeypatch.setattr(gemini, "make_client", refused)
    fresh = Registry(catalogue, env={"FAKE_GEMINI_KEY": "AIzaFAKE-0123456789"})
    assert fresh.build_planners() == ["gemini"]


TOOLS = ("tool_a", "tool_b", "tool_c")


def _three_tools_then_answer(messages, tools, force):  # type: ignore[no-untyped-def]
    if any(m.role == "tool" for m in messages):
        return ScriptedTurn("All three heard.", answer=FinalAnswer(text="done"))
    return ScriptedTurn("Asking all three.", calls=[(name, {}) for name in TOOLS])


def test_after_start_up_a_first_question_compiles_no_statement(
    tmp_path: Path, tone_wav: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``Store.warm_up`` compiles what storing a question takes: its message and run, event
    batches of one event and of several, three tool results cached at once. SQLAlchemy
    compiles a statement run with several parameter sets (``executemany``) apart from the
    same statement with one, so both forms are warmed; before, the first question compiled
    the events insert and the cache's upsert. Its log says "[generated in …]" for a compile
    and "[cached since …]" for a statement it had."""
    registry = Registry()
    registry.register(ScriptedPlanner([_three_tools_then_answer] * 2), kind="planner")
    for name in TOOLS:
        registry.register(ScriptedTool(name, "ok"), kind="tool")
    settings = Settings(data_dir=tmp_path, owner_runs_per_minute=0, owner_max_runs=0)
    service = create_service(settings, registry)
    try:
        service.runs.warmed.result(timeout=start_deadline_s())
        owned = OwnedService(service, "bench")
        audio_id = owned.upload_file(tone_wav).id
        conversation_id = owned.data.create_conversation().id
        ask = AskRequest("Which sound?", audio_id=audio_id, planner="scripted", tools=[*TOOLS])

        async def first_question() -> list[str]:
            request, _ = await asyncio.to_thread(
                service.prepare, conversation_id, ask, owner=owned.owner
            )
            run_ids = service.start_runs(conversation_id, [request], owner=owned.owner)
            return [event.type async for event in service.follow(run_ids)]

        with caplog.at_level(logging.INFO, logger="sqlalchemy.engine.Engine"):
            types = asyncio.run(first_question())
    finally:
        service.close()
    assert types[-1] == "run_finished" and types.count("tool_result") == 3
    said = [r.getMessage() for r in caplog.records]
    assert any("[cached since" in line for line in said)  # the log was heard
    assert [line for line in said if "[generated in" in line] == []
