"""An OpenAI-compatible planner and audio tool end to end: browser -> app -> official SDK ->
a local server that speaks the OpenAI wire protocol (tests/fake_openai.py).

The catalogue is a models.toml-style file written for the test: the offline planner and a
local tool as shipped, plus an ``openai_compatible`` planner and an ``openai_compatible``
``audio_chat`` tool that both point at the fake server. In the browser the user picks that
planner and tool, uploads a real recording and asks with choices; the planner's streamed
reasoning, the tool panel with the audio model's answer, the answer and its token count show
up, and the fake received the recording as base64 wav in an ``input_audio`` part.
"""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Any

import pytest

from agent.registry import Registry
from tests.browser_kit import (
    DOG_CLIP,
    SOUND_CHOICES,
    fill_question,
    open_app,
    open_panel_after_the_run,
    open_settings,
    pick,
    screenshot,
    upload,
    wait_for_count,
)
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

pytestmark = pytest.mark.browser

KEY_ENV = "FAKE_OPENAI_API_KEY"
KEY = "sk-test-browser-0123456789"
QUESTION = "What animal is heard?"
PLANNER_LABEL = "Scripted GPT (fake OpenAI server)"
PRESET_LABEL = "Scripted cloud: the fake planner with the fake audio model"
TOOL = "fake_audio"
REASONING = "The question asks about an animal sound."
PLAN_TEXT = "I will ask the audio model what it hears."
TOOL_ANSWER = "A dog is barking loudly, twice."
FINAL_TEXT = "The audio model clearly hears a dog. <answer>Dog barking</answer>"

CATALOGUE = """
[[planner]]
name = "offline"
provider = "local"
label = "Offline rule planner (not an LLM)"

[[planner]]
name = "fake_gpt"
provider = "openai_compatible"
label = "{planner_label}"
model = "gpt-fake"
base_url = "{base}/v1"
key_env = "{key_env}"
max_retries = 0
prices = {{ input_per_mtok = 1.0, output_per_mtok = 4.0 }}

[[tool]]
name = "signal_stats"
provider = "local"

[[tool]]
name = "{tool}"
provider = "openai_compatible"
interface = "audio_chat"
label = "Scripted audio model (fake OpenAI server)"
model = "audio-fake"
base_url = "{base}/v1"
key_env = "{key_env}"
max_retries = 0
prices = {{ input_per_mtok = 2.0, audio_input_per_mtok = 10.0, output_per_mtok = 8.0 }}

[[preset]]
name = "offline"
label = "Offline default"
planner = "offline"
tools = ["signal_stats"]

[[preset]]
name = "scripted_cloud"
label = "{preset_label}"
planner = "fake_gpt"
tools = ["{tool}"]

[[preset]]
name = "closed"
label = "A preset whose planner is not configured"
planner = "gpt"
tools = ["{tool}"]
"""


def scripted(fake: FakeOpenAI):  # type: ignore[no-untyped-def]
    """Planner turn 1: reasoning, text and a call of the audio tool; the tool's (not
    streamed) reply; planner turn 2: the answer."""

    def reply(body: dict[str, Any]) -> Reply:
        if not body.get("stream"):
            # slow enough to see the planner's first turn while the tool is still running
            return Reply(text=TOOL_ANSWER, usage=(310, 12), audio_tokens=250, delay_s=1.5)
        turn = sum(1 for b in fake.chat_bodies() if b.get("stream"))
        if turn == 1:
            return Reply(
                reasoning=REASONING,
                text=PLAN_TEXT,
                tool_calls=[(TOOL, '{"question": "What animal is heard?"}')],
                usage=(180, 30),
            )
        return Reply(text=FINAL_TEXT, usage=(260, 22))

    return reply


def test_openai_compatible_planner_and_audio_tool(  # type: ignore[no-untyped-def]
    app_server, page, tmp_path: Path, monkeypatch
) -> None:
    started = time.monotonic()
    fake = FakeOpenAI()
    fake.chat_fn = scripted(fake)
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve(fake.app) as base:
        config = tmp_path / "models.toml"
        config.write_text(
            CATALOGUE.format(
                base=base,
                key_env=KEY_ENV,
                tool=TOOL,
                planner_label=PLANNER_LABEL,
                preset_label=PRESET_LABEL,
            )
        )
        registry = Registry(config, env={KEY_ENV: KEY})
        url = app_server(registry=registry)
        open_app(page, url)

        # The offline preset: the offline planner with the local tool only.
        open_settings(page)
        page.get_by_text("Tools (2 available)").click()
        tools = page.locator("#tools")
        signal, audio_model = (tools.get_by_label(re.compile(n)) for n in ("signal_stats", TOOL))
        assert signal.is_checked() and audio_model.is_checked()  # all, at first
        pick(page, "preset", "Offline default")
        page.wait_for_function("() => !document.querySelectorAll('#tools input')[1].checked")
        assert signal.is_checked() and not audio_model.is_checked()
        # A planner picked by hand: the preset no longer matches and is cleared.
        pick(page, "planner", PLANNER_LABEL)
        page.wait_for_function(
            "() => document.querySelector('#planner-note').innerText.includes('gpt-fake')"
        )
        page.wait_for_function("() => document.querySelector('#preset input').value === ''")
        # The preset sets the planner and the tools: only the audio model.
        pick(page, "preset", PRESET_LABEL)
        page.wait_for_function("() => !document.querySelector('#tools input').checked")
        assert audio_model.is_checked() and not signal.is_checked()
        assert page.locator("#planner input").input_value() == PLANNER_LABEL
        # A preset that cannot be used is not offered; it is listed with the reason.
        page.get_by_text("Unavailable planners, tools and presets").click()
        assert "gpt: not in the catalogue" in page.locator("#unavailable").inner_text()
        page.get_by_text("Unavailable planners, tools and presets").click()

        upload(page, DOG_CLIP)
        fill_question(page, QUESTION, SOUND_CHOICES)
        page.locator("#ask").click()

        # Live: the first turn's reasoning is in the chat while the audio model still works.
        page.wait_for_function(
            "t => document.querySelector('#chat').textContent.includes(t)", arg=PLAN_TEXT
        )
        chat = page.locator("#chat")
        assert "Answer:" not in chat.inner_text()
        assert page.locator("#stop").is_enabled() and page.locator("#stop").is_visible()
        assert not page.locator("#ask").is_visible()  # Stop in its place while it runs
        answer = chat.locator(".message-row").filter(has_text="Answer:").first
        answer.wait_for(timeout=30_000)
        wait_for_count(page, "#chat", " tokens (", 1, timeout=30_000)
        assert "Answer: Dog barking" in answer.inner_text()
        footnote = chat.inner_text()
        tokens = re.search(r"([\d,]+) tokens \(", footnote)
        assert tokens and int(tokens.group(1).replace(",", "")) > 0, footnote
        assert "1 tool call" in footnote and PLANNER_LABEL in footnote

        # The first reasoning panel holds the streamed reasoning and text of turn 1.
        titles = chat.locator(".thought-group .title")
        titles.filter(has_text="Reasoning").first.click()
        page.wait_for_function(
            "t => document.querySelector('#chat').innerText.includes(t)", arg=PLAN_TEXT
        )
        assert REASONING in chat.inner_text()
        # The tool panel: the model, the question asked and the audio model's answer.
        tool_title = titles.filter(has_text=f"{TOOL} · audio-fake").first
        open_panel_after_the_run(page, tool_title, chat.get_by_text(TOOL_ANSWER).first)
        assert "What animal is heard?" in chat.inner_text()
        assert chat.get_by_text(TOOL_ANSWER).first.is_visible()
        page.wait_for_timeout(500)  # the panel's opening animation
        chat.get_by_text(TOOL_ANSWER).first.scroll_into_view_if_needed()
        screenshot(page, tmp_path / "openai.png")

    # What the fake server received: planner turns streamed with the tool's schema, and the
    # recording as base64 wav in an input_audio part of the tool's request, with the key.
    bodies = fake.chat_bodies()
    planner_bodies = [b for b in bodies if b.get("stream")]
    tool_bodies = [b for b in bodies if not b.get("stream")]
    assert len(planner_bodies) == 2 and len(tool_bodies) == 1
    assert [t["function"]["name"] for t in planner_bodies[0]["tools"]] == [TOOL]
    assert planner_bodies[0]["model"] == "gpt-fake" and tool_bodies[0]["model"] == "audio-fake"
    parts = tool_bodies[0]["messages"][-1]["content"]
    assert {"type": "text", "text": "What animal is heard?"} in parts
    audio = next(p["input_audio"] for p in parts if p["type"] == "input_audio")
    assert audio["format"] == "wav"
    wav = base64.b64decode(audio["data"])
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"
    assert len(wav) > 16_000 * 2 * 4  # about 5 s of 16 kHz 16-bit audio
    assert TOOL_ANSWER in planner_bodies[1]["messages"][-1]["content"]
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in fake.requests)
    print(f"openai browser test took {time.monotonic() - started:.1f} s")


def test_compare_two_planners_side_by_side(  # type: ignore[no-untyped-def]
    app_server, page, tmp_path: Path, monkeypatch
) -> None:
    """Compare mode with two planners: the offline rule planner and the OpenAI-compatible one
    stream in two columns; the summary shows both answers, agreement and the majority."""
    fake = FakeOpenAI()
    fake.chat_fn = scripted(fake)
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve(fake.app) as base:
        config = tmp_path / "models.toml"
        catalogue = CATALOGUE.format(
            base=base, key_env=KEY_ENV, tool=TOOL, planner_label=PLANNER_LABEL,
            preset_label=PRESET_LABEL,
        )  # fmt: skip
        config.write_text(catalogue + '\n[[tool]]\nname = "sound_events"\nprovider = "local"\n')
        url = app_server(registry=Registry(config, env={KEY_ENV: KEY}))
        open_app(page, url)

        page.locator("#main-tabs button[role=tab]").filter(has_text="Compare").click()
        page.locator("#compare-planners input").click()
        page.get_by_role("option").filter(has_text="Scripted GPT").first.click()
        page.keyboard.press("Escape")
        chips = page.locator("#compare-strategies .token").filter(has_text="evidence")
        if chips.count():
            chips.first.locator(".token-remove").click()
        page.wait_for_function(
            "() => document.querySelector('#ask').innerText.includes('Compare 2 runs')"
        )
        upload(page, DOG_CLIP)
        fill_question(page, QUESTION, SOUND_CHOICES)
        page.locator("#ask").click()

        first, second = page.locator("#compare-run-1"), page.locator("#compare-run-2")
        for column in (first, second):
            column.locator(".message-row").filter(has_text="Answer:").first.wait_for(timeout=60_000)
        columns = " ".join(page.locator(f"#compare-heading-{i}").inner_text() for i in (1, 2))
        assert "Offline rule planner" in columns and "Scripted GPT" in columns
        page.wait_for_function(
            "() => /agree|majority/i.test(document.querySelector('#compare-summary').innerText)",
            timeout=30_000,
        )
        summary = page.locator("#compare-summary")
        rows = summary.locator("table tbody tr")
        assert rows.count() == 2
        cells = [[c.strip() for c in rows.nth(i).locator("td").all_inner_texts()] for i in range(2)]
        assert {row[2] for row in cells} == {"Dog barking"}
        assert "All 2 runs agree" in summary.inner_text()
        tokens = [int(row[-1].replace(",", "")) for row in cells]
        assert sorted(tokens)[0] == 0 and sorted(tokens)[1] > 0  # offline: no tokens
        screenshot(page, tmp_path / "compare-two-planners.png")
    assert len([b for b in fake.chat_bodies() if b.get("stream")]) == 2
