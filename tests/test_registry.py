"""The catalogue: what is available and why not, presets, keys never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.planners.openai_compat import OpenAICompatPlanner
from agent.registry import LOCAL_TOOLS, Registry, UnavailableError
from agent.tools.openai_audio import OpenAIAudioChatTool
from agent.tools.transcribe import RemoteTranscribeTool


def by_name(entries: list[dict]) -> dict[str, dict]:
    return {e["name"]: e for e in entries}


def test_without_keys_only_the_offline_parts_are_available():
    catalogue = Registry(env={}).catalogue()
    planners = by_name(catalogue["planners"])
    assert planners["offline"]["available"] and "not an LLM" in planners["offline"]["label"]
    assert planners["gpt"]["reason"] == "set OPENAI_API_KEY to use it"
    assert planners["gemini"]["reason"] == "set GEMINI_API_KEY to use it"
    tools = by_name(catalogue["tools"])
    assert all(tools[t]["available"] for t in ("transcribe", "sound_events", "clip"))
    assert "QWEN_OMNI_BASE_URL" in tools["qwen2_5_omni"]["reason"]
    presets = by_name(catalogue["presets"])
    assert presets["offline"]["available"]
    assert not presets["audiotoolagent_open"]["available"]
    assert "DEEPSEEK_API_KEY" in presets["audiotoolagent_open"]["reason"]
    with pytest.raises(UnavailableError, match="OPENAI_API_KEY"):
        Registry(env={}).planner("gpt")


def test_keys_and_urls_switch_entries_on_without_being_shown():
    secret = "sk-live-SECRET-value"
    env = {
        "OPENAI_API_KEY": secret,
        "DEEPSEEK_API_KEY": "d-SECRET",
        "WHISPER_BASE_URL": "http://127.0.0.1:9/v1",
        "VOXTRAL_BASE_URL": "http://127.0.0.1:9/v1",
        "QWEN_OMNI_BASE_URL": "http://127.0.0.1:9/v1",
        "AUDIO_FLAMINGO_BASE_URL": "http://127.0.0.1:9/v1",
        "DESTA_BASE_URL": "http://127.0.0.1:9/v1",
    }
    registry = Registry(env=env)
    catalogue = registry.catalogue()
    assert secret not in repr(catalogue) and "d-SECRET" not in repr(catalogue)
    assert by_name(catalogue["presets"])["audiotoolagent_open"]["available"]
    assert isinstance(registry.planner("deepseek"), OpenAICompatPlanner)
    assert isinstance(registry.tool("whisper"), RemoteTranscribeTool)
    assert isinstance(registry.tool("gpt_audio"), OpenAIAudioChatTool)
    assert registry.tool("whisper").max_audio_s == 30


def test_a_self_hosted_planner_needs_no_key(tmp_path: Path):
    registry = Registry(env={"LOCAL_LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    planner = registry.planner("local_llm")
    assert planner.native_tools is False  # the tag protocol, as configured
    assert str(planner.client.base_url) == "http://127.0.0.1:9/v1/"


def test_switched_off_and_unknown_entries(tmp_path: Path):
    config = tmp_path / "models.toml"
    config.write_text(
        """
[[planner]]
name = "offline"
provider = "local"

[[tool]]
name = "transcribe"
provider = "local"
enabled = false

[[tool]]
name = "mystery"
provider = "carrier-pigeon"
"""
    )
    tools = by_name(Registry(config, env={}).catalogue()["tools"])
    assert "enabled = false" in tools["transcribe"]["reason"]
    assert "unknown provider" in tools["mystery"]["reason"]


def test_register_adds_custom_planners_and_tools():
    from agent.testing import ScriptedPlanner, ScriptedTool

    registry = Registry(env={})
    registry.register(ScriptedPlanner([], name="demo"), kind="planner")
    registry.register(ScriptedTool("echo"), kind="tool")
    assert registry.planner("demo").name == "demo"
    assert registry.tool("echo").name == "echo"
    assert by_name(registry.catalogue()["tools"])["echo"]["available"]


def test_local_tools_are_the_catalogues_local_entries():
    local = {e.name for e in Registry(env={}).entries("tool") if e.provider == "local"}
    assert set(LOCAL_TOOLS) == local
