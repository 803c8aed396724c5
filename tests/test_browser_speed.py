"""What the page shows before the server answers (issue 33): the question in the chat the
moment it is sent (``frontend.echo``), gone once the server's copy is drawn or the question
is refused; and each local tool's warm-up state in the settings drawer
(``frontend.tool_states``), as the warm-up goes on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent import warm_state
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTurn
from frontend.echo import ECHO_JS
from tests.browser_kit import DOG_CLIP, open_app, open_settings, upload

pytestmark = pytest.mark.browser
QUESTION = "Which sound is this?"


def quick_registry() -> Registry:
    registry = Registry()
    registry.register(ScriptedPlanner([ScriptedTurn("<answer>Dog</answer>")]), kind="planner")
    return registry


def chat_count(page: Any, text: str) -> int:
    return int(
        page.evaluate(
            "(t) => (document.querySelector('#chat')?.innerText || '').split(t).length - 1", text
        )
    )


def test_the_echo_script_compiles(page) -> None:  # type: ignore[no-untyped-def]
    """A script Gradio cannot compile leaves the whole page at "Loading..."."""
    kind = page.evaluate("(src) => typeof new Function('return ' + src)()", ECHO_JS)
    assert kind == "function"


def test_the_question_shows_at_once_and_once(app_server, page) -> None:  # type: ignore[no-untyped-def]
    url = app_server(registry=quick_registry())
    open_app(page, url)
    upload(page, DOG_CLIP)
    box = page.locator("#question textarea")
    box.fill(QUESTION)
    # The server never hears of this one: the chat shows the question all the same.
    page.route("**/gradio_api/queue/join**", lambda route: route.abort())
    box.press("Enter")
    echo = page.locator("#chat .asking-echo")
    assert echo.inner_text(timeout=5_000) == QUESTION
    assert page.locator("#chat .placeholder-content").is_hidden()  # the first screen made room
    page.unroute("**/gradio_api/queue/join**")
    open_app(page, url)

    # Refused (over the length limit): the echo goes, the first screen is back.
    box.fill("Why? " * 1000)
    box.press("Enter")
    page.get_by_text("the limit is 4,000").first.wait_for(timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#chat .asking-echo')", timeout=60_000)
    assert page.locator("#chat .placeholder-content").is_visible()

    # Heard by the server: its copy replaces the echo; the question is in the chat once.
    upload(page, DOG_CLIP)
    box.fill(QUESTION)
    box.press("Enter")
    page.locator("#chat .message-row").filter(has_text="Dog").last.wait_for(timeout=120_000)
    page.wait_for_function("() => !document.querySelector('#chat .asking-echo')", timeout=60_000)
    assert chat_count(page, QUESTION) == 1


@pytest.fixture
def fresh_warm_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[warm_state.WarmState]:
    """A warm-up state of this test's own (the server runs in this process)."""
    state = warm_state.WarmState()
    monkeypatch.setattr(warm_state, "STATE", state)
    yield state


def test_the_tool_list_shows_each_local_tools_warm_up(  # type: ignore[no-untyped-def]
    app_server, page, fresh_warm_state
) -> None:
    state = fresh_warm_state
    state.begin()
    state.set("whisper_asr", warm_state.READY)
    state.set("vad", warm_state.READY)
    state.set("music", warm_state.WARMING)
    state.set("yamnet", warm_state.FAILED, "no model file")
    open_app(page, app_server())
    open_settings(page)
    states = page.locator("#tool-states")
    states.locator('[data-tool="music_analysis"][data-state="warming up"]').wait_for(
        timeout=60_000
    )  # visible in the drawer, above the tool list
    assert states.locator('[data-tool="transcribe"][data-state="ready"]').count() == 1
    failed = states.locator('[data-tool="sound_events"][data-state="failed"]')
    assert failed.get_attribute("title") == "no model file"
    for model in warm_state.MODEL_TOOLS:
        if model != "yamnet":
            state.set(model, warm_state.READY)
    state.finish()
    states.locator('[data-tool="music_analysis"][data-state="ready"]').wait_for(
        state="attached", timeout=60_000
    )
    assert "Local models: ready" in states.inner_text()
