"""The real app in headless Chromium: upload, ask with choices, watch the trace, reopen it.

Runs the offline planner and the real local tools on a real recording (ESC-50 dog bark).
Screenshots go to the test's tmp_path; their paths are printed (see them with ``-s``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser_kit import (
    DOG_CLIP,
    SOUND_CHOICES,
    close_settings,
    fill_question,
    open_app,
    open_settings,
    open_trace,
    reopen,
    screenshot,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

QUESTION = "Which sound is this?"
FOLLOW_UP = "Is anyone speaking?"


def test_ask_watch_and_reopen(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    url = app_server()
    open_app(page, url)
    assert "Ask about audio" in page.locator("#header").inner_text()
    open_settings(page)  # the settings drawer: who answers and how
    assert "not an LLM" in page.locator("#planner-note").inner_text()
    # The preset that matches the default selection is shown; the others are listed as
    # unavailable, with what enables them.
    assert "Offline default" in page.locator("#preset input").input_value()
    page.get_by_text("Unavailable planners, tools and presets").click()
    unavailable = page.locator("#unavailable").inner_text()
    assert "AudioToolAgent, closed" in unavailable and "OPENAI_API_KEY" in unavailable
    page.get_by_text("Unavailable planners, tools and presets").click()  # closed again
    close_settings(page)

    # Upload, question, choices, Ask.
    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    page.locator("#ask").click()

    chat = page.locator("#chat")
    tool_panel = chat.locator(".thought-group .title").filter(has_text="Tool:").first
    tool_panel.wait_for(timeout=60_000)
    answer = chat.locator(".message-row").filter(has_text="Answer:").first
    answer.wait_for(timeout=75_000)
    wait_for_count(page, "#chat", "$0.0000", 1)
    text = answer.inner_text()
    chosen = text.split("Answer:", 1)[1].strip().splitlines()[0].split(" · ")[0].strip()
    assert chosen in SOUND_CHOICES, text
    assert "tool call" in chat.inner_text()
    assert page.locator("#question textarea").input_value() == ""
    screenshot(page, tmp_path / "answer.png")

    # Open a tool panel: its arguments and output (or its error) are there.
    tool_panel.click()
    assert "Arguments" in chat.inner_text()

    # The trace of that answer: the timeline and the table of calls.
    open_trace(page)
    table = page.locator("#trace-table")
    table.locator("td").first.wait_for()
    assert table.get_by_text("yamnet-w8a8").count() or table.get_by_text("sound_events").count()
    assert "Totals" in page.locator("#trace-totals").inner_text()
    page.locator("#timeline .js-plotly-plot").wait_for()
    page.locator("#timeline").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "timeline.png")

    # A follow-up about the same audio, without uploading again.
    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    page.locator("#question textarea").fill(FOLLOW_UP)
    page.locator("#ask").click()
    wait_for_count(page, "#chat", "$0.0000", 2)
    assert "Upload or record audio first" not in page.content()

    # After a reload the conversation is in the sidebar; opening it rebuilds the trace.
    reopen(page, url, QUESTION.rstrip("?"))
    chat.locator(".thought-group .title").filter(has_text="Tool:").first.wait_for()
    wait_for_count(page, "#chat", "$0.0000", 2, timeout=30_000)
    reopened = chat.inner_text()
    assert QUESTION in reopened and FOLLOW_UP in reopened
    assert chosen in reopened
    assert page.locator("#export-json").is_enabled()
    screenshot(page, tmp_path / "reopened.png")
    print(f"browser test took {time.monotonic() - started:.1f} s")
