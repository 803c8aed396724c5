"""Share links over real HTTP: create, read (JSON and the read-only page), revoke, replace."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from app import create_app
from backend.host.settings import Settings
from storage.models import ShareLink
from tests.servers import serve
from tests.test_isolation import SECRET_NAME, registry, visitor_a


@pytest.fixture
def app_and_base(tmp_path: Path) -> Iterator[tuple[object, str]]:
    reg, _ = registry()
    app = create_app(Settings(data_dir=tmp_path / "data", warm_up=False), registry=reg)
    with serve(app) as base:
        yield app, base


def test_share_create_read_revoke(app_and_base, tone_wav):
    app, base = app_and_base
    with httpx.Client(base_url=base, timeout=30) as a, httpx.Client(base_url=base, timeout=30) as b:
        ids = visitor_a(a, tone_wav)
        made = a.post(f"/api/conversations/{ids['conversation']}/share")
        assert made.status_code == 201
        token, url = made.json()["token"], made.json()["url"]
        assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token)  # 24 random bytes: 192 bits
        assert url == f"{base}/shared/{token}"

        shared = b.get(f"/api/shared/{token}")
        assert shared.status_code == 200
        data = shared.json()
        assert data["conversation"]["title"] == "A's secret"
        assert "owner" not in data["conversation"]  # the visitor id stays private
        runs = data["messages"][0]["runs"]
        assert runs[0]["id"] == ids["run"]
        assert [e["type"] for e in runs[0]["events"]][0] == "run_started"
        assert runs[0]["events"][-1]["type"] == "run_finished"
        assert data["audio"][0]["name"] == SECRET_NAME  # the owner's own name, shared by them
        played = b.get(data["audio"][0]["url"])
        assert played.status_code == 200 and played.content[:4] == b"RIFF"
        # ... but the share gives no access to the owner's other routes
        assert b.get(f"/api/conversations/{ids['conversation']}").status_code == 404
        assert b.get(f"/api/audio/{ids['audio']}").status_code == 404
        assert b.get(f"/api/shared/{token}/audio/{'0' * 64}").status_code == 404

        page = b.get(f"/shared/{token}", follow_redirects=False)
        assert page.status_code == 307 and page.headers["location"] == f"/view/?token={token}"
        assert b.get(page.headers["location"]).status_code == 200

        # Only the token's hash is stored.
        store = app.state.service.store
        with store.engine.connect() as conn:
            hashes = list(conn.scalars(select(ShareLink.token_hash)))
        assert hashes == [hashlib.sha256(token.encode()).hexdigest()]

        # A new link replaces the old one; revoking ends it; unknown tokens are 404 too.
        newer = a.post(f"/api/conversations/{ids['conversation']}/share").json()["token"]
        assert b.get(f"/api/shared/{token}").status_code == 404
        assert b.get(f"/api/shared/{newer}").status_code == 200
        assert a.delete(f"/api/conversations/{ids['conversation']}/share").status_code == 204
        gone = b.get(f"/api/shared/{newer}")
        assert gone.status_code == 404
        assert gone.json() == b.get("/api/shared/not-a-token").json()
        assert a.delete(f"/api/conversations/{ids['conversation']}/share").status_code == 204
        # Deleting the conversation deletes its link.
        again = a.post(f"/api/conversations/{ids['conversation']}/share").json()["token"]
        assert a.delete(f"/api/conversations/{ids['conversation']}").status_code == 204
        assert b.get(f"/api/shared/{again}").status_code == 404


def test_shared_view_handlers_show_the_conversation_read_only(app_and_base, tone_wav):
    import gradio as gr

    app, base = app_and_base
    with httpx.Client(base_url=base, timeout=30) as a:
        ids = visitor_a(a, tone_wav)
        token = a.post(f"/api/conversations/{ids['conversation']}/share").json()["token"]
    view = next(
        r.app.blocks
        for r in app.routes
        if getattr(r, "path", "") == "/view" and hasattr(getattr(r, "app", None), "blocks")
    )
    load = next(f.fn for f in view.fns.values() if f.name == "load")
    names = {f.name for f in view.fns.values()}
    assert names == {"load", "pick_run", "refresh"}  # nothing that asks, renames or deletes

    class _Query:
        def __init__(self, token: str) -> None:
            self.query_params = {"token": token}

    def shown(result: dict) -> dict:
        """The page's updates by the elem_id of their component (the state as "state")."""
        return {getattr(k, "elem_id", None) or "state": v for k, v in result.items()}

    page = shown(load(gr.Request(request=_Query(token))))
    assert "A's secret" in page["shared-heading"] and "read-only" in page["shared-heading"]
    assert any("Answer" in str(m) for m in page["shared-chat"])
    player = page["shared-audio"]
    assert f"/api/shared/{token}/audio/{ids['audio']}" in player and "<audio" in player
    assert page["shared-run-select"]["value"] == ids["run"]
    assert "<td" in page["shared-trace-table"] and "Totals" in page["shared-trace-totals"]
    assert page["state"]["token"] == token
    missing = shown(load(gr.Request(request=_Query("nope"))))
    assert "no longer works" in missing["shared-heading"] and missing["shared-chat"] == []
    assert missing["shared-content"]["visible"] is False


def test_share_and_stop_sharing_buttons(app_and_base, tone_wav):
    import gradio as gr

    app, base = app_and_base
    with httpx.Client(base_url=base, timeout=30) as a:
        ids = visitor_a(a, tone_wav)
        owner = app.state.identity.owner_from_cookie(a.cookies["audio_agent_owner"])
    handlers = {
        f.name: f.fn
        for r in app.routes
        if hasattr(getattr(r, "app", None), "blocks")
        for f in r.app.blocks.fns.values()
        if f.name in ("share", "unshare")
    }
    as_a, as_b = gr.Request(username=owner), gr.Request(username="visitor:" + "b" * 32)
    assert handlers["share"](ids["conversation"], as_b)["visible"] is False  # not B's
    link = handlers["share"](ids["conversation"], as_a)["value"]
    token = link.rsplit("/", 1)[1]
    service = app.state.service
    assert service.shared_conversation(token).id == ids["conversation"]
    handlers["unshare"](ids["conversation"], as_b)  # B cannot end A's link
    assert service.shared_conversation(token).id == ids["conversation"]
    handlers["unshare"](ids["conversation"], as_a)
    with pytest.raises(Exception, match="No such share link"):
        service.shared_conversation(token)
