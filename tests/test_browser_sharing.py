"""Two visitors in two browser contexts (two cookie jars) on one server.

A asks a question; B's sidebar never shows A's conversation; A's Share button makes a link
that B opens as a read-only page (chat, tool panels, trace, audio; no question box).
Screenshots go to the test's tmp_path (see them with ``-s``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_kit import (
    DOG_CLIP,
    PHONE,
    SOUND_CHOICES,
    VIEWPORT,
    fill_question,
    open_app,
    screenshot,
    serious_violations,
    upload,
)

pytestmark = pytest.mark.browser

QUESTION = "Which sound is in this private clip?"


def test_second_visitor_sees_nothing_until_shared(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = app_server()
    open_app(page, url)
    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    page.locator("#ask").click()
    page.locator("#chat .message-row").filter(has_text="Answer:").first.wait_for(timeout=120_000)
    page.locator("#conversation-list .conv-item").filter(has_text="private clip").wait_for()

    # B: another browser context, so another cookie jar: another visitor.
    other = page.context.browser.new_context(viewport=VIEWPORT)
    b = other.new_page()
    b.set_default_timeout(30_000)
    open_app(b, url)
    b.wait_for_timeout(1500)  # the sidebar list has loaded by now
    assert "private clip" not in b.locator("#sidebar").inner_text()
    assert b.locator("#conversation-list .conv-item").count() == 0
    screenshot(b, tmp_path / "b-sidebar.png")

    # A shares: the link appears (and is copied).
    page.locator("#share-btn").click()
    link_box = page.locator("#share-link textarea, #share-link input").first
    link_box.wait_for()
    page.wait_for_function(
        "() => (document.querySelector('#share-link textarea, #share-link input')?.value || '')"
        ".includes('/shared/')"
    )
    link = link_box.input_value()
    assert link.startswith(url.rstrip("/") + "/shared/"), link
    screenshot(page, tmp_path / "a-shared.png")

    # B opens it: the conversation, read-only.
    b.goto(link)
    chat = b.locator("#shared-chat")
    chat.locator(".message-row").filter(has_text="Answer:").first.wait_for(timeout=60_000)
    assert QUESTION in chat.inner_text()
    assert "read-only" in b.locator("#shared-heading").inner_text()
    assert b.locator("#ask").count() == 0 and b.locator("#question").count() == 0
    assert b.locator("#share-btn").count() == 0 and b.locator("#sidebar").count() == 0
    b.locator("#shared-audio audio").wait_for(state="attached")
    assert b.locator("#shared-trace-table").get_by_text("sound_events").count() >= 1
    tool_panel = chat.locator(".thought-group .title").filter(has_text="Tool:").first
    tool_panel.click()
    assert "Arguments" in chat.inner_text()
    shot = screenshot(b, tmp_path / "b-shared-view.png", full_page=True)
    assert shot.stat().st_size > 10_000
    # The recording plays in its question, through the link's own route; nothing to write
    # with (no question box, no trash icon); accessible, on a desktop and on a phone.
    assert chat.locator("audio").first.get_attribute("src").startswith("/api/shared/")
    assert b.locator("textarea").count() == 0
    assert not chat.get_by_role("button", name="Clear").is_visible()
    b.wait_for_timeout(800)  # fade-ins
    assert serious_violations(b) == []
    b.set_viewport_size(PHONE)
    b.wait_for_timeout(500)
    assert serious_violations(b) == []
    first = chat.locator(".message-row").first.bounding_box()
    label = chat.locator("label").first
    assert first and (label.count() == 0 or not label.is_visible())  # nothing over it
    screenshot(b, tmp_path / "b-shared-phone.png")

    # A stops sharing: the page B has open ends, with one message and nothing else.
    page.locator("#unshare-btn").click()
    b.get_by_text("This share link no longer works").wait_for(timeout=20_000)
    assert not b.locator("#shared-chat").is_visible()
    assert not b.locator("#shared-run-select").is_visible()
    assert not b.locator("#shared-trace-table").is_visible()
    assert serious_violations(b) == []
    screenshot(b, tmp_path / "b-revoked.png")
    b.reload()
    b.get_by_text("This share link no longer works").wait_for()
    assert not b.locator("#shared-chat").is_visible()
    b.set_viewport_size(VIEWPORT)

    # Still nothing of A's in B's own history.
    open_app(b, url)
    b.wait_for_timeout(1500)
    assert b.locator("#conversation-list .conv-item").count() == 0
    other.close()
