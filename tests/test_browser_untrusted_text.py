"""User text stays text in the page, and refusals are shown without losing what was typed.

A loopback "pixel" server counts every request: HTML in a question, its choices, a title or a
tool's output would make the browser fetch it. It must never be asked for anything.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from tests.browser_kit import (
    DOG_CLIP,
    attach,
    choice_chips,
    fill_question,
    open_app,
    pick,
    screenshot,
    upload,
    wait_for_count,
)

pytestmark = pytest.mark.browser


class _Pixel(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.end_headers()
        self.wfile.write(b"GIF89a")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def pixel() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Pixel", (_Pixel,), {"hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()


def test_html_in_user_text_and_tool_output_is_shown_as_text(
    app_server, page, pixel, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    base, hits = pixel
    question = f'What is <img src="{base}/question" onerror="window.pwned=1"> this?'
    choices = [f"<img src={base}/choice-a>", "<b>B</b>"]
    tool_output = f'Heard: <img src="{base}/tool"> <script>window.pwned=2</script>'
    registry = Registry()
    registry.register(
        ScriptedPlanner(
            [
                ScriptedTurn(f"Thinking <img src={base}/thinking>", calls=[("html_tool", {})]),
                ScriptedTurn(f"Done <img src={base}/reason>. <answer>B</answer>"),
            ]
        ),
        kind="planner",
    )
    registry.register(ScriptedTool("html_tool", tool_output), kind="tool")
    url = app_server(registry=registry)
    open_app(page, url)
    pick(page, "planner", "Scripted planner (tests)")
    upload(page, DOG_CLIP)
    fill_question(page, question, choices)
    page.locator("#ask").click()
    chat = page.locator("#chat")
    chat.locator(".message-row").filter(has_text="Answer:").first.wait_for(timeout=60_000)
    # Open the tool panel so its output is in the page too.
    chat.locator(".thought-group .title").filter(has_text="Tool:").first.click()
    wait_for_count(page, "#chat", "Heard:", 1)
    # A title with HTML, shown in the sidebar.
    page.get_by_label("Title", exact=True).fill(f"<img src={base}/title>")
    page.keyboard.press("Enter")
    page.locator("#conversation-list").get_by_text("<img src=").first.wait_for()
    page.wait_for_timeout(500)  # time for any image request to go out
    screenshot(page, tmp_path / "escaped.png")

    text = chat.inner_text()
    assert "<img src=" in text and "window.pwned=1" in text  # shown literally
    assert "<script>" in text
    assert page.evaluate("window.pwned") is None
    assert chat.locator("img[src*='127.0.0.1']").count() == 0
    assert hits == []


def test_refusals_are_shown_and_the_question_is_kept(app_server, page) -> None:  # type: ignore[no-untyped-def]
    url = app_server()
    open_app(page, url)
    upload(page, DOG_CLIP)
    long_question = "Why? " * 1000  # 5000 characters; the limit is 4000
    fill_question(page, long_question, ["Dog", "Cat"])
    page.locator("#ask").click()
    page.get_by_text("the limit is 4,000").first.wait_for()
    assert page.locator("#question textarea").input_value() == long_question
    assert choice_chips(page) == ["Dog", "Cat"]


def test_a_huge_question_is_refused_fast_and_kept(app_server, page) -> None:  # type: ignore[no-untyped-def]
    url = app_server()
    open_app(page, url)
    huge = "x" * (5 * 1024 * 1024)  # over the page's 4 MB request limit
    page.locator("#question textarea").evaluate(
        "(el, text) => { el.value = text; el.dispatchEvent(new Event('input')); }", huge
    )
    page.locator("#ask").click()
    page.get_by_text("larger than the limit").first.wait_for()
    assert len(page.locator("#question textarea").input_value()) == len(huge)


def test_a_playlist_posing_as_audio_is_refused_with_a_reason(app_server, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    playlist = tmp_path / "song.wav"
    playlist.write_bytes(b"ffconcat version 1.0\nfile 'tests/fixtures/dog_bark_esc50.wav'\n")
    url = app_server()
    open_app(page, url)
    fill_question(page, "Which sound is this?", ["Dog", "Cat"])
    attach(page, playlist)  # refused at once, with the reason; nothing typed is lost
    page.get_by_text("concat playlist, not a recording").first.wait_for()
    assert page.locator("#attachment audio").count() == 0
    assert page.locator("#question textarea").input_value() == "Which sound is this?"
    assert choice_chips(page) == ["Dog", "Cat"]
