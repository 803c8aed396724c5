"""The page's small things (issue 33), in headless Chromium: what shows before the server
answers (the Undo bar of a deletion, the question just asked, an upload's progress), copy as
plain text, bold text in one typeface, the chat's icons clear of the first message, the
microphone's messages and timer, the login form after a wrong password, and on a phone the
timeline's axis title, the settings drawer after a choice and the compare table.

A slow server is made real where it matters: the test's own server (in this process) answers
late, or the browser holds a request back, as a loaded machine's queue would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_kit import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DOG_CLIP,
    SOUND_CHOICES,
    fill_question,
    open_app,
    open_settings,
    open_trace,
    screenshot,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

QUESTION = "Which sound is this?"


def answered(page: Any, count: int = 1, selector: str = "#chat") -> None:
    wait_for_count(page, selector, "$0.0000", count, timeout=120_000)
    page.wait_for_function("() => document.querySelector('#stop').disabled", timeout=60_000)


def held_back(page: Any, pattern: str, seconds: float) -> list[float]:
    """Hold every request matching ``pattern`` back for ``seconds`` (a slow link). The test
    waits meanwhile, so nothing else can be checked while it holds."""
    held: list[float] = []

    def hold(route: Any) -> None:
        held.append(time.monotonic())
        time.sleep(seconds)
        route.continue_()

    page.route(pattern, hold)
    return held


def slow_queue(monkeypatch: Any, seconds: float) -> list[float]:
    """Gradio's queue takes every event ``seconds`` late (as on a loaded machine); the
    server is in this process, so the page can be watched while it waits."""
    import asyncio

    from gradio.queueing import Queue

    pushed: list[float] = []
    push = Queue.push

    async def late_push(self: Any, *args: Any, **kwargs: Any) -> Any:
        pushed.append(time.monotonic())
        await asyncio.sleep(seconds)
        return await push(self, *args, **kwargs)

    monkeypatch.setattr(Queue, "push", late_push)
    return pushed


def fonts_of(page: Any, selector: str) -> set[str]:
    """The font families Chromium draws the element's text with."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, selector
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    return {font["familyName"].removesuffix(" SemiBold").removesuffix(" Bold") for font in fonts}


# Where the chat's first message is when the chat is scrolled to its top (the chat scrolls
# itself to its end as it redraws, so this is computed, not scrolled to), and the foot of the
# chat's own icons in its top corner.
FIRST_MESSAGE_AT_THE_TOP = """() => {
  const chat = document.querySelector('#chat');
  const icons = chat.querySelector('.top-panel').getBoundingClientRect();
  const row = chat.querySelector('.message-row');
  let box = row.parentElement;
  while (box !== chat && box.scrollHeight <= box.clientHeight) box = box.parentElement;
  const top = row.getBoundingClientRect().top + box.scrollTop;
  return { top, icons_bottom: icons.bottom };
}"""


def test_question_upload_copy_fonts_icons_and_a_late_undo(
    app_server, page, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    url = app_server()
    open_app(page, url)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    # Bold text is drawn in the page's own typeface, capitals and all (not a fallback font).
    regular = fonts_of(page, "#header p")
    assert len(regular) == 1, regular
    for selector in ("#header h1", "#input-hint strong"):
        assert fonts_of(page, selector) == regular, selector

    # An upload shows its file's name while it goes (the upload held back, as on a slow link).
    held_back(page, "**/upload?upload_id=*", 3)
    page.locator("#composer input[type=file]").first.set_input_files(str(DOG_CLIP))
    note = page.locator("#upload-note")
    note.wait_for(timeout=2_000)
    assert "Uploading dog_bark_esc50.wav" in note.inner_text()
    screenshot(page, tmp_path / "after-desktop-uploading.png")
    page.locator("#attachment audio").wait_for()
    page.wait_for_function("() => !document.querySelector('#upload-note:not([hidden])')")
    page.unroute("**/upload?upload_id=*")

    # The question shows at once, before the server has it (its queue held back 4 s).
    fill_question(page, QUESTION, SOUND_CHOICES)
    from gradio.queueing import Queue

    push = Queue.push
    pushed = slow_queue(monkeypatch, 6)
    pressed = time.monotonic()
    page.locator("#question textarea").press("Enter")
    asked = page.locator("#chat .user-row, #chat .asking-echo").filter(has_text=QUESTION)
    asked.first.wait_for(timeout=3_000)  # (the examples under an empty chat say it too)
    shown_after = time.monotonic() - pressed
    assert shown_after < 3.0, shown_after
    screenshot(page, tmp_path / "after-desktop-question-at-once.png")
    monkeypatch.setattr(Queue, "push", push)
    answered(page)
    assert pushed  # the question did wait in the slow queue
    assert page.locator("#chat .asking-echo").count() == 0  # the chat's own copy took its place
    assert page.locator("#chat").inner_text().count(QUESTION) == 1

    # The chat's icons (delete, copy all) are above the first message, not on it.
    placed = page.evaluate(FIRST_MESSAGE_AT_THE_TOP)
    assert placed["top"] >= placed["icons_bottom"], placed
    screenshot(page, tmp_path / "after-desktop-answer.png")

    # Copy on the answer: the text as shown (and its HTML), not its markdown source.
    answer_row = page.locator("#chat .message-row").filter(has_text="Answer:").last
    answer_row.scroll_into_view_if_needed()
    copy = page.locator("#chat button[aria-label='Copy message']").last
    copy.click()
    page.wait_for_function(
        "async () => (await navigator.clipboard.readText()).includes('Answer:')", timeout=5_000
    )
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert "**" not in copied and "<" not in copied and "Answer: " in copied, copied
    types = page.evaluate(
        "async () => (await navigator.clipboard.read()).flatMap((item) => item.types)"
    )
    assert "text/html" in types, types

    # On a phone, the timeline's axis title is on the screen in full.
    open_trace(page)
    title = '#timeline text[class^="x"][class$="title"]'  # the time axis's title (x3title)
    page.locator(title).first.wait_for(state="attached", timeout=60_000)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone turned, a window narrowed
    page.locator("#timeline").scroll_into_view_if_needed()
    page.wait_for_function(  # drawn for the phone: the title within the screen's width
        "(sel) => { const r = document.querySelector(sel).getBoundingClientRect();"
        " return r.width > 0 && r.left >= 0 && r.right <= innerWidth; }",
        arg=title,
        timeout=15_000,
    )
    screenshot(page, tmp_path / "after-phone-timeline.png")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    if not page.locator("#sidebar.open").count():
        page.locator("#sidebar .toggle-button").click()
    page.locator("#sidebar.open").wait_for()

    # Delete while the server is slow to answer (its bar would come after its window).
    from frontend import views

    slow_empty = views.empty

    def late(*args: Any, **kwargs: Any) -> Any:
        time.sleep(10)  # past UNDO_S: the old server-side window ended before the bar came
        return slow_empty(*args, **kwargs)

    monkeypatch.setattr(views, "empty", late)
    page.locator("#delete").click()
    page.locator("#confirm-delete").click()
    clicked = time.monotonic()
    early = page.locator("#undo-early-btn")
    early.wait_for(timeout=2_000)
    assert time.monotonic() - clicked < 2.0
    screenshot(page, tmp_path / "after-desktop-undo-at-once.png")
    early.click()  # Undo at once: passed on to the server's bar when it comes
    page.wait_for_function(
        "() => document.querySelectorAll('#conversation-list .conv-item').length === 1 "
        "&& !document.querySelector('#undo-bar') && !document.querySelector('#undo-early')",
        timeout=60_000,
    )
    toasts = page.locator("[data-testid='toast-body']").all_inner_texts()
    assert not any("Too late" in t for t in toasts), toasts
    monkeypatch.setattr(views, "empty", slow_empty)
    page.reload()
    page.wait_for_selector("#conversation-list .conv-item")
    assert page.locator("#conversation-list .conv-item").count() == 1  # restored for good

    # Without Undo, the deletion ends when the bar's window is over.
    page.locator("#conversation-list .conv-item").first.click()
    page.wait_for_function(
        "q => document.querySelector('#chat').innerText.includes(q)", arg=QUESTION
    )
    page.locator("#chat .top-panel button[aria-label='Clear']").click()  # the chat's trash
    page.locator("#undo").wait_for(timeout=60_000)
    page.locator("#undo").wait_for(state="detached", timeout=60_000)
    page.reload()
    page.wait_for_selector("#conversation-list .conv-root:not([data-pending])", state="attached")
    assert page.locator("#conversation-list .conv-item").count() == 0


def test_no_microphone_says_so_in_full(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_app(page, app_server())
    page.locator("#record").click()
    note = page.locator("#mic-note")
    note.wait_for(timeout=10_000)
    assert "No microphone found" in note.inner_text()
    select = page.locator("#mic select.mic-select")
    assert select.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
    screenshot(page, tmp_path / "after-desktop-no-mic.png")


@pytest.fixture
def page_with_a_microphone() -> Iterator[Any]:
    """Chromium with its fake microphone (a tone), allowed without asking."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    fake = ["--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + fake)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        yield page
        browser.close()


def test_recording_shows_the_time_recorded(
    app_server, page_with_a_microphone, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    page = page_with_a_microphone
    open_app(page, app_server())
    page.locator("#record").click()
    page.locator("#mic .stop-button").wait_for()
    # the time shown moves on while recording; no time shown stays at 0:00
    page.wait_for_function(
        """() => {
          const times = [...document.querySelectorAll('#mic time')]
            .filter((t) => t.checkVisibility({ visibilityProperty: true }));
          return times.length > 0 && times.every((t) => !/^0:00$/.test(t.textContent.trim()));
        }""",
        timeout=15_000,
    )
    label = page.evaluate(
        "() => getComputedStyle(document.querySelector('#mic .duration'), '::before').content"
    )
    assert "Recording" in label, label
    screenshot(page, tmp_path / "after-desktop-recording.png")


def test_a_wrong_password_keeps_the_user_name(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    users = tmp_path / "users.txt"
    users.write_text("alice:alice-plain-password\n")
    page.goto(app_server(users=str(users)))
    page.wait_for_url("**/login**")
    page.locator("#username").fill("alice")
    page.locator("#password").fill("not her password")
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("alert").filter(has_text="Wrong").wait_for()
    assert page.locator("#username").input_value() == "alice"
    assert page.locator("#password").input_value() == ""
    assert page.evaluate("() => document.activeElement.id") == "password"
    screenshot(page, tmp_path / "after-login-wrong-password.png")


def test_phone_settings_drawer_and_compare_table(app_server, phone_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = phone_page
    open_app(page, app_server())

    # A choice in the settings drawer closes it (the page is under it on a phone).
    open_settings(page)
    page.locator("#strategy input").click()
    page.get_by_role("option").filter(has_text="evidence").first.click()
    page.wait_for_function("() => !document.querySelector('#settings-drawer.open')")
    page.wait_for_timeout(400)  # its slide-out, for the picture
    screenshot(page, tmp_path / "after-phone-settings-closed.png")

    # Compare: the summary table keeps its words whole (it scrolls sideways if it must).
    page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
    page.wait_for_function("() => document.querySelector('#ask').innerText.includes('Compare')")
    upload(page, DOG_CLIP)
    fill_question(page, QUESTION, SOUND_CHOICES)
    page.locator("#ask").click()
    for selector in ("#compare-run-1", "#compare-run-2"):
        wait_for_count(page, selector, "$0.0000", 1, timeout=180_000)
    page.locator("#compare-summary table tbody tr").nth(1).wait_for(timeout=60_000)
    broken = page.evaluate(
        """() => [...document.querySelectorAll('#compare-summary th, #compare-summary td')]
          .filter((cell) => { const r = document.createRange(); r.selectNodeContents(cell);
                              return r.getClientRects().length > 1; })
          .map((cell) => cell.innerText)"""
    )
    assert broken == [], broken
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 391
    page.locator("#compare-summary").scroll_into_view_if_needed()
    screenshot(page, tmp_path / "after-phone-compare-table.png")

    # The timeline's axis title is on the screen in full.
