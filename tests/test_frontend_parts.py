"""The small pure parts of the page: the address of a conversation (``/c/{id}``), the sidebar's
spinners and open conversation, the trace table that becomes cards on a phone, the one
throttled loop, a stopped run told truthfully, the account menu, the bundled examples, the
recording as a player in its question."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from agent import events as ev
from agent.audio import load_samples
from frontend import history, render, routes, throttle, trace_calls
from frontend.conversations import account_html
from frontend.examples import EXAMPLES, FOLDER
from frontend.trace_html import trace_table
from storage.schemas import ConversationInfo
from tests.test_render import Clock, started

CID = "0123456789abcdef0123456789abcdef"


def test_a_conversation_has_an_address() -> None:
    assert routes.conversation_path(CID) == f"/c/{CID}"
    assert routes.conversation_path(None) == "/"
    assert routes.conversation_id_of(f"/c/{CID}") == CID
    assert routes.conversation_id_of(f"/c/{CID}/") == CID
    for other in ("/", "/c/", "/c/a/b", "/c/assets/index.js", "/x/abc", "/c/manifest.json", None):
        assert routes.conversation_id_of(other) is None


async def test_conversation_paths_serve_the_page_and_its_files() -> None:
    seen: list[str] = []

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        seen.append(scope["path"])

    paths = routes.ConversationPaths(app)
    for path, root in ((f"/c/{CID}", ""), ("/c/assets/index.js", ""), ("/api/health", ""),
                       (f"/app/c/{CID}", "/app"), ("/app/c/assets/x.css", "/app")):  # fmt: skip
        await paths({"type": "http", "path": path, "root_path": root}, None, None)
    assert seen == ["/", "/assets/index.js", "/api/health", "/app/", "/app/assets/x.css"]


def test_the_page_answers_at_a_conversation_address(tmp_path: Path) -> None:
    from app import create_app
    from backend.host.settings import Settings
    from tests.servers import serve

    app = create_app(Settings(data_dir=tmp_path, warm_up=False))
    with serve(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        home = http.get("/")
        page = http.get(f"/c/{CID}")
        assert page.status_code == 200 and "gradio_config" in page.text
        # what the page then fetches relative to that address is the root's own file
        script = next(p for p in page.text.split('"') if p.startswith("./assets/") and
                      p.endswith(".js"))  # fmt: skip
        assert http.get(f"/c/{script[2:]}").status_code == 200
        assert home.status_code == 200


def test_the_sidebar_shows_what_runs_and_what_is_open() -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    convs = [ConversationInfo(id=i, owner="o", title=f"T{i}", created_at=now, updated_at=now)
             for i in ("a", "b")]  # fmt: skip
    entries = history.entries(convs, {"a": ["dog.wav"]}, running={"b"})
    assert [e.running for e in entries] == [False, True]
    text = history.history_html(entries, "a", now)
    assert 'data-open="a"' in text and "data-missing" not in text and "data-pending" not in text
    assert text.count("conv-spinner") == 1 and "(answering)" in text
    assert 'data-running="1"' in text.split('id="conv-b"')[1].split(">")[0]
    assert 'data-missing="1"' in history.history_html(entries, None, now, missing=True)
    assert 'data-pending="1"' in history.history_html([], pending=True)


def test_the_trace_table_escapes_and_labels_every_cell() -> None:
    rows = [["transcribe", "<b>m</b>", "stopped", "", "", "", ""]]
    table = trace_table(rows)
    assert "<b>m</b>" not in table and "&lt;b&gt;m&lt;/b&gt;" in table
    assert 'data-label="model"' in table and 'class="trace-stopped"' in table
    assert "<thead>" in table and "<caption" in table
    assert "No tool calls yet" in trace_table([])


def test_a_stopped_run_reads_stopped_not_running_or_failed() -> None:
    e = Clock()
    call = e(ev.ToolCall, call_id="c1", tool="transcribe", arguments={})
    events = [started(e), call]
    assert trace_calls.trace_rows(events)[0][2] == "running…"
    events.append(e(ev.RunFailed, kind="cancelled", message="Stopped by the user."))
    assert trace_calls.trace_rows(events)[0][2] == "stopped"
    totals = trace_calls.trace_totals(events)
    assert "status cancelled" in totals and "failed" not in totals
    panel = next(m for m in render.render_run(events) if "Tool:" in m["metadata"]["title"]
                 if m.get("metadata"))  # fmt: skip
    assert panel["content"].endswith("**Stopped:** the run was stopped before this call finished.")
    assert panel["metadata"]["log"] == "stopped"
    # a run that ended otherwise says "no result", never "stopped"
    other = [started(e), call, e(ev.RunFailed, kind="planner_error", message="x")]
    assert trace_calls.trace_rows(other)[0][2] == "no result"
    assert "failed (planner" in trace_calls.trace_totals(other)


async def test_one_loop_draws_structure_at_once_and_text_at_a_pace() -> None:
    e = Clock()

    async def stream():  # type: ignore[no-untyped-def]
        yield started(e)
        for _ in range(5):
            yield e(ev.PlannerDelta, turn=1, text="a")
        await asyncio.sleep(0.06)
        yield e(ev.PlannerDelta, turn=1, text="b")
        yield e(ev.ToolCall, call_id="c", tool="t", arguments={})

    async def paced():  # type: ignore[no-untyped-def]
        yield started(e)
        await asyncio.sleep(0.01)
        for _ in range(5):
            yield e(ev.PlannerDelta, turn=1, text="a")
            await asyncio.sleep(0)
        await asyncio.sleep(0.06)
        yield e(ev.PlannerDelta, turn=1, text="b")
        await asyncio.sleep(0.01)
        yield e(ev.ToolCall, call_id="c", tool="t", arguments={})

    batches = [b async for b in throttle.batches(paced(), every_s=0.05)]
    kinds = [[x.type for x in batch] for batch in batches]
    assert kinds[0] == ["run_started"]  # structure: at once
    assert kinds[1] == ["planner_delta"] * 6  # text: held until the pace allows
    assert kinds[2] == ["tool_call"]
    assert sum(len(b) for b in batches) == 8
    # What has arrived together is drawn once: a burst (a cached run) is one update.
    batches = [b async for b in throttle.batches(stream(), every_s=0.05)]
    kinds = [[x.type for x in batch] for batch in batches]
    assert kinds[0] == ["run_started"] + ["planner_delta"] * 5
    assert sum(len(b) for b in batches) == 8 and len(batches) <= 2


async def test_a_burst_of_events_is_one_update_and_an_error_comes_after_them() -> None:
    e = Clock()

    async def cached_run():  # type: ignore[no-untyped-def]
        yield started(e)
        for n in range(10):
            yield e(ev.ToolCall, call_id=f"c{n}", tool="t", arguments={})
        raise RuntimeError("the follow broke")

    seen: list[list[str]] = []
    with pytest.raises(RuntimeError, match="the follow broke"):
        async for batch in throttle.batches(cached_run()):
            seen.append([x.type for x in batch])
    assert seen == [["run_started"] + ["tool_call"] * 10]


def test_the_account_menu_is_for_logged_in_users_only() -> None:
    menu = account_html("user:al<i>ce", "/root")
    assert "al&lt;i&gt;ce" in menu and "<i>" not in menu
    assert 'method="post" action="/root/logout"' in menu and ">Log out</button>" in menu
    assert account_html("visitor:" + "a" * 32) == ""
    assert account_html("hf:someone") == ""  # Hugging Face's own button signs out


def test_the_examples_are_small_real_recordings_with_their_provenance() -> None:
    provenance = (FOLDER / "PROVENANCE.md").read_text()
    assert 4 <= len(EXAMPLES) <= 5
    for example in EXAMPLES:
        assert example.path.stat().st_size < 200_000, example.file
        seconds = len(load_samples(example.path)) / 16_000
        assert 1.0 < seconds < 20.0, (example.file, seconds)
        assert f"`{example.file}`" in provenance
        assert example.question.endswith("?")
        assert not example.choices or len(example.choices) >= 2
    rows = [line for line in provenance.splitlines() if line.startswith("| `")]
    assert len(rows) == len(EXAMPLES)
    for row in rows:  # licences that let anyone use the app: attribution, no "non-commercial"
        licence = row.rstrip(" |").split(" | ")[-1]
        assert licence.startswith("CC BY") and "NC" not in licence.split("(")[0], row


def test_a_new_recording_is_a_player_in_its_question() -> None:
    message = render.render_user("What?", (), "dog.wav (5.0 s)", "/api/audio/abc")
    assert '<audio class="bubble-audio" controls' in message["content"]
    assert 'src="/api/audio/abc"' in message["content"]
    assert 'aria-label="Play dog.wav (5.0 s)"' in message["content"]
    hostile = render.render_user("x", (), '"><img src=x>', '/a"b')
    assert 'aria-label="Play &quot;&gt;&lt;img src=x&gt;"' in hostile["content"]
    assert 'src="/a&quot;b"' in hostile["content"] and "\\<img" in hostile["content"]
    assert "<audio" not in render.render_user("x", (), "dog.wav")["content"]


@pytest.mark.parametrize("name", [e.file for e in EXAMPLES])
def test_each_example_file_is_listed_once(name: str) -> None:
    assert (FOLDER / name).is_file()
    assert Path(FOLDER / "PROVENANCE.md").read_text().count(f"`{name}`") == 1


def test_web_search_is_offered_but_not_ticked_for_a_new_question() -> None:
    from agent.registry import Registry
    from frontend.catalogue import Catalogue

    online = Catalogue.of(Registry(env={"AUDIO_AGENT_NETWORK": "on"}).catalogue())
    offered = {t["name"] for t in online.available_tools}
    assert "web_search" in offered and "transcribe" in offered
    assert "web_search" not in online.default_tools and "transcribe" in online.default_tools
