"""The chat as a new user meets it, in headless Chromium at 1280x900 and at 390x844: Enter
sends, the answer comes into view, the sidebar's search and keyboard list, Delete with
confirmation and undo, the timeline's click-to-play, Stop, Retry and Edit, and axe-core's
accessibility rules on the main page, a reopened conversation and the compare tab.

Runs the offline planner and the real local tools on real recordings. Screenshots go to the
test's tmp_path (and to $UI_SHOTS_DIR when set); their paths are printed (see them with -s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser_kit import (
    DOG_CLIP,
    FIXTURES,
    SOUND_CHOICES,
    choice_chips,
    fill_question,
    open_app,
    open_trace,
    screenshot,
    serious_violations,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

QUESTION = "Which sound is this?"
SPEECH_CLIP = FIXTURES / "digit_1_george_1.wav"


def answered(page: Any, count: int = 1, selector: str = "#chat") -> None:
    """Wait until ``count`` runs have finished in the chat (their footnotes are there)."""
    wait_for_count(page, selector, "$0.0000", count, timeout=90_000)


def in_viewport(page: Any, selector: str) -> bool:
    return page.evaluate(
        """sel => { const els = [...document.querySelectorAll(sel)];
            const el = els[els.length - 1]; if (!el) return false;
            const r = el.getBoundingClientRect();
            return r.bottom > 0 && r.top < window.innerHeight && r.height > 0; }""",
        selector,
    )


def test_chat_history_delete_timeline_and_axe(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = app_server()
    open_app(page, url)
    assert serious_violations(page) == []  # the main page, empty
    screenshot(page, tmp_path / "desktop-start.png")
    stop = page.locator("#stop")
    assert stop.is_disabled() and not stop.is_visible()  # nothing runs: send shows instead
    assert page.locator("#ask").is_visible()

    # Shift+Enter adds a line; Enter sends (the hint under the box says so).
    assert "Enter" in page.locator("#input-hint").inner_text()
    upload(page, DOG_CLIP)
    fill_question(page, "Which sound", SOUND_CHOICES)
    box = page.locator("#question textarea")
    box.press("End")
    box.press("Shift+Enter")
    box.type("is this?")
    assert box.input_value() == "Which sound\nis this?"
    box.fill(QUESTION)
    box.press("Enter")
    page.wait_for_function("() => !document.querySelector('#stop').disabled", timeout=30_000)
    answered(page)
    page.wait_for_function("() => document.querySelector('#stop').disabled", timeout=30_000)
    answer = page.locator("#chat .message-row").filter(has_text="Answer:").last
    line = answer.inner_text()
    assert "confidence" in line.split("\n")[0] or "confidence" in line, line
    assert box.input_value() == ""
    # Copy buttons on the answers; the recording as a player in the question's message.
    assert page.locator("#chat").get_by_role("button", name="Copy message").count() >= 2
    player = page.locator("#chat .message-row audio")
    assert player.count() == 1
    assert player.get_attribute("src").startswith("/api/audio/")
    screenshot(page, tmp_path / "desktop-answer.png")

    # Edit puts the last question back; Retry asks it again as a new turn.
    page.locator("#edit").click()
    page.wait_for_function("() => document.querySelector('#question textarea').value.length > 0")
    assert box.input_value() == QUESTION
    assert choice_chips(page) == SOUND_CHOICES
    box.fill("")
    page.locator("#retry").click()
    answered(page, 2)

    # The trace's timeline: a click on a span plays the recording from its start.
    open_trace(page)
    page.locator("#trace-table td").first.wait_for()
    plot = page.locator("#timeline .js-plotly-plot")
    plot.wait_for()
    bars = page.locator("#timeline .barlayer .point path")
    bars.first.wait_for()
    plot.scroll_into_view_if_needed()
    span = bars.last.bounding_box()
    assert span is not None
    x, y = span["x"] + span["width"] / 2, span["y"] + span["height"] / 2
    page.mouse.move(x, y)
    page.locator("#timeline .hoverlayer .hovertext").first.wait_for()
    screenshot(page, tmp_path / "desktop-timeline-hover.png")
    page.mouse.click(x, y)
    page.wait_for_function(
        "() => document.querySelector('#trace-player audio').currentTime > 0", timeout=10_000
    )

    # A second conversation (about a spoken digit); then the search finds each by its words
    # or its file name, and the list is one Tab stop with the arrow keys inside.
    page.locator("#new-conversation").click()
    page.wait_for_function("() => !document.querySelector('#chat audio')")
    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    upload(page, SPEECH_CLIP)
    fill_question(page, "What number is said?")
    page.locator("#question textarea").press("Enter")
    answered(page)
    items = page.locator("#conversation-list .conv-item")
    assert items.count() == 2
    assert "digit_1_george_1.wav" in items.first.inner_text()
    assert "today" in page.locator("#conversation-list").inner_text().lower()
    search = page.locator("#conv-search input, #conv-search textarea").first
    search.fill("dog_bark")
    visible = page.locator("#conversation-list .conv-item:visible")
    assert visible.count() == 1 and QUESTION.rstrip("?") in visible.inner_text()
    screenshot(page, tmp_path / "desktop-search.png")
    search.fill("nothing like this")
    assert page.locator("#conversation-list .conv-nomatch").is_visible()
    search.fill("")
    assert page.locator("#conversation-list [tabindex='0']").count() == 1
    items.first.focus()
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("() => document.activeElement.innerText")
    assert QUESTION.rstrip("?") in focused
    page.keyboard.press("Enter")  # opens the dog conversation
    page.wait_for_function(
        "q => document.querySelector('#chat').innerText.includes(q)", arg=QUESTION
    )
    answered(page, 2)
    open_trace(page)
    page.locator("#timeline .js-plotly-plot").wait_for()
    assert serious_violations(page) == []  # a reopened conversation with its trace
    screenshot(page, tmp_path / "desktop-reopened.png")

    # Delete asks first; after it, Undo brings the conversation back.
    page.locator("#delete").click()
    confirm = page.locator("#confirm-delete")
    confirm.wait_for()
    assert "undo" in page.locator("#delete-confirm").inner_text().lower()
    assert items.count() == 2  # nothing deleted yet
    screenshot(page, tmp_path / "desktop-delete-confirm.png")
    confirm.click()
    page.locator("#undo").wait_for()
    page.wait_for_function(
        "() => document.querySelectorAll('#conversation-list .conv-item').length === 1"
    )
    screenshot(page, tmp_path / "desktop-deleted-undo.png")
    page.locator("#undo").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#conversation-list .conv-item').length === 2"
    )
    page.wait_for_function(
        "q => document.querySelector('#chat').innerText.includes(q)", arg=QUESTION
    )
    page.reload()
    page.wait_for_selector("#conversation-list .conv-item")
    page.wait_for_timeout(500)
    assert items.count() == 2  # restored for good, not only on the page

    # The compare tab: axe again; its column labels and the strategy picker.
    page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
    page.locator("#compare-note").wait_for()
    page.wait_for_timeout(800)  # the tab's fade-in: measured while fading, text is faint
    assert serious_violations(page) == []
    screenshot(page, tmp_path / "desktop-compare.png")


def test_phone_sidebar_closed_enter_sends_answer_in_view(
    app_server, phone_page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    page = phone_page
    url = app_server()
    open_app(page, url)
    page.wait_for_timeout(800)  # the sidebar closes on narrow screens
    assert not page.locator("#sidebar.open").count()
    # The question box is on the first screen, without scrolling past the chat.
    question = page.locator("#question textarea")
    box = question.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 844, box
    screenshot(page, tmp_path / "phone-start.png")

    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    question.press("Enter")
    answered(page)
    page.wait_for_timeout(500)
    assert in_viewport(page, "#chat .message-row")  # the answer is in view
    answer = page.locator("#chat .message-row").filter(has_text="Answer:").last
    answer_box = answer.bounding_box()
    chat_box = page.locator("#chat").bounding_box()
    assert answer_box and chat_box
    assert answer_box["y"] < chat_box["y"] + chat_box["height"]  # scrolled to it in the chat
    assert chat_box["y"] < 844 and chat_box["y"] + chat_box["height"] > 0
    screenshot(page, tmp_path / "phone-answer.png")
    # The input stays reachable under the chat, and the page is no wider than the phone.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
    page.locator("#question textarea").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "phone-input.png")

    # The sidebar opens over the page and closes again after a conversation is picked.
    page.locator("#sidebar .toggle-button").click()
    page.locator("#conversation-list .conv-item").first.wait_for()
    screenshot(page, tmp_path / "phone-sidebar.png")
    page.locator("#conversation-list .conv-item").first.click()
    page.wait_for_timeout(800)
    assert not page.locator("#sidebar.open").count()
