"""Data handling of the whole app, on SQLite and PostgreSQL: the app served on a PostgreSQL
URL, deleting a conversation with its files, and retention. Real files in a temp data dir,
real HTTP, real Gradio cache functions."""

from __future__ import annotations

import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from gradio.processing_utils import save_file_to_cache
from sqlalchemy import update

from agent.events import parse_event
from agent.tools.base import ToolResult
from app import create_app
from backend.host.settings import Settings
from frontend import files
from storage.models import DEFAULT_OWNER, Conversation
from tests.servers import serve
from tests.sse import read_sse
from tests.test_api import scripted_registry


@pytest.fixture
def temp_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Gradio's cache and the UI's temp files inside this test's folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp / "gradio"))
    return tmp


def tone(path: Path, hz: float, seconds: float = 1.0) -> Path:
    t = np.arange(int(16_000 * seconds)) / 16_000
    sf.write(path, 0.3 * np.sin(2 * np.pi * hz * t), 16_000)
    return path


def ask(http: httpx.Client, conversation_id: str, body: dict) -> list[dict]:
    with http.stream("POST", f"/api/conversations/{conversation_id}/ask", json=body) as resp:
        assert resp.status_code == 200, resp.read()
        return read_sse(resp)


def test_app_serves_from_a_postgresql_url(
    pg_url: str, tmp_path: Path, tone_wav: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUDIO_AGENT_DB_URL", pg_url)
    monkeypatch.setenv("AUDIO_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AUDIO_AGENT_WARM_UP", "0")
    # a deployment that allows long questions: the database must take them
    monkeypatch.setenv("AUDIO_AGENT_MAX_QUESTION_CHARS", "1000000")
    monkeypatch.setenv("AUDIO_AGENT_MAX_JSON_KB", "2048")
    settings = Settings.from_env()
    assert settings.database_url.startswith("postgresql+psycopg://")
    question = "What animal\x00 is this? " + "very long " * 50_000  # NUL and 500 kB
    registry, _ = scripted_registry()
    app = create_app(settings, registry=registry, ui=False)
    assert app.state.service.store.engine.dialect.name == "postgresql"
    with serve(app) as base, httpx.Client(base_url=base, timeout=60) as http:
        conv = http.post("/api/conversations", json={}).json()
        with open(tone_wav, "rb") as fh:
            audio = http.post("/api/audio", files={"file": ("tone\x00.wav", fh)}).json()
        raw = ask(
            http,
            conv["id"],
            {"question": question, "choices": ["Cat", "Dog\x00"], "audio_id": audio["id"],
             "planner": "scripted", "tools": ["fake_events"]},
        )  # fmt: skip
        streamed = [parse_event(json.loads(e["data"])) for e in raw]
        assert streamed[-1].type == "run_finished"
        detail = http.get(f"/api/conversations/{conv['id']}").json()
        user = detail["messages"][0]
        assert user["text"] == question.strip() and user["choices"] == ["Cat", "Dog\x00"]
        assert detail["messages"][1]["role"] == "assistant"
        run_id = streamed[0].run_id
        stored = http.get(f"/api/runs/{run_id}").json()
        assert [parse_event(e) for e in stored["events"]] == streamed
        assert stored["run"]["created_at"].endswith(("+00:00", "Z"))
        export = http.get(f"/api/conversations/{conv['id']}/export").json()
        assert export["messages"][0]["text"] == question.strip()
        renamed = http.patch(f"/api/conversations/{conv['id']}", json={"title": "a\x00b"})
        assert renamed.json()["title"] == "a\x00b"
        visitor = dict(http.cookies)  # the same browser comes back after the restart
    app.state.service.store.close()

    # a restart on the same database finds everything
    registry, _ = scripted_registry()
    again = create_app(Settings.from_env(), registry=registry, ui=False)
    with serve(again) as base, httpx.Client(base_url=base, timeout=60, cookies=visitor) as http:
        assert [c["title"] for c in http.get("/api/conversations").json()] == ["a\x00b"]
        assert http.delete(f"/api/conversations/{conv['id']}").status_code == 204
        assert http.get("/api/conversations").json() == []
    again.state.service.store.close()


def test_deleting_a_conversation_deletes_what_only_it_used(
    any_db_url: str, tmp_path: Path, temp_dirs: Path
) -> None:
    shared_wav = tone(tmp_path / "shared.wav", 440)
    own_wav = tone(tmp_path / "own.wav", 880)
    settings = Settings(data_dir=tmp_path / "data", db_url=any_db_url, warm_up=False)
    registry, _ = scripted_registry()
    app = create_app(settings, registry=registry, ui=True)
    service = app.state.service
    assert files.forget in service.deletion_hooks  # the UI registered its cleanup
    with serve(app) as base, httpx.Client(base_url=base, timeout=60) as http:

        def upload(path: Path) -> str:
            with open(path, "rb") as fh:
                return http.post("/api/audio", files={"file": (path.name, fh)}).json()["id"]

        shared, own = upload(shared_wav), upload(own_wav)
        mine = http.post("/api/conversations", json={}).json()["id"]
        body = {"planner": "scripted", "tools": ["fake_events"]}
        ask(http, mine, {**body, "question": "What is it?", "audio_id": shared})
        ask(http, mine, {**body, "question": "And this?", "audio_id": own})
        # another owner's conversation uses the shared recording too
        theirs = service.store.conversations.create_conversation(owner="someone-else")
        service.store.messages.add_message(theirs.id, "user", "Theirs?", audio_id=shared)

        # cached tool results for both recordings (as tools would store them)
        service.cache.put("s" * 64, "fake_events", shared, ToolResult(output="shared"))
        service.cache.put("o" * 64, "fake_events", own, ToolResult(output="own"))
        # the UI's temporary files: an export as earlier versions of the page wrote it (the
        # page now links to the API's export, made when clicked), and Gradio's copies of it
        # and of the visitor's uploads (save_file_to_cache is what Gradio itself calls; the
        # page's player streams the recording from /api/audio and makes no copy)
        gradio_dir = files.gradio_cache()
        for wav in (shared_wav, own_wav):  # the uploads through the page
            save_file_to_cache(wav, str(gradio_dir))
        export = files.temp_dir("exports", mine) / f"What-is-it-{mine[:8]}.json"
        export.write_text(http.get(f"/api/conversations/{mine}/export").text)
        gradio_export = Path(save_file_to_cache(export, str(gradio_dir)))
        own_info = service.store.recordings.get_audio(own)
        own_folder = Path(own_info.original_path).parent
        own_gradio = files.gradio_copy_dir(Path(own_info.original_path))
        shared_gradio = files.gradio_copy_dir(
            Path(service.store.recordings.get_audio(shared).original_path)
        )
        assert own_folder.is_dir() and export.is_file()
        assert [p.name for p in own_gradio.iterdir()] == ["own.wav"]
        assert gradio_export.is_file() and shared_gradio.is_dir()

        assert http.delete(f"/api/conversations/{mine}").status_code == 204

        # the recording only this conversation used is gone, everywhere
        assert service.store.recordings.get_audio(own) is None
        assert service.audio.get(own) is None and not own_folder.exists()
        assert service.cache.get("o" * 64) is None
        assert not own_gradio.exists()
        assert not export.exists() and not files.export_dir(mine).exists()
        assert not gradio_export.exists()
        assert http.get(f"/api/audio/{own}").status_code == 404
        # the shared one stays for the other owner, with its cache and copies
        assert service.store.recordings.get_audio(shared) is not None
        assert service.audio.get(shared) is not None
        assert service.cache.get("s" * 64) is not None
        assert shared_gradio.is_dir()
        # ... but not for this visitor: their reference went with their last use of it
        assert http.get(f"/api/audio/{shared}").status_code == 404

        # deleting the last conversation that uses it removes it too
        purged = service.delete_conversation(theirs.id)
        assert [a.id for a in purged.audio] == [shared]
        assert purged.cache_entries == 2  # ours and the one the run's fake_events call stored
        assert (
            service.audio.get(shared) is None and service.store.recordings.get_audio(shared) is None
        )
        assert not shared_gradio.exists()
        assert service.delete_conversation(theirs.id) is None
        assert not any((settings.data_dir / "audio").rglob("*.wav"))
    service.store.close()


def backdate(service, conversation_id: str, days: float) -> None:  # type: ignore[no-untyped-def]
    when = datetime.now(UTC) - timedelta(days=days)
    with service.store.engine.begin() as conn:
        conn.execute(
            update(Conversation).where(Conversation.id == conversation_id).values(updated_at=when)
        )


def test_retention_prunes_untouched_conversations(
    any_db_url: str, tmp_path: Path, tone_wav: Path, temp_dirs: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", db_url=any_db_url, warm_up=False, retention_days=30
    )
    registry, _ = scripted_registry()
    app = create_app(settings, registry=registry, ui=False)
    service = app.state.service
    app.state.retention.stop()  # driven by hand below; the thread is tested next
    audio = service.upload_file(tone_wav, owner=DEFAULT_OWNER)
    old = service.store.conversations.create_conversation("old")
    service.store.messages.add_message(old.id, "user", "old?", audio_id=audio.id)
    recent = service.store.conversations.create_conversation("recent")
    busy = service.store.conversations.create_conversation("busy")
    message = service.store.messages.add_message(busy.id, "user", "still running?")
    service.store.runs.create_run("b" * 32, message.id, "scripted", "react", [])
    backdate(service, old.id, 31)
    backdate(service, recent.id, 29)
    backdate(service, busy.id, 40)

    assert service.prune_stale() == [old.id]
    assert {c.title for c in service.store.conversations.list_conversations()} == {"recent", "busy"}
    assert (
        service.store.recordings.get_audio(audio.id) is None and service.audio.get(audio.id) is None
    )
    assert service.prune_stale() == []
    # a day later 'recent' is over the limit
    assert service.prune_stale(now=datetime.now(UTC) + timedelta(days=2)) == [recent.id]
    service.settings.retention_days = None
    assert service.prune_stale(now=datetime.now(UTC) + timedelta(days=400)) == []
    service.close()  # not served, so no lifespan does it
    service.store.close()


def test_retention_thread_prunes_at_start_up_and_periodically(
    any_db_url: str, tmp_path: Path, temp_dirs: Path
) -> None:
    from storage import Store

    settings = Settings(
        data_dir=tmp_path / "data",
        db_url=any_db_url,
        warm_up=False,
        retention_days=1,
        retention_every_s=0.05,
    )
    store = Store.open(settings.database_url)
    stale = store.conversations.create_conversation("stale")
    with store.engine.begin() as conn:
        conn.execute(
            update(Conversation)
            .where(Conversation.id == stale.id)
            .values(updated_at=datetime.now(UTC) - timedelta(days=2))
        )
    store.close()
    registry, _ = scripted_registry()
    app = create_app(settings, registry=registry, ui=False)
    service, retention = app.state.service, app.state.retention
    try:
        deadline = time.monotonic() + 20
        while service.store.conversations.get_conversation(stale.id) is not None:
            assert time.monotonic() < deadline, "not pruned at start-up"
            time.sleep(0.02)
        later = service.store.conversations.create_conversation("later")
        backdate(service, later.id, 3)
        rounds = retention.rounds
        while service.store.conversations.get_conversation(later.id) is not None:
            assert time.monotonic() < deadline, "not pruned periodically"
            time.sleep(0.02)
        # A round counts once it has finished (uploads and login sessions come after the
        # conversations), so the one that pruned ``later`` may still be running here.
        while retention.rounds <= rounds:
            assert time.monotonic() < deadline, "the pruning round never finished"
            time.sleep(0.02)
    finally:
        retention.stop()
        service.close()  # not served, so no lifespan does it
        service.store.close()
    assert not retention._thread.is_alive()


def test_retention_setting_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUDIO_AGENT_RETENTION_DAYS", raising=False)
    assert Settings.from_env().retention_days is None
    monkeypatch.setenv("AUDIO_AGENT_RETENTION_DAYS", "7.5")
    assert Settings.from_env().retention_days == 7.5
    for bad in ("soon", "0", "-1"):
        monkeypatch.setenv("AUDIO_AGENT_RETENTION_DAYS", bad)
        with pytest.raises(ValueError, match="AUDIO_AGENT_RETENTION_DAYS"):
            Settings.from_env()
