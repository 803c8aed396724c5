"""Audio-native touches in headless Chromium, on the offline default stack and a real reading
(LibriSpeech): the visitor's clip is a player in their message; a transcript segment in the
chat seeks that player; the timeline's playhead stands where the recording is and moves
while it plays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser_kit import (
    FIXTURES,
    fill_question,
    open_app,
    open_panel_after_the_run,
    open_trace,
    screenshot,
    serious_violations,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

SPEECH = FIXTURES / "speech_padded_librispeech_3436-172162-0000.wav"  # speech from 1.0 s


def playhead(page: Any) -> dict[str, Any] | None:
    return page.evaluate(
        """() => { const line = document.querySelector('#timeline .playhead');
            if (!line) return null;
            return {time: Number(line.dataset.time), left: parseFloat(line.style.left),
                    hidden: line.hidden}; }"""
    )


def test_clip_in_the_bubble_segments_seek_and_the_playhead_moves(
    app_server, page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": 1280, "height": 800})
    open_app(page, app_server())
    upload(page, SPEECH)
    fill_question(page, "What is said?")
    page.locator("#ask").click()
    wait_for_count(page, "#chat", "$0.0000", 1, timeout=120_000)

    # The clip plays in the question's own message (the owner's audio route).
    bubble = page.locator("#chat .message-row audio").first
    assert bubble.get_attribute("src").startswith("/api/audio/")
    page.wait_for_function(
        "() => { const a = document.querySelector('#chat .message-row audio');"
        " return a && a.readyState >= 1 && Math.abs(a.duration - 4.4) < 0.1; }"
    )

    # A transcript segment in the tool's panel is a button that plays from its start.
    chat = page.locator("#chat")
    title = chat.locator(".thought-group .title").filter(has_text="Tool: transcribe").first
    segment = chat.locator("button.seek").first
    open_panel_after_the_run(page, title, segment)
    panel = chat.locator(".thought-group").filter(has_text="Tool: transcribe").first
    assert segment.is_visible(), panel.inner_text()[:500]
    start = float(segment.get_attribute("data-start"))
    assert 0.0 <= start < 3.0, start
    page.evaluate("() => { document.querySelector('#chat .message-row audio').currentTime = 3.9; }")
    page.wait_for_function(
        "() => document.querySelector('#chat .message-row audio').currentTime > 3"
    )
    assert (
        segment.get_attribute("aria-label")
        == f"Play the recording from {segment.get_attribute('data-start')} s"
    )
    assert serious_violations(page) == []  # the chat with its segment buttons
    segment.click()
    page.wait_for_function(
        "s => Math.abs(document.querySelector('#chat .message-row audio').currentTime - s) < 0.35",
        arg=start,
    )
    screenshot(page, tmp_path / "segment-seek.png")

    # The timeline shows where the recording stands: its playhead at the segment's start.
    page.evaluate("() => document.querySelector('#chat .message-row audio').pause()")
    open_trace(page)
    page.locator("#timeline .js-plotly-plot").wait_for()
    page.wait_for_function("() => document.querySelector('#timeline .playhead')")
    head = playhead(page)
    assert head and not head["hidden"] and abs(head["time"] - start) < 0.35, head

    # Played (muted: no sound in a test), the playhead moves along the time axis.
    page.evaluate(
        """() => { const a = document.querySelector('#trace-player audio');
            a.muted = true; a.currentTime = 0.2; return a.play(); }"""
    )
    page.wait_for_function(
        "() => Number(document.querySelector('#timeline .playhead')?.dataset.time) > 1.0",
        timeout=15_000,
    )
    later = playhead(page)
    assert later and later["left"] > head["left"] - 60, (head, later)
    screenshot(page, tmp_path / "playhead.png")
    first = later
    page.wait_for_timeout(700)
    moved = playhead(page)
    assert moved and moved["time"] > first["time"] and moved["left"] > first["left"], (first, moved)
