"""One-thumb use at 390x844 in headless Chromium: examples on the first screen (one tap asks),
the composer full width at the bottom, the sidebar closing after any choice, the trace table
as stacked cards, a readable timeline, every tap target at least 44 px, no clipped labels,
and axe-core on each view. Offline default stack and the bundled example recordings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser_kit import open_app, open_settings, open_trace, screenshot, serious_violations

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844
TAP_TARGETS = """() => {
  const selector = 'button, a[href], [role="tab"], .conv-item, input:not([type="hidden"]),'
    + ' textarea, summary, [role="button"]';
  const small = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
    if (el.closest('[aria-hidden="true"], .sr-only, .visually-hidden')) continue;  // not shown
    // inline text targets are exempt (WCAG 2.5.5): links and segment buttons in a message
    if (el.closest('.message-content, .prose p, .prose li, audio')) continue;
    const box = el.closest('.wrap, .wrap-inner, label, .block') || el;  // an input's own box
    const r = (el.matches('input, textarea') ? box : el).getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.bottom < 0 || r.top > innerHeight) continue;
    const y = Math.min(r.y + r.height / 2, innerHeight - 1);
    const hit = document.elementFromPoint(r.x + r.width / 2, y);
    if (!hit || !(el.contains(hit) || hit.contains(el) || box.contains(hit))) continue;  // covered
    if (r.width < 44 || r.height < 44) {
      small.push(`${el.tagName}#${el.id}.${String(el.className).slice(0, 40)} `
        + `"${(el.innerText || el.getAttribute('aria-label') || '').trim().slice(0, 30)}" `
        + `${Math.round(r.width)}x${Math.round(r.height)}`);
    }
  }
  return small;
}"""
CLIPPED = """() => [...document.querySelectorAll('button, [role="tab"], label span, .conv-title')]
  .filter((el) => el.checkVisibility({ visibilityProperty: true }) && !el.closest('.icon-btn')
    && !el.closest('[aria-hidden="true"], .sr-only, .visually-hidden') && el.innerText.trim()
    && !el.matches('.icon-btn, .conv-title') && el.scrollWidth > el.clientWidth + 1
    && getComputedStyle(el).textOverflow !== 'ellipsis')
  .map((el) => `${el.tagName}#${el.id} "${el.innerText.trim().slice(0, 30)}" `
    + `${el.scrollWidth}>${el.clientWidth}`)"""


def checks(page: Any, view: str, tmp_path: Path) -> None:
    """The phone rules on the page as it is now: tap targets, clipped labels, axe, width."""
    screenshot(page, tmp_path / f"phone-{view}.png")
    assert page.evaluate(TAP_TARGETS) == [], view
    assert page.evaluate(CLIPPED) == [], view
    assert serious_violations(page) == [], view
    assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH + 1, view


def sidebar_open(page: Any) -> bool:
    return bool(page.locator("#sidebar.open").count())


def open_sidebar(page: Any) -> None:
    page.locator("#sidebar .toggle-button").click()
    page.locator("#sidebar.open").wait_for()
    page.wait_for_timeout(400)  # its slide-in


def test_phone_examples_composer_sidebar_trace_and_targets(
    app_server, phone_page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    page = phone_page
    open_app(page, app_server())
    page.wait_for_timeout(600)
    assert not sidebar_open(page)  # closed on a phone
    # The examples are on the first screen, above the composer.
    examples = page.locator("#chat button.example")
    assert examples.count() == 5
    composer = page.locator("#composer").bounding_box()
    assert composer and composer["width"] >= WIDTH - 24  # full width
    assert HEIGHT - 40 < composer["y"] + composer["height"] <= HEIGHT
    last = examples.last.bounding_box()
    assert last and last["y"] + last["height"] <= composer["y"]
    checks(page, "start", tmp_path)

    # One tap asks: the recording and the question, answered in the chat.
    examples.first.click()
    page.wait_for_function(
        "() => document.querySelector('#chat').innerText.includes('$0.0000')", timeout=120_000
    )
    page.wait_for_function("() => !document.querySelector('#ask').disabled", timeout=30_000)
    text = page.locator("#chat").inner_text()
    assert "Which sound is this?" in text and "Answer:" in text
    assert page.evaluate("() => [scrollX, scrollY]") == [0, 0]  # no page jump
    assert page.locator("#chat .message-row audio").count() == 1  # the clip, playable
    checks(page, "answer", tmp_path)

    # The sidebar closes after any choice: a new conversation, a conversation picked.
    open_sidebar(page)
    checks(page, "sidebar", tmp_path)
    page.locator("#new-conversation").click()
    page.wait_for_timeout(600)
    assert not sidebar_open(page)
    open_sidebar(page)
    page.locator("#conversation-list .conv-item").first.click()
    page.wait_for_timeout(600)
    assert not sidebar_open(page)
    page.wait_for_function("() => document.querySelector('#chat').innerText.includes('Answer:')")

    # The trace: the table as one card per call, the timeline readable.
    open_trace(page)
    page.locator("#trace-table td").first.wait_for()
    page.locator("#timeline .js-plotly-plot").wait_for()
    page.wait_for_timeout(800)  # the timeline fitted to the phone
    layout = page.evaluate(
        """() => { const row = document.querySelector('#trace-table tbody tr');
            const head = document.querySelector('#trace-table thead');
            const cell = row.querySelector('td');
            return {row: getComputedStyle(row).display, head: head.getBoundingClientRect().height,
                    label: getComputedStyle(cell, '::before').content}; }"""
    )
    assert layout["row"] == "block" and layout["head"] <= 1 and layout["label"] == '"tool"'
    timeline = page.evaluate(
        """() => { const plot = document.querySelector('#timeline .js-plotly-plot');
            const bar = plot.querySelector('.modebar-container');
            const ticks = [...plot.querySelectorAll('.xaxislayer-above text')]
              .filter((t) => t.getBoundingClientRect().width > 0)
              .map((t) => t.getBoundingClientRect()).sort((a, b) => a.x - b.x);
            const overlaps = ticks.slice(1).filter((t, i) => t.left < ticks[i].right + 2).length;
            const left = plot.getBoundingClientRect().left;
            const clipped = [...plot.querySelectorAll('.yaxislayer-above text')]
              .filter((t) => t.getBoundingClientRect().left < left).length;
            const width = plot.getBoundingClientRect().width;
            return {modebar: bar ? getComputedStyle(bar).display : 'none', ticks: ticks.length,
                    overlaps, clippedLabels: clipped, width}; }"""
    )
    assert timeline["modebar"] == "none" and timeline["ticks"] >= 3, timeline
    assert timeline["overlaps"] == 0 and timeline["clippedLabels"] == 0, timeline
    assert timeline["width"] <= WIDTH, timeline
    checks(page, "trace", tmp_path)
    page.locator("#trace-table").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "phone-trace-cards.png")

    # Compare: two pickers and the send button's name, nothing clipped.
    page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
    page.locator("#compare-note").wait_for()
    page.wait_for_function("() => document.querySelector('#ask').innerText.includes('Compare')")
    assert page.locator("#ask").get_attribute("title") == "Compare 2 runs"
    page.wait_for_timeout(800)  # the tab's fade-in
    checks(page, "compare", tmp_path)

    # The settings drawer.
    open_settings(page)
    checks(page, "settings", tmp_path)
