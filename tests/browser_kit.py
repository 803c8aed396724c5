"""What the browser tests share: the app on a free port, headless Chromium, page helpers.

Loaded as a pytest plugin for every test run (``-p tests.browser_kit`` in pyproject.toml):
it provides the ``page`` fixture and the ``app_server`` fixture factory. Screenshots go to
each test's tmp_path; their paths are printed (see them with ``-s``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import serve

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
FIXTURES = Path(__file__).parent / "fixtures"
DOG_CLIP = FIXTURES / "dog_bark_esc50.wav"
SOUND_CHOICES = ["Dog barking", "Rain", "Church bells", "Siren"]


@pytest.fixture
def app_server(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start the real app (API + UI) on a free port: ``app_server(registry=...)`` -> its URL.

    The data directory is tmp_path/data; the models are not warmed up."""
    stack = contextlib.ExitStack()

    def start(registry: Any = None, **settings: Any) -> str:
        import app
        from backend.settings import Settings

        config = Settings(data_dir=tmp_path / "data", warm_up=False, **settings)
        base = stack.enter_context(serve(app.create_app(config, registry=registry)))
        return base + "/"

    with stack:
        yield start


def _chromium_page(viewport: dict[str, int]) -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=viewport)
        page.set_default_timeout(30_000)
        yield page
        browser.close()


@pytest.fixture
def page() -> Iterator[Any]:
    """A fresh Chromium page at 1280x900 (skips when Chromium or Playwright is missing)."""
    yield from _chromium_page(VIEWPORT)


@pytest.fixture
def phone_page() -> Iterator[Any]:
    """A fresh Chromium page the size of a phone, 390x844."""
    yield from _chromium_page(PHONE)


# ------------------------------------------------------------------------------ helpers


def open_app(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#ask")


def upload(page: Any, path: Path) -> None:
    page.locator("#audio-input input[type=file]").set_input_files(str(path))
    page.locator("#audio-input [data-testid^=audio-player]").wait_for(state="attached")


def fill_question(page: Any, question: str, choices: list[str] | None = None) -> None:
    page.locator("#question textarea").fill(question)
    box = page.locator("#choices textarea")
    if choices and not box.is_visible():
        page.locator("#choices-box").get_by_text("Answer choices (optional)").click()
        box.wait_for()
    if box.is_visible():
        box.fill("\n".join(choices or []))


def pick(page: Any, elem_id: str, option: str) -> None:
    """Choose an option of a (single-select) Gradio dropdown by its visible text."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option).first.click()


def count_in(page: Any, selector: str, text: str) -> int:
    return page.evaluate(
        "([sel, text]) => (document.querySelector(sel)?.innerText || '').split(text).length - 1",
        [selector, text],
    )


def wait_for_count(page: Any, selector: str, text: str, count: int, timeout: int = 60_000) -> None:
    """Wait until ``text`` occurs at least ``count`` times in the element's visible text."""
    page.wait_for_function(
        "([sel, text, n]) => ((document.querySelector(sel)?.innerText || '')"
        ".split(text).length - 1) >= n",
        arg=[selector, text, count],
        timeout=timeout,
    )


def reopen(page: Any, url: str, title_part: str) -> None:
    """Reload the page and open a conversation from the sidebar."""
    page.goto(url)
    page.wait_for_selector("#ask")
    entry = page.locator("#conversation-list .conv-item").filter(has_text=title_part).first
    entry.wait_for()
    entry.click()


def open_trace(page: Any) -> None:
    """Open the trace accordion (if it is not open already)."""
    if not page.locator("#trace-table").is_visible():
        page.locator("#trace").get_by_text("Trace and timeline of an answer").click()
    page.locator("#trace-table").wait_for()


def screenshot(page: Any, path: Path, *, full_page: bool = False) -> Path:
    """A screenshot in the test's folder, copied to $UI_SHOTS_DIR when that is set (to keep
    the pictures of a run for looking at them)."""
    page.screenshot(path=str(path), full_page=full_page)
    print(f"\nscreenshot: {path}")
    target = os.environ.get("UI_SHOTS_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)
    return path


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical accessibility violations on the page as it is now, one
    line each (rule, impact, where)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") in ("serious", "critical"):
            targets = [str(node.get("target")) for node in violation["nodes"][:3]]
            found.append(f"{violation['id']} ({violation['impact']}): {', '.join(targets)}")
    return found
