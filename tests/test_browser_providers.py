"""The "Check models" button in a real browser, against the strict fake providers."""

from __future__ import annotations

from pathlib import Path

from agent.registry import Registry
from tests import fake_gemini as fg
from tests.browser_kit import open_app, open_settings
from tests.fake_openai import FakeOpenAI, Reply, Strict
from tests.servers import serve
from tests.test_providers import GEMINI_KEY, KEY, doctor_catalogue


def test_check_models_button(app_server, page, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    openai = FakeOpenAI(key=KEY, models={"reasoner": Strict(reasoning=True), "m": Strict()},
                        shutdown={"m": "2027-01-20"})  # fmt: skip
    openai.chat.extend([Reply(text="OK"), Reply(text="A tone.")])
    gemini = fg.FakeGemini(models=["gemini-3.8-flash"], key=GEMINI_KEY)
    gemini.queue(fg.turn(fg.text("OK")))
    with serve(openai.app) as o_url, serve(gemini.app) as g_url:
        registry = Registry(doctor_catalogue(tmp_path, f"{o_url}/v1", g_url))
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
    assert "shuts down on 2027-01-20" in text
    assert "UNSET_KEY_FOR_DOCTOR" in text  # the entry without its key: what to set
