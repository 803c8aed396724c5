"""Compare mode in headless Chromium: the offline planner under two strategies, side by side.

Without keys only the offline planner is available, so the strategies are what differ: react
(AudioToolAgent) and evidence (EChO-Agent) answer the same question about a real recording in
two live columns; a summary table shows both answers, whether they agree and the majority.
After a reload the reopened conversation shows both runs, each under its heading, and the
summary; the compare tab shows them side by side again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser_kit import (
    DOG_CLIP,
    SOUND_CHOICES,
    fill_question,
    open_app,
    reopen,
    screenshot,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

QUESTION = "Which sound do you hear?"


def test_compare_two_strategies_side_by_side(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    url = app_server()
    open_app(page, url)

    # The compare tab: the offline planner with react and evidence is the default pick.
    page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
    note = page.locator("#compare-note")
    assert "2 runs side by side" in note.inner_text()
    assert "react" in note.inner_text() and "evidence" in note.inner_text()
    ask = page.locator("#ask")
    page.wait_for_function("() => document.querySelector('#ask').innerText.includes('Compare')")
    assert "Compare 2 runs" in ask.inner_text()

    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    ask.click()

    first, second = page.locator("#compare-run-1"), page.locator("#compare-run-2")
    first.wait_for()
    second.wait_for()
    headings = [page.locator(f"#compare-heading-{i}").inner_text() for i in (1, 2)]
    assert "react" in headings[0] and "evidence" in headings[1]
    # Both columns stream their own tool panels.
    for column in (first, second):
        column.locator(".thought-group .title").filter(has_text="Tool:").first.wait_for(
            timeout=60_000
        )
    screenshot(page, tmp_path / "compare-streaming.png")

    # Both answer; the summary has a row per run, agreement and the majority answer.
    for selector in ("#compare-run-1", "#compare-run-2"):
        wait_for_count(page, selector, "$0.0000", 1)
    summary = page.locator("#compare-summary")
    page.wait_for_function(
        "() => /agree|majority/i.test(document.querySelector('#compare-summary').innerText)",
        timeout=30_000,
    )
    rows = summary.locator("table tbody tr")
    assert rows.count() == 2
    cells = [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(2)]
    assert [row[1] for row in cells] == ["react", "evidence"]
    answers = [row[2] for row in cells]
    assert all(a in SOUND_CHOICES for a in answers), cells
    text = summary.inner_text()
    if answers[0] == answers[1]:
        assert "All 2 runs agree" in text and answers[0] in text
    else:
        assert "No majority" in text
    page.wait_for_function("() => document.querySelector('#ask').innerText.includes('Compare')")
    screenshot(page, tmp_path / "compare-done.png")

    # The chat tab has the question with both runs under their headings and the summary.
    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    chat = page.locator("#chat")
    wait_for_count(page, "#chat", "$0.0000", 2)
    assert "Run 1 of 2" in chat.inner_text() and "Run 2 of 2" in chat.inner_text()
    assert "Comparison of 2 runs" in chat.inner_text()

    # Reload and reopen: nothing is lost.
    reopen(page, url, QUESTION.rstrip("?"))
    wait_for_count(page, "#chat", "$0.0000", 2, timeout=30_000)
    reopened = chat.inner_text()
    assert QUESTION in reopened
    assert "Run 1 of 2" in reopened and "Run 2 of 2" in reopened
    assert "react" in reopened and "evidence" in reopened
    assert "Comparison of 2 runs" in reopened
    for answer in answers:
        assert answer in reopened
    chat.locator(".message-row").filter(
        has_text="Comparison of 2 runs"
    ).scroll_into_view_if_needed()
    screenshot(page, tmp_path / "compare-reopened-chat.png")
    page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
    wait_for_count(page, "#compare-run-1", "$0.0000", 1, timeout=10_000)
    wait_for_count(page, "#compare-run-2", "$0.0000", 1, timeout=10_000)
    assert page.locator("#compare-summary table tbody tr").count() == 2
    # Each column has its own timeline of the recording under it.
    for index in (1, 2):
        page.locator(f"#compare-timeline-{index} .js-plotly-plot").wait_for(timeout=20_000)
    page.locator("#compare-timeline-1").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "compare-reopened-tab.png")

    # On a phone the columns are stacked, one under the other, and no wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(500)
    one, two = (page.locator(f"#compare-run-{i}").bounding_box() for i in (1, 2))
    assert one and two and two["y"] >= one["y"] + one["height"] - 1, (one, two)
    assert one["width"] <= 390 and two["width"] <= 390
    page.locator("#compare-heading-1").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "compare-phone.png")
    print(f"compare browser test took {time.monotonic() - started:.1f} s")
