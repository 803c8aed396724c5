"""The "Check models" button in a real browser, against the strict fake providers."""

from __future__ import annotations

from pathlib import Path

from agent.registry import Registry
from tests import fake_gemini as fg
from tests.browser_kit import open_app
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
