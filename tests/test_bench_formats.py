"""Benchmark files in (MMAU, MMAR, MMAU-Pro json/jsonl/parquet, demo) and predictions out in
the keys each official script reads."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.formats import FormatError, load_items, shuffled_choices, write_predictions

FIXTURES = Path(__file__).parent / "fixtures"
DOG, DIGIT = "dog_bark_esc50.wav", "digit_6_theo_4.wav"


def write(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif path.suffix == ".parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:
        path.write_text(json.dumps(rows))
    return path


def test_mmau_items_with_groups_and_missing_audio(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "audio_id": f"./test-mini-audios/{DOG}", "question": "Which?",
         "choices": ["Dog", "Rain"], "answer": "Dog", "task": "sound", "difficulty": "easy",
         "sub-category": "Sound ID"},
        {"id": "b", "audio_id": "./test-mini-audios/gone.wav", "question": "Which?",
         "choices": ["x", "y"], "answer": "x", "task": "sound", "difficulty": "hard"},
    ]  # fmt: skip
    benchmark, items = load_items(write(tmp_path / "m.json", rows), FIXTURES)
    assert benchmark == "mmau"
    first, second = items
    # the file name alone is found when the audio was unpacked without the sub-folder
    assert first.runnable and first.audio == [(FIXTURES / DOG).resolve()]
    assert first.groups == {"task": "sound", "difficulty": "easy", "sub-category": "Sound ID"}
    assert not second.runnable and second.missing == ["./test-mini-audios/gone.wav"]


def test_dev_set_with_open_questions_is_read_as_mmau(tmp_path: Path) -> None:
    """The dev sets (MMAU keys) have a category "open" of their own; only MMAU-Pro rows
    (audio_path) are told apart by MMAU-Pro's category names."""
    rows = [
        {"id": "dev-0", "audio_id": f"./{DOG}", "question": "Which sound?",
         "choices": ["dog", "rain"], "answer": "dog", "category": "which_sound"},
        {"id": "dev-1", "audio_id": f"./{DOG}", "question": "Is there a dog barking?",
         "choices": [], "answer": "yes", "category": "open", "open": "yes_no"},
    ]  # fmt: skip
    benchmark, items = load_items(write(tmp_path / "devsets.json", rows), FIXTURES)
    assert benchmark == "mmau"
    assert all(item.runnable for item in items)


def test_mmau_pro_multi_audio_open_and_instruction_items_from_parquet(tmp_path: Path) -> None:
    rows = [
        {"id": "p1", "audio_path": [DOG, DIGIT], "question": "Which clip has speech?",
         "choices": ["first", "second"], "answer": "second", "category": "multi",
         "task_identifier": None, "kwargs": None},
        {"id": "p2", "audio_path": [DOG], "question": "Describe it.", "choices": [],
         "answer": "A dog barks.", "category": "open", "task_identifier": None, "kwargs": None},
        {"id": "p3", "audio_path": [DIGIT], "question": "Say it in capitals.", "choices": [],
         "answer": "", "category": "instruction following",
         "task_identifier": "All Uppercase", "kwargs": {"N": 2}},
    ]  # fmt: skip
    source = write(tmp_path / "test.parquet", rows)
    benchmark, items = load_items(source, FIXTURES)
    assert benchmark == "mmau-pro"
    assert [i.kind for i in items] == ["choice", "open", "instruction"]
    assert len(items[0].audio) == 2 and items[0].choices == ["first", "second"]
    assert items[2].raw["kwargs"]["N"] == 2  # parquet structs come back as plain dicts
    out = write_predictions(
        tmp_path / "out.parquet", benchmark, items, {"p1": ("second", "why")}, source
    )
    frame = pd.read_parquet(out)
    assert frame["model_output"].tolist()[0] == "second"
    assert pd.isna(frame["model_output"].tolist()[1])  # the official script: "" (wrong)
    # the same rows as JSON lines are MMAU-Pro too (list-valued audio_path)
    assert load_items(write(tmp_path / "pro.jsonl", rows), FIXTURES)[0] == "mmau-pro"


def test_mmar_predictions_in_its_keys_and_unanswered_items_left_without(tmp_path: Path) -> None:
    rows = [
        {"id": f"r{i}", "audio_path": f"./audio/{DOG}", "question": "q", "choices": ["a", "b"],
         "answer": "a", "modality": "sound", "category": "Signal Layer"}
        for i in range(2)
    ]  # fmt: skip
    source = write(tmp_path / "MMAR-meta.jsonl", rows)
    benchmark, items = load_items(source, FIXTURES)
    assert benchmark == "mmar"
    out = write_predictions(tmp_path / "p.jsonl", benchmark, items, {"r0": ("a", "because")},
                            source)  # fmt: skip
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written[0]["answer_prediction"] == "a"
    assert written[0]["thinking_prediction"] == "because"
    assert "answer_prediction" not in written[1]  # the official script skips it


def test_demo_format_and_choice_shuffling_is_fixed_by_the_seed(tmp_path: Path) -> None:
    rows = [{"audio": DOG, "question": "q", "choices": ["a", "b", "c", "d"], "answer": "a"}]
    benchmark, items = load_items(write(tmp_path / "qa.json", rows), FIXTURES)
    assert benchmark == "demo" and items[0].id == "0"
    orders = {tuple(shuffled_choices(items[0], seed)) for seed in range(8)}
    assert len(orders) > 1  # seeds give different orders
    assert shuffled_choices(items[0], 3) == shuffled_choices(items[0], 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "not JSON"), ('{"a": 1}', "JSON list"), ("[]", "no questions"),
     ('[{"audio": "x"}]', "no 'question'"), ('[{"question": "q", "x": 1}]', "pass --format")],
)  # fmt: skip
def test_bad_files_are_refused_with_a_reason(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        load_items(path)
