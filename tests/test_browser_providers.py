"""The "Check models" button in a real browser, against the strict fake providers."""

from __future__ import annotations

from pathlib import Path

from agent.registry import Registry
from tests import fake_gemini as fg
from tests.browser_kit import open_app, open_settings
from tests.fake_openai import FakeOpenAI, ResponsesReply
from tests.provider_kit import GEMINI_KEY, KEY, KEY_ENV
from tests.servers import serve
from tests.test_doctor import MODELS, catalogue, planner_script


def test_check_models_button(app_server, page, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    openai = FakeOpenAI(key=KEY, models=MODELS, shutdown={"m": "2027-01-20"})
    openai.chat_fn = planner_script  # each planner calls the check tool, then answers
    openai.responses.extend(
        [ResponsesReply(calls=[("lookup_code", "{}")]), ResponsesReply(text="4711")]
    )
    gemini = fg.FakeGemini(models=["gemini-3.8-flash"], key=GEMINI_KEY, require_signatures=True)
    gemini.queue(
        fg.turn(fg.call("lookup_code", {}, call_id="c1", signature=b"sig")),
        fg.turn(fg.text("4711")),
    )
    with serve(openai.app) as o_url, serve(gemini.app) as g_url:
        registry = Registry(catalogue(tmp_path, f"{o_url}/v1", g_url))
        open_app(page, app_server(registry=registry))
        open_settings(page)
        page.get_by_text("Check models").first.click()
        page.locator("#check-models").click()
        result = page.locator("#check-models-result")
        result.filter(has_text="not offered to this key").wait_for(timeout=60_000)
        text = result.inner_text()
        shot = tmp_path / "check-models.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
    assert "sol" in text and "works" in text
    assert "tool round trip ok" in text  # the doctor's two-turn exchange, per planner
    assert "shuts down on 2027-01-20" in text
    assert "UNSET_KEY_FOR_DOCTOR" in text  # the entry without its key: what to set


CHAT_CATALOGUE = """
[[planner]]
name = "sol"
provider = "openai"
api = "responses"
label = "GPT (fake, organisation not verified)"
model = "gpt-6.1-sol"
base_url = "{base}/v1"
key_env = "{key_env}"
supports_temperature = false
reasoning_effort = "medium"
max_retries = 0

[[planner]]
name = "local"
provider = "openai_compatible"
label = "Local server (fake, sends no token counts)"
model = "qwen"
base_url = "{base}/v1"
key_env = "{key_env}"
max_retries = 0

[[tool]]
name = "speech_activity"
provider = "local"
"""


def test_the_chat_says_why_no_summary_no_tool_and_no_token_counts(  # type: ignore[no-untyped-def]
    app_server, page, tmp_path: Path, monkeypatch
) -> None:
    """What the providers changed is shown, not hidden: the reasoning panel says why there is
    no summary (unverified organisation), an answer made without any tool call says it is a
    text-only guess, and a server that sent no token counts is "tokens not reported"."""
    from tests.browser_kit import DOG_CLIP, fill_question, pick, upload, wait_for_count
    from tests.fake_openai import Reply, Strict

    monkeypatch.setenv(KEY_ENV, KEY)
    fake = FakeOpenAI(key=KEY, models={
        "gpt-6.1-sol": Strict(reasoning=True, refuse_summary=True),
        "qwen": Strict(flavor="vllm", usage_in_stream=False),
    })  # fmt: skip
    fake.responses.extend(
        [ResponsesReply(calls=[("speech_activity", "{}")]),
         ResponsesReply(text="<answer>A dog barks.</answer>")]
    )  # fmt: skip
    fake.chat_fn = lambda body: Reply(text="<answer>Surely a dog.</answer>")
    with serve(fake.app) as base:
        config = tmp_path / "models.toml"
        config.write_text(CHAT_CATALOGUE.format(base=base, key_env=KEY_ENV))
        open_app(page, app_server(registry=Registry(config, env={KEY_ENV: KEY})))
        pick(page, "planner", "GPT (fake, organisation not verified)")
        upload(page, DOG_CLIP)
        fill_question(page, "What animal is heard?")
        page.locator("#ask").click()
        wait_for_count(page, "#chat", "Answer:", 1)
        chat = page.locator("#chat")
        chat.locator(".thought-group .title").filter(has_text="Reasoning").first.click()
        wait_for_count(page, "#chat", "No reasoning summary", 1)
        pick(page, "planner", "Local server (fake, sends no token counts)")
        fill_question(page, "And which animal is it, really?")
        page.locator("#ask").click()
        wait_for_count(page, "#chat", "Answer:", 2)
        wait_for_count(page, "#chat", "tokens not reported", 1)
        text = chat.inner_text()
        shot = tmp_path / "provider-notices.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
    assert "must be verified" in text and text.count("No reasoning summary") == 1
    assert "No tool was called" in text and "text-only guess" in text
    assert fake.refused == ["summary_unverified"]
