"""The real app in headless Chromium: upload, ask with choices, watch the trace, reopen it.

Runs the offline planner and the real local tools on a real recording (ESC-50 dog bark).
Screenshots go to the test's tmp_path; their paths are printed (see them with ``-s``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
CLIP = Path(__file__).parent / "fixtures" / "dog_bark_esc50.wav"
QUESTION = "Which sound is this?"
CHOICES = ["Dog barking", "Rain", "Church bells", "Siren"]
FOLLOW_UP = "Is anyone speaking?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    import uvicorn

    import app
    from backend.settings import Settings

    port = _free_port()
    settings = Settings(data_dir=tmp_path / "data", warm_up=False, port=port)
    config = uvicorn.Config(
        app.create_app(settings), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True, name="app-under-test")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def page() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        yield page
        browser.close()


def test_ask_watch_and_reopen(app_url: str, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    page.goto(app_url)
    page.wait_for_selector("#ask")
    assert "Ask about audio" in page.locator("#header").inner_text()
    assert "not an LLM" in page.locator("#planner-note").inner_text()

    # Upload, question, choices, Ask.
    page.locator("#audio-input input[type=file]").set_input_files(str(CLIP))
    page.locator("#audio-input [data-testid^=audio-player]").wait_for(state="attached")
    page.locator("#question textarea").fill(QUESTION)
    page.locator("#choices textarea").fill("\n".join(CHOICES))
    page.locator("#ask").click()

    chat = page.locator("#chat")
    tool_panel = chat.locator(".thought-group .title").filter(has_text="🔧").first
    tool_panel.wait_for(timeout=60_000)
    answer = chat.locator(".message-row").filter(has_text="Answer:").first
    answer.wait_for(timeout=75_000)
    page.wait_for_function(
        "() => document.querySelector('#chat').innerText.includes('$0.0000')", timeout=60_000
    )
    text = answer.inner_text()
    chosen = text.split("Answer:", 1)[1].strip().splitlines()[0].strip()
    assert chosen in CHOICES, text
    assert "tool call" in chat.inner_text()
    assert page.locator("#question textarea").input_value() == ""
    shot = tmp_path / "answer.png"
    page.screenshot(path=str(shot))
    print(f"\nscreenshot after the answer: {shot}")

    # Open a tool panel: its arguments and output (or its error) are there.
    tool_panel.click()
    assert "Arguments" in chat.inner_text()

    # The trace table of that answer.
    page.locator("#trace").get_by_text("Trace of an answer").click()
    table = page.locator("#trace-table")
    table.wait_for()
    assert table.get_by_text("yamnet-w8a8").count() or table.get_by_text("sound_events").count()
    assert "Totals" in page.locator("#trace-totals").inner_text()

    # A follow-up about the same audio, without uploading again.
    page.locator("#question textarea").fill(FOLLOW_UP)
    page.locator("#ask").click()
    page.wait_for_function(
        "() => (document.querySelector('#chat').innerText.match(/\\$0\\.0000/g) || []).length >= 2",
        timeout=60_000,
    )
    assert "Upload or record audio first" not in page.content()

    # After a reload the conversation is in the sidebar; opening it rebuilds the trace.
    page.reload()
    page.wait_for_selector("#ask")
    entry = page.locator("#conversation-list label").filter(has_text=QUESTION)
    entry.wait_for()
    entry.click()
    chat.locator(".thought-group .title").filter(has_text="🔧").first.wait_for()
    page.wait_for_function(
        "() => (document.querySelector('#chat').innerText.match(/\\$0\\.0000/g) || []).length >= 2"
    )
    reopened = chat.inner_text()
    assert QUESTION in reopened and FOLLOW_UP in reopened
    assert chosen in reopened
    assert page.locator("#export-json").is_enabled()
    shot = tmp_path / "reopened.png"
    page.screenshot(path=str(shot))
    print(f"screenshot of the reopened conversation: {shot}")
    print(f"browser test took {time.monotonic() - started:.1f} s")
