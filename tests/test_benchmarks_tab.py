"""The Benchmarks tab: who sees which benchmark runs, and in Chromium, a configuration's point
clicked in the figure shows its questions, a question clicked opens its trace, and a report's
link opens the tab on that trace."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from backend.access.auth import SCOPE_KEY
from backend.host.settings import Settings
from backend.service import AgentService
from bench import analyse, run_command
from bench.__main__ import parser
from bench.report import trace_link
from frontend.benchmarks_tab import BenchmarksTab, add_tab
from storage import Store
from storage.benchmarks import BenchRecords
from tests.browser_kit import open_app, screenshot
from tests.test_bench_runner import argv, registry


def make_runs(tmp_path: Path, reg, owner: str = "local") -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'data' / 'audio_agent.sqlite3'}"
    run = run_command.run(
        parser().parse_args(["run", *argv(tmp_path, db, "--planner", "scripted", "--tools",
                                          "hear,spoken", "--owner", owner)]),
        registry=reg,
    )  # fmt: skip
    shapley = analyse.attribution(
        parser().parse_args(["analyse", "attribution", *argv(tmp_path, db), "--planner",
                             "scripted", "--tools", "hear,spoken", "--permutations", "2",
                             "--antithetic",
                             "--owner", owner]),
        registry=reg,
    )  # fmt: skip
    return run, shapley


def request(owner: str) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(scope={SCOPE_KEY: owner}), query_params={})


@pytest.fixture
def tab(tmp_path: Path):  # type: ignore[no-untyped-def]
    reg, _ = registry()
    runs = make_runs(tmp_path, reg, owner="user:ann")
    store = Store.open(f"sqlite:///{tmp_path / 'data' / 'audio_agent.sqlite3'}")
    service = AgentService(Settings(data_dir=tmp_path / "data", warm_up=False), store, reg)
    import gradio as gr

    with gr.Blocks() as demo, gr.Tabs() as tabs:
        page = add_tab(service, demo, tabs)
    yield page, runs
    service.close()
    store.close()


def test_only_the_owner_and_the_public_owner_see_benchmark_runs(tab) -> None:  # type: ignore[no-untyped-def]
    page, (run, shapley) = tab
    assert isinstance(page, BenchmarksTab)
    mine = page.listing(None, request("user:ann"))[page.c["pick"]]["choices"]
    assert {value for _, value in mine} == {run["bench_run"], shapley["bench_run"]}
    theirs = page.listing(None, request("user:bob"))
    assert theirs[page.c["pick"]]["choices"] == [] and "No benchmark runs" in theirs[page.c["note"]]
    assert page.open(run["bench_run"], request("user:bob"))[page.c["summary"]] == ""
    assert page.show_trace(run["bench_run"], "anything", request("user:bob"))[1].startswith(
        "This trace is not available"
    )


def test_a_configuration_its_questions_and_a_trace(tab) -> None:  # type: ignore[no-untyped-def]
    page, (run, shapley) = tab
    ann = request("user:ann")
    opened = page.open(shapley["bench_run"], ann)
    figure = opened[page.c["analysis"]]
    assert isinstance(figure, go.Figure) and figure.data[0].orientation == "h"
    assert set(figure.data[0].y) == {"hear", "spoken"}  # Shapley bars, one per tool
    pareto = opened[page.c["pareto"]]
    keys = [point[0] for point in pareto.data[0].customdata]
    assert len(keys) == 4  # the four tool subsets, each a clickable point
    click = SimpleNamespace(_data={"config": keys[0]})
    choice, table, shown = page.clicked(shapley["bench_run"], ann, click)
    assert choice["value"] == keys[0] and len(table) == 2 and all(shown)
    chat, totals = page.trace(shapley["bench_run"], shown, ann, SimpleNamespace(index=[1, 0]))
    assert "tool calls" in totals  # the run's totals, and its trace drawn as the chat draws it
    prediction = table[1][2]  # the first point is the text-only run: a guess
    assert table[1][4] == "yes"
    assert any(f"best guess: {prediction}**" in str(m.get("content")) for m in chat)
    # a run of another benchmark run is not opened through this one
    assert page.show_trace(run["bench_run"], shown[0], ann)[0] == []


@pytest.mark.browser
def test_click_a_point_then_a_question_and_follow_a_report_link(app_server, page, tmp_path):  # type: ignore[no-untyped-def]
    reg, _ = registry()
    run, _ = make_runs(tmp_path, reg)
    url = app_server(registry=reg)
    open_app(page, url)
    page.locator("#main-tabs button[role=tab]").filter(has_text="Benchmarks").click()
    page.locator("#bench-pick input").click()
    page.get_by_role("option").filter(has_text="mini · scripted · react · 2 tools · run").click()
    page.locator("#bench-pareto .js-plotly-plot[data-bench-clicks]").wait_for()
    point = page.locator("#bench-pareto .point").first
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)  # Plotly finds the point under the pointer on hover
    page.wait_for_timeout(500)
    page.mouse.click(x, y)
    screenshot(page, tmp_path / "benchmarks-clicked.png", full_page=True)
    cell = page.locator("#bench-questions [role=gridcell]").filter(has_text="dog").first
    cell.wait_for()
    cell.click(force=True)
    trace = page.locator("#bench-trace")
    trace.get_by_text("Answer: Dog barking").wait_for()
    screenshot(page, tmp_path / "benchmarks-tab.png")
    # the report's link for a question (bench.report.trace_link) opens this tab on its trace
    store = Store.open(f"sqlite:///{tmp_path / 'data' / 'audio_agent.sqlite3'}")
    try:
        six = next(r for r in BenchRecords(store).results(run["bench_run"]) if r.item_id == "six")
    finally:
        store.close()
    page.goto(trace_link(url, run["bench_run"], six.run_id))
    page.locator("#bench-trace").get_by_text("Answer: six").wait_for(timeout=60_000)
    assert "six" in page.locator("#bench-questions").inner_text()
