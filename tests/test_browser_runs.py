"""A run belongs to the server: reloading the page mid-run leaves it running; opening its
conversation again shows what it did so far and follows it live until the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from tests.browser_kit import (
    DOG_CLIP,
    SOUND_CHOICES,
    count_in,
    fill_question,
    open_app,
    pick,
    reopen,
    screenshot,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

CALLS = 20  # of 1 s each: the reload comes back well before the end
QUESTION = "Which sound is this, slowly?"


def slow_registry() -> Registry:
    registry = Registry()
    registry.register(ScriptedTool("slow_tool", "a dog barks", delay_s=1.0), kind="tool")

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "tool")
        if done >= CALLS or force:
            return ScriptedTurn(f"Heard it {done} times. <answer>Dog barking</answer>")
        return ScriptedTurn(f"Listening again ({done + 1}).", calls=[("slow_tool", {"n": done})])

    registry.register(ScriptedPlanner([turn]), kind="planner")
    return registry


def test_reload_mid_run_then_follow_it_to_the_end(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = app_server(registry=slow_registry())
    open_app(page, url)
    pick(page, "planner", "Scripted planner (tests)")
    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    page.locator("#ask").click()
    wait_for_count(page, "#chat", "slow_tool", 2)
    screenshot(page, tmp_path / "before-reload.png")

    # Reload mid-run, then open the conversation again from the sidebar.
    reopen(page, url, QUESTION.rstrip("?"))
    wait_for_count(page, "#chat", "slow_tool", 1, timeout=30_000)
    seen_at_open = count_in(page, "#chat", "slow_tool")
    assert seen_at_open < CALLS, "the run was over before the page came back"
    assert "Answer:" not in page.locator("#chat").inner_text()
    screenshot(page, tmp_path / "reopened-live.png")

    # It goes on live, to the answer: not "Stopped".
    answer = page.locator("#chat .message-row").filter(has_text="Answer:").first
    answer.wait_for(timeout=60_000)
    wait_for_count(page, "#chat", "$0.0000", 1)
    text = page.locator("#chat").inner_text()
    assert "Answer: Dog barking" in text
    assert count_in(page, "#chat", "slow_tool") >= CALLS > seen_at_open
    assert "Stopped" not in text and "Interrupted" not in text
    screenshot(page, tmp_path / "finished.png")
