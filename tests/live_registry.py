"""A registry of scripted planners and tools for servers that tests start as subprocesses
(``AUDIO_AGENT_TEST_REGISTRY=tests.live_registry:slow_registry``): a long run of many slow
tool calls, so that a test can kill or restart the server in the middle of it.

``AUDIO_AGENT_TEST_CALLS`` (default 12) tool calls, one per planner turn, each taking
``AUDIO_AGENT_TEST_DELAY_S`` (default 0.3) seconds.
"""

from __future__ import annotations

import os

from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn


def slow_registry() -> Registry:
    calls = int(os.environ.get("AUDIO_AGENT_TEST_CALLS", "12"))
    delay = float(os.environ.get("AUDIO_AGENT_TEST_DELAY_S", "0.3"))
    registry = Registry()
    registry.register(ScriptedTool("slow_tool", "a dog barks", delay_s=delay), kind="tool")

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "tool")
        if done >= calls or force:
            return ScriptedTurn(f"Heard it {done} times. <answer>Dog</answer>")
        return ScriptedTurn(
            f"Listening again ({done + 1}).", calls=[("slow_tool", {"n": done + 1})]
        )

    registry.register(ScriptedPlanner([turn]), kind="planner")
    return registry
