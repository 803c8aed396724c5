"""The page as people expect a chat to be, in headless Chromium at 1280x800: a URL per
conversation (reload, back and forward, another visitor's id), a spinner while a
conversation answers, short distinct titles, a truthful Stop, the composer pinned at the
bottom with no page jump, the settings drawer, the strategy kept across a reload, the trash
icon, uploads checked at once, and axe-core with a toast open.

Scripted planner and tools (tests' own) where the run's content does not matter; real
recordings. Screenshots go to the test's tmp_path (and $UI_SHOTS_DIR when set).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from tests.browser_kit import (
    DOG_CLIP,
    FIXTURES,
    SOUND_CHOICES,
    attach,
    choice_chips,
    fill_question,
    loaded,
    open_app,
    open_settings,
    open_trace,
    pick,
    screenshot,
    serious_violations,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
SPEECH_CLIP = FIXTURES / "digit_1_george_1.wav"
SCRIPTED = "Scripted planner (tests)"


def scripted_registry(calls: int = 1, delay_s: float = 0.0) -> Registry:
    """The catalogue's planners and tools plus a scripted planner that calls ``slow_tool``
    ``calls`` times (each ``delay_s`` long) and answers Dog barking."""
    registry = Registry()
    registry.register(ScriptedTool("slow_tool", "a dog barks", delay_s=delay_s), kind="tool")

    def turn(messages, tools, force):  # type: ignore[no-untyped-def]
        done = sum(1 for m in messages if m.role == "tool")
        if done >= calls or force:
            return ScriptedTurn(f"Heard it {done} times. <answer>Dog barking</answer>")
        return ScriptedTurn(f"Listening ({done + 1}).", calls=[("slow_tool", {"n": done})])

    registry.register(ScriptedPlanner([turn]), kind="planner")
    return registry


def ask(page: Any, question: str, clip: Path | None = DOG_CLIP) -> None:
    if clip is not None:
        upload(page, clip)
    fill_question(page, question)
    page.locator("#ask").click()


def answered(page: Any, count: int = 1) -> None:
    wait_for_count(page, "#chat", "$0.0000", count, timeout=90_000)
    page.wait_for_function("() => !document.querySelector('#ask').disabled", timeout=30_000)


def path_of(page: Any) -> str:
    return page.evaluate("() => location.pathname")


def chat_text(page: Any) -> str:
    return page.locator("#chat").inner_text()


def test_each_conversation_has_an_address_kept_by_reload_and_history(
    app_server, page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size(DESKTOP)
    url = app_server(registry=scripted_registry())
    open_app(page, url)
    pick(page, "planner", SCRIPTED)
    assert path_of(page) == "/"
    ask(page, "First question?")
    answered(page)
    first = path_of(page)
    assert re.fullmatch(r"/c/[0-9a-f]{32}", first), first
    page.locator("#new-conversation").click()
    page.wait_for_function("() => location.pathname === '/'")
    ask(page, "Second question?", SPEECH_CLIP)
    answered(page)
    second = path_of(page)
    assert second != first and second.startswith("/c/")
    assert page.title().startswith("Second question")

    # Reload: the same conversation, not an empty page.
    page.reload()
    loaded(page)
    wait_for_count(page, "#chat", "Second question?", 1)
    assert path_of(page) == second and "First question?" not in chat_text(page)
    screenshot(page, tmp_path / "address-reloaded.png")

    # Back and forward walk the conversations opened in this tab.
    page.go_back()  # the new, empty conversation
    page.wait_for_function("() => location.pathname === '/'")
    page.wait_for_function("() => !document.querySelector('#chat').innerText.includes('Second')")
    page.go_back()
    page.wait_for_function("p => location.pathname === p", arg=first)
    loaded(page)
    wait_for_count(page, "#chat", "First question?", 1)
    page.go_forward()
    page.go_forward()
    page.wait_for_function("p => location.pathname === p", arg=second)
    wait_for_count(page, "#chat", "Second question?", 1)

    # Another visitor with the address: the same answer as for an id that does not exist.
    other = page.context.browser.new_context(viewport=DESKTOP)
    stranger = other.new_page()
    stranger.goto(url.rstrip("/") + first)
    stranger.get_by_text("does not exist").first.wait_for()
    stranger.wait_for_function("() => location.pathname === '/'")  # replaced, not pushed
    assert "First question?" not in stranger.locator("#chat").inner_text()
    assert stranger.locator("#conversation-list .conv-item").count() == 0
    screenshot(stranger, tmp_path / "address-stranger.png")
    other.close()


def test_spinner_titles_and_a_truthful_stop(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size(DESKTOP)
    url = app_server(registry=scripted_registry(calls=30, delay_s=3.0))
    open_app(page, url)
    pick(page, "planner", SCRIPTED)
    ask(page, "Which sound is heard in this recording?")
    wait_for_count(page, "#chat", "slow_tool", 2)
    item = page.locator("#conversation-list .conv-item").first
    item.locator(".conv-spinner").wait_for()  # answering: a spinner in the sidebar
    assert item.get_attribute("data-running") == "1"
    title = item.locator(".conv-title").inner_text().replace("(answering)", "").strip()
    assert title.startswith("Which sound is heard in this") and "dog_bark_esc50" in title
    screenshot(page, tmp_path / "spinner.png")

    page.locator("#stop").click()
    page.wait_for_function("() => document.querySelector('#chat').innerText.includes('Stopped')")
    page.wait_for_function("() => !document.querySelector('.conv-spinner')", timeout=15_000)
    open_trace(page)
    page.wait_for_function(
        "() => document.querySelector('#trace-totals').innerText.includes('status cancelled')"
    )
    totals = page.locator("#trace-totals").inner_text()
    assert "failed" not in totals
    times = page.locator("#trace-table td[data-label='time (s)']").all_inner_texts()
    assert times and all(re.fullmatch(r"\d+\.\d\d|stopped", t.strip()) for t in times), times
    assert "stopped" in [t.strip() for t in times], times  # the calls in flight say so
    screenshot(page, tmp_path / "stopped-trace.png")

    # The same question about the same recording again: a title of its own.
    page.locator("#new-conversation").click()
    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    ask(page, "Which sound is heard in this recording?")
    page.wait_for_function(
        "() => document.querySelectorAll('#conversation-list .conv-item').length === 2"
    )
    titles = page.locator("#conversation-list .conv-title").all_inner_texts()
    titles = [t.replace("(answering)", "").strip() for t in titles]
    assert len(set(titles)) == 2 and any(t.endswith("(2)") for t in titles), titles
    screenshot(page, tmp_path / "titles.png")
    # While it answers, another conversation can be opened (and this one again, followed live).
    page.locator("#conversation-list .conv-item").nth(1).click()
    page.wait_for_function("() => document.querySelector('#chat').innerText.includes('Stopped')")
    page.locator("#conversation-list .conv-item").first.click()
    page.wait_for_function("() => !document.querySelector('#chat').innerText.includes('Stopped')")
    page.locator("#stop").click()
    page.wait_for_function("() => document.querySelector('#chat').innerText.includes('Stopped')")


def test_composer_settings_drawer_strategy_and_trash(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size(DESKTOP)
    url = app_server(registry=scripted_registry())
    open_app(page, url)
    # The composer is pinned at the bottom; the chat takes the height above it.
    composer, chat = page.locator("#composer").bounding_box(), page.locator("#chat").bounding_box()
    assert composer and chat
    assert 800 - 40 < composer["y"] + composer["height"] <= 800, composer
    assert chat["height"] > 800 * 0.5 and chat["y"] + chat["height"] <= composer["y"] + 1
    for name in ("Attach a recording", "Record with the microphone", "Answer choices", "Ask"):
        assert page.get_by_role("button", name=name, exact=True).is_visible(), name
    # The settings are in a drawer, not between the input and the answer.
    assert not page.locator("#planner").is_visible()
    open_settings(page)
    drawer = page.locator("#settings-drawer").bounding_box()
    assert drawer and drawer["x"] >= 1280 - 400
    pick(page, "planner", SCRIPTED)
    pick(page, "strategy", "EChO-Agent · evidence")
    assert serious_violations(page) == []  # the drawer open
    screenshot(page, tmp_path / "settings-drawer.png")
    # Escape closes the drawer, as any dialog, and gives the focus back to its button.
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('#settings-drawer.open')")
    assert page.evaluate("() => document.activeElement.closest('#settings-btn') !== null")

    # Ask: the page does not move; the header and the composer stay where they were.
    header_y = page.locator("#header").bounding_box()["y"]
    upload(page, DOG_CLIP)
    fill_question(page, "Which sound is this?", SOUND_CHOICES)
    assert choice_chips(page) == SOUND_CHOICES
    page.locator("#question textarea").press("Enter")
    page.locator("#stop").wait_for()
    answered(page)
    assert page.evaluate("() => [scrollX, scrollY]") == [0, 0]
    assert page.locator("#header").bounding_box()["y"] == header_y
    assert page.evaluate("() => document.documentElement.scrollHeight") <= 800
    composer_after = page.locator("#composer").bounding_box()
    assert composer_after and composer_after["y"] + composer_after["height"] <= 800
    screenshot(page, tmp_path / "asked.png")
    open_trace(page)
    label = page.locator("#run-select input").input_value()
    assert label.endswith("· scripted · evidence"), label

    page.locator("#main-tabs button[role=tab]").filter(has_text="Chat").click()
    # The strategy (and planner) picked are kept across a reload.
    page.reload()
    loaded(page)
    page.wait_for_function(
        "() => document.querySelector('#strategy input').value.includes('evidence')"
    )
    assert SCRIPTED in page.locator("#planner input").input_value()

    # The chat's trash icon deletes the conversation; Undo brings it back.
    wait_for_count(page, "#chat", "Which sound is this?", 1)
    page.locator("#chat").get_by_role("button", name="Clear").click()
    page.locator("#undo").wait_for()
    page.wait_for_function("() => !document.querySelector('#conversation-list .conv-item')")
    assert path_of(page) == "/"
    screenshot(page, tmp_path / "trash-undo.png")
    page.locator("#undo").click()
    page.locator("#conversation-list .conv-item").first.wait_for()
    wait_for_count(page, "#chat", "Which sound is this?", 1)
    assert path_of(page).startswith("/c/")


def test_uploads_are_checked_at_once(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size(DESKTOP)
    url = app_server(max_upload_mb=1.0, max_audio_minutes=0.05)  # 1 MB, 3 s
    uploads: list[str] = []
    page.on("request", lambda r: uploads.append(r.url) if "/upload" in r.url else None)
    open_app(page, url)
    # Asked without a recording: refused, said in the composer and in a toast ...
    fill_question(page, "Which sound is this?")
    page.locator("#ask").click()
    page.locator("#status").get_by_text("Upload or record audio first").wait_for()
    page.locator(".toast-body").first.wait_for()
    page.wait_for_timeout(800)  # its fade-in: measured while fading, text is faint
    assert serious_violations(page) == []  # with a toast open
    screenshot(page, tmp_path / "toast.png")

    # A text file named .wav: refused at once, not at Ask; the old line is gone.
    fake = tmp_path / "notes.wav"
    fake.write_text("these are meeting notes, not audio\n" * 20)
    attach(page, fake)
    page.locator("#status").get_by_text("Not attached").wait_for()
    assert page.locator("#attachment audio").count() == 0
    assert "Upload or record audio first" not in page.locator("#status").inner_text()

    # Longer than the limit (3 s here; 30 minutes by default): refused at once.
    attach(page, DOG_CLIP)
    page.locator("#status").get_by_text("longer than the limit").wait_for()
    assert page.locator("#attachment audio").count() == 0

    # Larger than the upload limit: our own message, and nothing is sent.
    big = tmp_path / "big.wav"
    sf.write(big, np.zeros(16_000 * 40, dtype=np.float32), 16_000)  # 1.3 MB
    sent = len(uploads)
    attach(page, big)
    page.locator("#client-note").get_by_text("the limit is 1 MB").wait_for()
    assert "big.wav is 1 MB" in page.locator("#client-note").inner_text()
    page.wait_for_timeout(500)
    assert len(uploads) == sent
    assert "exceed" not in page.content()

    # A good recording clears the old lines and shows its chip with a player.
    upload(page, SPEECH_CLIP)
    assert not page.locator("#status").is_visible()
    assert page.locator("#client-note").inner_text() == ""
    assert "digit_1_george_1.wav" in page.locator("#attachment").inner_text()
    screenshot(page, tmp_path / "attached.png")
    page.locator("#remove-audio").click()
    page.wait_for_function("() => !document.querySelector('#attachment audio')")


def test_record_with_the_microphone_attaches_the_recording(app_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One tap records (Chromium's fake microphone: a beep), Stop attaches it, checked like
    an upload; a question about it is asked with it."""
    from tests.browser_kit import CHROMIUM, CHROMIUM_ARGS

    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    url = app_server(registry=scripted_registry())
    fake = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *fake])
        context = browser.new_context(viewport=DESKTOP, permissions=["microphone"])
        page = context.new_page()
        page.set_default_timeout(30_000)
        open_app(page, url)
        pick(page, "planner", SCRIPTED)
        page.locator("#settings-drawer .toggle-button").click()
        page.locator("#record").click()  # the panel opens and recording starts at once
        stop = page.locator("#mic button.stop-button").first
        stop.wait_for()
        page.wait_for_timeout(1500)
        stop.click()
        page.locator("#attachment audio").wait_for()
        assert not page.locator("#mic-panel").is_visible()
        screenshot(page, tmp_path / "recorded.png")
        fill_question(page, "What is this beep?")
        page.locator("#ask").click()
        answered(page)
        assert page.locator("#chat .message-row audio").count() == 1
        browser.close()
