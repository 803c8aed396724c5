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
        from backend.host.settings import Settings

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


SETTINGS_IDS = ("preset", "planner", "strategy", "tools")


def open_app(page: Any, url: str) -> None:
    """Open the page and wait until its first load has answered (the sidebar's list)."""
    page.goto(url)
    page.wait_for_selector("#ask")
    loaded(page)


def loaded(page: Any) -> None:
    page.wait_for_selector("#conversation-list .conv-root:not([data-pending])", state="attached")


def attach(page: Any, path: Path) -> None:
    """Attach a file with the composer's attach button (checked at once by the server)."""
    page.locator("#composer input[type=file]").first.set_input_files(str(path))


def upload(page: Any, path: Path) -> None:
    """Attach a recording and wait until it is accepted (its chip with a player)."""
    attach(page, path)
    page.locator("#attachment audio").wait_for()


def fill_question(page: Any, question: str, choices: list[str] | None = None) -> None:
    """Type the question and add each answer choice as a chip."""
    page.locator("#question textarea").fill(question)
    if choices:
        box = page.locator("#choices input")
        if not box.is_visible():
            page.locator("#choices-btn").click()
            box.wait_for()
        for choice in choices:
            box.fill(choice)
            box.press("Enter")
        page.keyboard.press("Escape")


def choice_chips(page: Any) -> list[str]:
    """The answer choices in the composer, as their chips read."""
    return [t.strip() for t in page.locator("#choices .token").all_inner_texts()]


def open_settings(page: Any) -> None:
    """Open the settings drawer (planner, strategy, tools), if it is not open."""
    if not page.locator("#settings-drawer.open").count():
        page.locator("#settings-btn").click()
    page.locator("#settings-drawer.open").wait_for()
    page.wait_for_timeout(350)  # its slide-in


def close_settings(page: Any) -> None:
    if page.locator("#settings-drawer.open").count():
        page.locator("#settings-drawer.open .toggle-button").click()
        page.wait_for_timeout(350)


def pick(page: Any, elem_id: str, option: str) -> None:
    """Choose an option of a (single-select) Gradio dropdown by its visible text."""
    if elem_id in SETTINGS_IDS:
        open_settings(page)
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
    loaded(page)
    entry = page.locator("#conversation-list .conv-item").filter(has_text=title_part).first
    entry.wait_for()
    entry.click()


def open_panel_after_the_run(page: Any, title: Any, shown: Any, tries: int = 3) -> None:
    """Open a chat panel (click ``title``) until ``shown`` in it is visible, once the run has
    ended: the chat is drawn once more as a run ends, which closes a panel opened just before
    (seen on loaded CI machines), so it is opened again if a redraw closed it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_function("() => document.querySelector('#stop').disabled", timeout=30_000)
    for _ in range(tries):
        if not shown.is_visible():
            title.click()
        with contextlib.suppress(PlaywrightTimeout):
            shown.wait_for(timeout=10_000)
            return


def open_trace(page: Any) -> None:
    """Open the Trace tab: the run's recording, timeline and table of calls."""
    page.locator("#main-tabs button[role=tab]").filter(has_text="Trace").click()
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
    line each (rule, impact, where); an error toast on the page counts as one too (a handler
    that failed)."""
    from axe_playwright_python.sync_playwright import Axe

    errors = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="toast-body"]')]
            .filter((t) => /error/i.test(t.className)).map((t) => t.innerText.slice(0, 200))"""
    )
    results = Axe().run(page)
    found = [f"error toast: {text}" for text in errors]
    for violation in results.response["violations"]:
        if violation.get("impact") in ("serious", "critical"):
            targets = [str(node.get("target")) for node in violation["nodes"][:3]]
            found.append(f"{violation['id']} ({violation['impact']}): {', '.join(targets)}")
    return found
