"""Prompt-cache reads in the browser: a planner on an OpenAI-compatible server (the fake,
tests/fake_openai.py, through the official SDK) reports cached input tokens on its second
turn, its audio tool on its call; the answer's footnote and the trace's totals say how many
input tokens were cached, and the tool's row in the trace table too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.registry import Registry
from tests.browser_kit import (
    DOG_CLIP,
    SOUND_CHOICES,
    fill_question,
    open_app,
    open_trace,
    pick,
    screenshot,
    upload,
    wait_for_count,
)
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

pytestmark = pytest.mark.browser

KEY_ENV = "FAKE_OPENAI_API_KEY"
PLANNER_LABEL = "Scripted GPT with a prompt cache (fake OpenAI server)"
CATALOGUE = """
[[planner]]
name = "offline"
provider = "local"
label = "Offline rule planner (not an LLM)"

[[planner]]
name = "cached_gpt"
provider = "openai_compatible"
label = "{label}"
model = "gpt-fake"
base_url = "{base}/v1"
key_env = "{key_env}"
max_retries = 0
prices = {{ input_per_mtok = 2.0, cache_read_per_mtok = 0.5, output_per_mtok = 8.0 }}

[[tool]]
name = "audio_model"
provider = "openai_compatible"
interface = "audio_chat"
label = "Scripted audio model (fake OpenAI server)"
model = "audio-fake"
base_url = "{base}/v1"
key_env = "{key_env}"
max_retries = 0
prices = {{ input_per_mtok = 2.0, cache_read_per_mtok = 0.5, output_per_mtok = 8.0 }}
"""


def scripted(fake: FakeOpenAI):  # type: ignore[no-untyped-def]
    def reply(body: dict[str, Any]) -> Reply:
        if not body.get("stream"):  # the audio tool
            return Reply(text="A dog barks.", usage=(2_000, 12), cached_tokens=1_536)
        if sum(1 for b in fake.chat_bodies() if b.get("stream")) == 1:
            return Reply(tool_calls=[("audio_model", '{"question": "Which animal?"}')],
                         usage=(1_500, 30))  # fmt: skip
        return Reply(text="<answer>Dog barking</answer>", usage=(1_700, 10), cached_tokens=1_280)

    return reply


def test_cached_input_tokens_in_footnote_and_trace(  # type: ignore[no-untyped-def]
    app_server, page, tmp_path: Path, monkeypatch
) -> None:
    fake = FakeOpenAI()
    fake.chat_fn = scripted(fake)
    monkeypatch.setenv(KEY_ENV, "sk-test-cache-0123456789")
    with serve(fake.app) as base:
        config = tmp_path / "models.toml"
        config.write_text(CATALOGUE.format(base=base, key_env=KEY_ENV, label=PLANNER_LABEL))
        registry = Registry(config, env={KEY_ENV: "sk-test-cache-0123456789"})
        open_app(page, app_server(registry=registry))
        pick(page, "planner", PLANNER_LABEL)
        upload(page, DOG_CLIP)
        fill_question(page, "Which animal is heard?", SOUND_CHOICES)
        page.locator("#ask").click()
        wait_for_count(page, "#chat", " tokens (", 1, timeout=60_000)
        chat = page.locator("#chat").inner_text()
        # the planner's two turns and the tool's call: 3,200 + 2,000 in, 1,280 + 1,536 cached
        assert "5,200 in, 2,816 cached · 52 out" in chat, chat
        open_trace(page)
        assert "5,200 in, 2,816 cached" in page.locator("#trace-totals").inner_text()
        assert "2,012 (1,536 cached)" in page.locator("#trace-table").inner_text()
        page.locator("#trace-totals").scroll_into_view_if_needed()
        screenshot(page, tmp_path / "cached_tokens.png", full_page=True)
