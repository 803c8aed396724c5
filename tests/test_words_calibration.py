"""Calibrated guesses for answers in words (bench.words_calibration): a family's own guess line,
fitted on dev runs so that few answers shown without "best guess" are wrong; the planner and
the figures use it (tiny synthetic tables, no models)."""

from __future__ import annotations

import json

from agent.planners.offline_confidence import Calibration
from bench.offline_calibration import calibrate
from bench.words_calibration import applied, figures, fit_lines, fit_words, meets, rescored

SAID = "What numbers are said?"  # the family "open:expect:digits"


def _item(raw: float | None, right: bool, guess: bool = False, question: str = SAID) -> dict:
    answer = "one two three"
    return {"category": "words", "open": "digits", "question": question, "choices": [],
            "answer": answer, "model_output": answer if right else "one two",
            "confidence": raw, "guess": guess, "correct": right}  # fmt: skip


def test_a_family_has_a_line_of_its_own_and_the_table_keeps_it():
    table = Calibration({"open:said": ([0.0, 1.0], [0.0, 1.0])}, 0.5, "s0", {"open:said": 0.9})
    assert table.is_guess(0.8, "open:said") and not table.is_guess(0.8, "open:kind")
    assert not table.is_guess(0.8) and table.is_guess(0.4) and not table.is_guess(None)
    again = Calibration.from_json(json.loads(json.dumps(table.as_json())))
    assert again == table and again.line("open:said") == 0.9 and again.line() == 0.5


def test_the_lines_show_most_right_answers_with_few_shown_wrong_over_all_families():
    rows = [(0.1, False), (0.2, True), (0.5, False), (0.5, False)] + [(0.8, True)] * 12
    assert fit_lines({"a": rows}) == {"a": 0.8}  # from 0.5 on, 2 of 14 shown would be wrong
    assert fit_lines({"a": [(0.9, False), (0.9, True)]}) == {"a": 1.0}  # every one a guess
    assert fit_lines({"a": [(0.4, True), (0.9, True)]}) == {"a": 0.4}
    # one wrong in 11 (9 %) alone, but one in 31 with the other family's answers shown
    rows = {
        "sure": [(0.9, True)] * 20,
        "fair": [(0.7, True)] * 10 + [(0.7, False)],
        "poor": [(0.6, True)] * 5 + [(0.6, False)] * 5,
    }
    assert fit_lines(rows) == {"sure": 0.9, "fair": 0.7, "poor": 1.0}
    assert fit_lines({"fair": rows["fair"]}) == {"fair": 1.0}


def _dev_run() -> list[dict]:
    wrong = [_item(0.1 + 0.03 * k, False) for k in range(10)] + [_item(0.6, False)]
    return wrong + [_item(0.61 + 0.019 * k, True) for k in range(19)]


def test_the_fit_gives_each_family_of_answers_in_words_a_curve_and_a_line():
    old = Calibration({"sound": ([0.3, 0.9], [0.2, 0.95])}, 0.67, "q17f/full-0.json")
    never = [_item(1.0, k % 3 == 0, question="What is making this sound?") for k in range(9)]
    table = fit_words([_dev_run() + never], old, "seed 0")
    assert table.curves["sound"] == old.curves["sound"] and table.guess_below == 0.67
    lines = table.family_lines
    assert set(lines) == {"open:expect:digits"} and lines["open:expect:digits"] > 0.5
    assert "open:kind" not in table.curves  # no line shows any: the family keeps what it had
    assert table.fitted_on == "q17f/full-0.json + in words: seed 0"
    held = [_item(0.7, True), _item(0.9, True), _item(0.2, False), _item(0.3, False),
            _item(0.95, False), _item(None, False)]  # fmt: skip
    shown = applied(table, rescored(held))
    assert [i["guess"] for i in shown] == [False, False, True, True, False, False]
    row = figures(shown)
    assert (row["shown"], row["wrong_shown"], row["cant_tell"]) == (3, 1, 1)
    assert row["wrong_as_guess_pct"] == 66.7 and row["right_as_guess_pct"] == 0.0
    assert not meets(row)  # 1 of the 3 shown is wrong
    # before the fit the family had no curve: no confidence, so never a guess
    assert figures(applied(old, rescored(held)))["wrong_as_guess_pct"] == 0.0


def test_a_cant_tell_counts_apart_and_answers_are_scored_again():
    items = rescored([
        {**_item(None, True), "model_output": "I can't tell."},  # scored wrong in the run
        {**_item(0.9, False), "model_output": "one two three"},  # right by today's scorer
        {"category": "open", "open": "yes_no", "model_output": "Yes"},  # not in words
    ])  # fmt: skip
    assert [(i["correct"], i["cant_tell"]) for i in items] == [(False, True), (True, False)]
    row = figures(items)
    assert (row["n"], row["cant_tell"], row["shown"], row["wrong"]) == (2, 1, 1, 0)
    assert meets(row)


def test_refitting_the_table_for_choices_keeps_the_lines_of_the_answers_in_words(tmp_path):
    table = tmp_path / "table.json"
    words = fit_words([_dev_run()], Calibration({}, 0.67, "old"), "seed 0")
    table.write_text(json.dumps(words.as_json()))
    run = tmp_path / "full-0.json"
    choices = [{"question": "Which sound is heard?", "choices": ["dog", "rain"],
                "confidence": 0.5 + 0.02 * k, "correct": k > 3, "guess": False}
               for k in range(20)]  # fmt: skip
    run.write_text(json.dumps(choices))
    calibrate([run], table)
    again = Calibration.from_json(json.loads(table.read_text()))
    assert again.family_lines == words.family_lines and "sound" in again.curves
    assert again.curves["open:expect:digits"] == words.curves["open:expect:digits"]
    assert again.fitted_on.endswith(" + in words: seed 0")
