"""With login on, the sidebar has an account menu: the user's name and Log out, a form that
POSTs to /logout (the session ends on the server; where the server answers only GET there,
the page falls back to visiting it). After it, the page asks for a login again. A visitor
without login has no such menu."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser_kit import loaded, screenshot, serious_violations

pytestmark = pytest.mark.browser


def test_account_menu_shows_the_user_and_logs_out(app_server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    users = tmp_path / "users.txt"
    users.write_text("alice:alice-plain-password\n")
    url = app_server(users=str(users))
    page.goto(url)
    page.wait_for_url("**/login**")
    page.locator("#username").fill("alice")
    page.locator("#password").fill("alice-plain-password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#ask")
    loaded(page)
    menu = page.locator("#account .account-menu")
    menu.wait_for()
    assert "alice" in menu.inner_text()
    menu.locator("summary").click()
    logout = page.get_by_role("button", name="Log out")
    logout.wait_for()
    assert serious_violations(page) == []
    screenshot(page, tmp_path / "account-menu.png")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.method) if r.url.endswith("/logout") else None)
    logout.click()
    page.wait_for_url("**/login**")
    assert posts and posts[0] == "POST"  # the session is ended by a POST (GET as fallback)
    page.goto(url)  # the session is gone: the page asks for a login again
    page.wait_for_url("**/login**")
    assert page.locator("#username").is_visible()


def test_a_visitor_has_no_account_menu(app_server, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(app_server())
    page.wait_for_selector("#ask")
    loaded(page)
    assert page.locator("#account .account-menu").count() == 0
