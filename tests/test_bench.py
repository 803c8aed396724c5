"""The benchmark runner on tiny MMAU- and MMAR-format files built from the fixtures."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench.run_benchmark import run

pytestmark = pytest.mark.models
FIXTURES = Path(__file__).parent / "fixtures"


def args(file: Path, **overrides) -> argparse.Namespace:
    values = dict(
        file=file, audio_root=FIXTURES, planner="offline", tools=None, preset=None,
        strategy="react", budget=None, limit=0, config=None, out=None, verbose=False,
    )  # fmt: skip
    values.update(overrides)
    return argparse.Namespace(**values)


ITEMS = [
    ("dog_bark_esc50.wav", "Which sound is heard?", ["Rain", "Dog barking", "Siren"], "Dog barking",
     "sound"),
    ("digit_6_theo_4.wav", "Which number is spoken?", ["two", "six", "nine"], "six", "speech"),
    ("missing.wav", "Which sound?", ["a", "b"], "a", "sound"),
]  # fmt: skip


async def test_mmau_format_scored_with_the_token_rule(tmp_path):
    mmau = [
        {"id": str(i), "audio_id": f"./{audio}", "question": q, "choices": c, "answer": a,
         "task": task}
        for i, (audio, q, c, a, task) in enumerate(ITEMS)
    ]  # fmt: skip
    file = tmp_path / "mini.json"
    file.write_text(json.dumps(mmau))
    out = tmp_path / "pred.json"
    summary = await run(args(file, out=out))
    assert summary["format"] == "mmau" and summary["missing_audio"] == 1
    assert summary["answered"] == 2 and summary["accuracy"]["all"] == 100.0
    predictions = json.loads(out.read_text())
    assert [p.get("model_output") for p in predictions[:2]] == ["Dog barking", "six"]


async def test_mmar_format_with_a_strategy(tmp_path):
    mmar = [
        {"id": str(i), "audio_path": f"./{audio}", "question": q, "choices": c, "answer": a,
         "modality": task}
        for i, (audio, q, c, a, task) in enumerate(ITEMS[:2])
    ]  # fmt: skip
    file = tmp_path / "mini.jsonl"
    file.write_text("\n".join(json.dumps(m) for m in mmar))
    out = tmp_path / "pred.jsonl"
    summary = await run(args(file, out=out, strategy="evidence"))
    assert summary["format"] == "mmar" and summary["strategy"] == "evidence"
    assert summary["accuracy"]["all"] == 100.0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["answer_prediction"] == "Dog barking" and lines[0]["thinking_prediction"]
