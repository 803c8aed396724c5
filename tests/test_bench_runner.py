"""`python -m bench run` and `bench analyse` on a real database (SQLite file and PostgreSQL)
with scripted planners and tools: stored runs, resuming, reuse, the text-only baseline, the
report's figures, Shapley attribution without repeated runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.events import Usage
from agent.planners.base import ChatMessage, FinalAnswer, ToolSpec
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from bench import analyse, run_command
from bench.__main__ import parser
from storage import Store
from storage.benchmarks import BenchRecords

FIXTURES = Path(__file__).parent / "fixtures"
ITEMS = [
    {"id": "dog", "audio_id": "./dog_bark_esc50.wav", "question": "Which sound is heard?",
     "choices": ["Rain", "Dog barking", "Siren"], "answer": "Dog barking", "task": "sound",
     "difficulty": "easy"},
    {"id": "six", "audio_id": "./digit_6_theo_4.wav", "question": "Which number is spoken?",
     "choices": ["two", "six", "nine"], "answer": "six", "task": "speech", "difficulty": "hard"},
    {"id": "gone", "audio_id": "./missing.wav", "question": "Which?", "choices": ["a", "b"],
     "answer": "a", "task": "sound", "difficulty": "hard"},
]  # fmt: skip
PLANNER_COST = 0.001


def decide(messages: list[ChatMessage], tools: list[ToolSpec], force: bool) -> ScriptedTurn:
    """Call every tool once, then answer the first choice a tool named (else a guess)."""
    results = [m.content for m in messages if m.role == "tool"]
    usage = Usage(input_tokens=100, output_tokens=10)
    if tools and not results and not force:
        return ScriptedTurn("Listening.", calls=[(t.name, {}) for t in tools], usage=usage,
                            cost=PLANNER_COST)  # fmt: skip
    choices = next(m.data["choices"] for m in messages if m.data.get("choices"))
    heard = next((c for c in choices if any(c in r for r in results)), None)
    answer = FinalAnswer(heard or choices[0], choice=heard or choices[0], guess=heard is None)
    return ScriptedTurn("Done.", answer=answer, usage=usage, cost=PLANNER_COST)


def registry() -> tuple[Registry, dict[str, ScriptedTool]]:
    reg = Registry()
    tools = {
        "hear": ScriptedTool("hear", "I hear: Dog barking"),
        "spoken": ScriptedTool("spoken", "The word six"),
        "noise": ScriptedTool("noise", "nothing useful"),
    }
    reg.register(ScriptedPlanner([decide], name="scripted"), kind="planner")
    for tool in tools.values():
        reg.register(tool, kind="tool")
    return reg, tools


def questions(tmp_path: Path) -> Path:
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(ITEMS))
    return path


def argv(tmp_path: Path, db_url: str, *extra: str) -> list[str]:
    return [
        "--questions", str(questions(tmp_path)), "--audio-dir", str(FIXTURES),
        "--data-dir", str(tmp_path / "data"), "--db-url", db_url, "--executor", "inline",
        "--quiet", *extra,
    ]  # fmt: skip


def bench_run(tmp_path: Path, db_url: str, reg: Registry, *extra: str) -> dict:
    args = parser().parse_args(["run", *argv(tmp_path, db_url, "--planner", "scripted", *extra)])
    return run_command.run(args, registry=reg)


def test_a_run_is_stored_as_a_conversation_and_reported(tmp_path: Path, any_db_url: str):
    reg, tools = registry()
    out = tmp_path / "out"
    report = bench_run(tmp_path, any_db_url, reg, "--tools", "hear,spoken", "--out", str(out))
    config = report["configurations"][0]
    assert report["missing_audio"] == 1 and report["finished"]
    assert config["answered"] == 2 and config["accuracy"] == 100.0
    assert config["exact_choice"] == 100.0 and config["guesses"] == 0
    assert config["no_tool_calls"] == 0 and config["failed_runs"] == 0
    per = config["per_question"]
    assert per["calls"]["mean"] == 2 and per["input_tokens"]["mean"] == 200
    assert per["cost"]["mean"] == pytest.approx(2 * PLANNER_COST)
    assert config["groups"]["difficulty"]["hard"]["n"] == 1
    assert [len(t.calls) for t in tools.values()] == [2, 2, 0]
    # every question is an ordinary message of the benchmark's conversation, with its run
    store = Store.open(any_db_url)
    try:
        info = BenchRecords(store).get(report["bench_run"])
        assert info is not None and info.conversation_id
        messages = store.messages.list_messages(info.conversation_id)
        assert [m.text for m in messages if m.role == "user"] == [i["question"] for i in ITEMS[:2]]
        rows = BenchRecords(store).results(info.id)
        assert {r.run_status for r in rows} == {"ok"}
        events = store.runs.run_events(rows[0].run_id or "")
        assert events[0].type == "run_started" and events[-1].type == "run_finished"
    finally:
        store.close()
    predictions = json.loads((out / "mini.predictions.json").read_text())
    assert [p.get("model_output") for p in predictions] == ["Dog barking", "six", None]
    assert "| scripted · react · 2 tools | 2/2 | 100.0 %" in (out / "report.md").read_text()
    lines = (out / "questions.csv").read_text().splitlines()
    assert len(lines) == 3 and f"?benchmark={info.id}&run=" in lines[1]


def test_the_same_command_again_runs_nothing_and_identical_runs_are_reused(tmp_path: Path):
    reg, tools = registry()
    db = f"sqlite:///{tmp_path / 'b.sqlite3'}"
    first = bench_run(tmp_path, db, reg, "--tools", "hear")
    again = bench_run(tmp_path, db, reg, "--tools", "hear")
    assert again["bench_run"] == first["bench_run"]
    assert again["this_call"]["ran"] == again["this_call"]["reused"] == 0
    # a new benchmark run asking the same (another name) reuses the runs: nothing is asked
    fresh = bench_run(tmp_path, db, reg, "--tools", "hear", "--fresh")
    assert fresh["bench_run"] != first["bench_run"]
    assert fresh["this_call"]["ran"] == 0 and fresh["this_call"]["reused"] == 2
    assert fresh["configurations"][0]["accuracy"] == 50.0  # "six" needs the spoken tool
    assert len(tools["hear"].calls) == 2  # once per question, ever
    # another seed is another run
    seeded = bench_run(tmp_path, db, reg, "--tools", "hear", "--seed", "1")
    assert seeded["this_call"]["ran"] == 2


def test_text_only_baseline_has_no_tools(tmp_path: Path):
    reg, tools = registry()
    db = f"sqlite:///{tmp_path / 'b.sqlite3'}"
    report = bench_run(tmp_path, db, reg, "--tools", "none")
    config = report["configurations"][0]
    assert config["configuration"]["tools"] == [] and config["label"].endswith("no tools")
    assert config["no_tool_calls"] == 2 and config["guesses"] == 2
    assert all(not t.calls for t in tools.values())


def test_an_interrupted_run_is_run_again_and_an_unscored_one_only_scored(tmp_path: Path):
    reg, tools = registry()
    db = f"sqlite:///{tmp_path / 'b.sqlite3'}"
    first = bench_run(tmp_path, db, reg, "--tools", "hear")
    store = Store.open(db)
    records = BenchRecords(store)
    try:
        dog, six = records.results(first["bench_run"])
        # as if killed: one run never ended, another ended but its score was never written
        with store.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE runs SET status='interrupted' WHERE id=?", (dog.run_id,))
            conn.exec_driver_sql("UPDATE bench_results SET score=NULL WHERE id=?", (six.id,))
            conn.exec_driver_sql("UPDATE bench_runs SET finished_at=NULL")
    finally:
        store.close()
    again = bench_run(tmp_path, db, reg, "--tools", "hear")
    assert again["this_call"]["ran"] == 1 and again["this_call"]["rescored"] == 1
    assert again["configurations"][0]["accuracy"] == 50.0
    assert len(tools["hear"].calls) == 2  # the rerun's tool result came from the tool cache
    store = Store.open(db)
    try:
        rows = BenchRecords(store).results(first["bench_run"])
        assert rows[0].message_id == dog.message_id and rows[0].run_id != dog.run_id
        assert len(store.runs.runs_for_message(dog.message_id or "")) == 2  # the same question
    finally:
        store.close()


def test_attribution_runs_each_subset_once_and_matches_the_exact_values(tmp_path: Path):
    reg, tools = registry()
    db = f"sqlite:///{tmp_path / 'b.sqlite3'}"
    out = tmp_path / "shapley"
    args = parser().parse_args([
        "analyse", "attribution", *argv(tmp_path, db), "--planner", "scripted",
        "--tools", "hear,spoken,noise", "--permutations", "12", "--out", str(out),
    ])  # fmt: skip
    result = analyse.attribution(args, registry=reg)
    assert result["complete"]
    # v(S) = share of the two questions answered: hear and spoken half each, noise nothing
    shapley = result["shapley"]
    assert shapley["hear"]["value"] == pytest.approx(0.5)
    assert shapley["spoken"]["value"] == pytest.approx(0.5)
    assert shapley["noise"]["value"] == pytest.approx(0.0)
    subsets = result["subsets_run"]
    assert result["runs"]["ran"] == 2 * subsets  # no (question, subset) run twice
    # each tool ran once per subset holding it and per question: the tool cache is keyed
    # by the recording, and the scripted tools count every real call
    assert len(tools["hear"].calls) == 2
    assert (out / "shapley.png").stat().st_size > 5_000
    assert (out / "pareto.png").is_file()
    again = analyse.attribution(args, registry=reg)
    assert again["runs"]["ran"] == 0
    # other orderings (another --seed): the subsets run before are reused, not run again
    args.seed = 5
    other = analyse.attribution(args, registry=reg)
    assert other["bench_run"] != result["bench_run"]
    assert other["runs"]["reused"] == other["runs"]["planned"] - other["runs"]["ran"]
    assert other["runs"]["reused"] > 0 and other["shapley"] == result["shapley"]


def test_ablation_has_a_text_only_baseline_per_planner(tmp_path: Path):
    reg, _ = registry()
    db = f"sqlite:///{tmp_path / 'b.sqlite3'}"
    out = tmp_path / "ablation"
    args = parser().parse_args([
        "analyse", "ablation", *argv(tmp_path, db), "--planners", "scripted",
        "--strategies", "react,evidence", "--tools", "hear,spoken", "--seeds", "2",
        "--shuffle-choices", "--out", str(out),
    ])  # fmt: skip
    result = analyse.ablation(args, registry=reg)
    rows = {(r["strategy"], r["text_only"]): r for r in result["configurations"]}
    baseline = rows[("react", True)]  # guesses the first choice shown: right by chance only
    assert baseline["seeds"] == 2 and baseline["mean"] < 100.0
    assert rows[("react", False)]["seeds"] == 2 and rows[("react", False)]["mean"] == 100.0
    assert (out / "ablation.png").stat().st_size > 5_000
