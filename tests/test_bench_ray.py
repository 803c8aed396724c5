"""A tiny sweep through a local Ray instance (ray.init(num_cpus=2)): the same results as the
local executor, stored in the same database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import analyse
from bench.__main__ import parser
from storage import Store
from storage.benchmarks import BenchRecords

pytestmark = pytest.mark.models
ray = pytest.importorskip("ray", reason="Ray comes with requirements-dev.txt")
FIXTURES = Path(__file__).parent / "fixtures"


def test_attribution_sweep_on_a_local_ray(tmp_path: Path) -> None:
    rows = [
        {"id": "dog", "audio_id": "./dog_bark_esc50.wav", "question": "Is there speech?",
         "choices": ["yes", "no"], "answer": "no", "task": "sound"},
        {"id": "six", "audio_id": "./digit_6_theo_4.wav", "question": "Is there speech?",
         "choices": ["yes", "no"], "answer": "yes", "task": "speech"},
    ]  # fmt: skip
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(rows))
    common = [
        "analyse", "attribution", "--questions", str(questions), "--audio-dir", str(FIXTURES),
        "--planner", "offline", "--tools", "speech_activity,signal_stats", "--permutations", "2",
        "--quiet",
    ]  # fmt: skip
    on_ray = analyse.attribution(parser().parse_args([
        *common, "--data-dir", str(tmp_path / "ray"), "--executor", "ray", "--num-cpus", "2",
        "--concurrency", "2",
    ]))  # fmt: skip
    assert not ray.is_initialized()  # started for the sweep, shut down after it
    assert on_ray["complete"] and on_ray["runs"]["ran"] == 2 * on_ray["subsets_run"]
    inline = analyse.attribution(parser().parse_args([
        *common, "--data-dir", str(tmp_path / "inline"), "--executor", "inline",
    ]))  # fmt: skip
    assert on_ray["shapley"] == inline["shapley"]
    store = Store.open(f"sqlite:///{tmp_path / 'ray' / 'audio_agent.sqlite3'}")
    try:
        stored = BenchRecords(store).results(on_ray["bench_run"])
        assert {r.run_status for r in stored} == {"ok"}
        worker_ids = {store.runs.get_run(r.run_id or "").worker_id for r in stored}
        assert len(worker_ids) == 2  # both actors ran questions
    finally:
        store.close()
