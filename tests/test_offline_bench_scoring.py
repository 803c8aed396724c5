"""How the offline dev sets are scored (no models): sequences that share their words, open
questions, guesses among right and wrong answers, the reliability table, and the calibrated
confidence fitted from them (``bench.run_benchmark``, ``bench.offline_calibration``)."""

from __future__ import annotations

import json

import pytest

from agent.planners.offline_confidence import RAW, Calibration, family_of
from agent.planners.question_types import classify
from bench.devsets_open import score_open, starts_yes_no
from bench.offline_calibration import calibrate, check, fit_curves, fit_table, guess_line
from bench.run_benchmark import choice_correct, guess_columns, reliability


def test_choices_with_the_same_words_are_scored_by_their_order():
    choices = ["dog, then rain", "rain, then dog", "dog, then siren", "siren, then rain"]
    assert choice_correct("dog, then rain", "dog, then rain", choices)
    # the benchmarks' token rule alone takes "rain, then dog" for "dog, then rain"
    assert not choice_correct("rain, then dog", "dog, then rain", choices)
    assert not choice_correct("dog, then siren", "dog, then rain", choices)
    # elsewhere the token rule stays
    assert choice_correct("Dog barking.", "Dog barking", ["Dog barking", "Rain"])


@pytest.mark.parametrize(
    ("item", "text", "right"),
    [
        ({"open": "yes_no", "answer": "no"}, "No: nothing in it sounds like hen.", True),
        ({"open": "yes_no", "answer": "yes"}, "Mostly animal, with livestock.", False),
        ({"open": "yes_no", "answer": "yes"}, "I can't tell: it is silent.", False),
        ({"open": "kind", "accept": ["dog", "bark"]}, "Dog: bark (up to 0.9).", True),
        ({"open": "kind", "accept": ["rain"]}, "Fireworks: explosion and rain.", False),
        ({"open": "how_many", "answer": "3"}, "Three times (at 0.3 s, 1.6 s, 2.9 s).", True),
        ({"open": "how_many", "answer": "3"}, "Two times (at 0.3 s, at 1.6 s).", False),
        ({"open": "what_said", "answer": "three six"}, 'It says: "3, 6,"', True),
        ({"open": "what_said", "answer": "three eight"}, 'It says: "please 8"', False),
        ({"open": "when", "span": [2.0, 3.0]}, "At 2.3–3.1 s (the dog).", True),
        ({"open": "when", "span": [2.0, 3.0]}, "At 0.5–4.8 s (wind).", False),
        ({"open": "property", "answer": "no"}, "No: the voice sits at about 190 Hz.", True),
        ({"open": "property", "answer": "yes"}, "Yes: speech from 0.2 s to 4.5 s.", True),
        ({"open": "property", "answer": "yes"}, "I can't tell: no pitch was measured.", False),
    ],
)
def test_open_answers_are_read_as_a_person_reads_them(item, text, right):
    assert score_open(item, text) is right


def test_a_yes_no_answer_starts_with_yes_no_or_cant_tell():
    assert starts_yes_no("Yes: speech from 1.0 s.")
    assert starts_yes_no("No, probably not: ...")
    assert starts_yes_no("I can't tell: the recording lasts only 0.10 s.")
    assert not starts_yes_no("Mostly speech.")
    assert not starts_yes_no("About 121 beats per minute in C minor.")


def _items(pairs: list[tuple[float, bool, bool]]) -> list[dict]:
    return [{"confidence": c, "correct": ok, "guess": g} for c, ok, g in pairs]


def test_guess_columns_and_reliability():
    items = _items([(0.2, False, True), (0.25, False, True), (0.9, False, False),
                    (0.35, True, True), (0.8, True, False), (0.85, True, False),
                    (0.95, True, False), (0.92, True, False)])  # fmt: skip
    columns = guess_columns(items)
    assert columns == {"wrong": 3, "wrong_as_guess_pct": 66.7, "right": 5,
                       "right_as_guess_pct": 20.0}  # fmt: skip
    table = {row["confidence"]: (row["right"], row["n"]) for row in reliability(items)}
    assert table == {"0.2-0.3": (0, 2), "0.3-0.4": (1, 1), "0.8-0.9": (2, 2), "0.9-1.0": (2, 3)}
    # an expected guess (silence) is neither a right nor a wrong answer shown as a guess
    assert guess_columns([{"confidence": 0.5, "correct": False, "guess": True,
                           "expect_guess": True}])["wrong"] == 0  # fmt: skip


def test_calibration_maps_raw_confidence_to_the_share_right():
    table = Calibration({"sound": ([0.3, 0.9], [0.2, 0.95]), "all": ([0.0, 1.0], [0.1, 0.9])},
                        guess_below=0.4)  # fmt: skip
    assert table("sound", 0.6) == pytest.approx(0.575, abs=0.01)
    assert table("count", 0.5) == pytest.approx(0.5)  # a family it never saw: the overall curve
    assert table("open:describe", 1.0) is None  # an answer in words never measured: no number
    assert table.is_guess(0.3) and not table.is_guess(0.5) and not table.is_guess(None)
    assert Calibration.from_json(json.loads(json.dumps(table.as_json()))) == table
    assert RAW("sound", 0.437) == 0.44
    assert family_of(classify("Which sound is it?", ["Dog", "Rain"]), ["Dog", "Rain"]) == "sound"
    assert family_of(classify("Is there a hen?", []), []) == "open:yes_no"
    count = classify("How many people are talking?", ["1", "2"])
    assert family_of(count, ["1", "2"]) == "count:speakers"


def test_the_guess_line_keeps_few_right_answers_under_it(tmp_path):
    rows = [("sound", 0.3 + 0.01 * i, i % 3 != 0) for i in range(60)]
    rows += [("sound", 0.9, True)] * 20 + [("sound", 0.28, False)] * 10
    curves = fit_curves(rows)
    xs, ys = curves["sound"]
    assert ys == sorted(ys) and 0.0 < ys[0] < ys[-1] <= 0.98
    calibrated = [(0.1 * i, i >= 3) for i in range(10)]  # right from 0.3 up
    assert guess_line(calibrated) == 0.3
    twenty = [(0.5 + 0.02 * i, True) for i in range(20)]
    assert guess_line(twenty) == 0.54  # two of the twenty right answers under the line
    # two right answers that are guesses anyway (ties) use up that allowance
    assert guess_line(twenty, right_guessed_anyway=2) == 0.5
    predictions = tmp_path / "raw.json"
    predictions.write_text(json.dumps([
        {"question": "Which sound is this?", "choices": ["Dog", "Rain"], "confidence": c,
         "correct": ok} for _, c, ok in rows
    ]))  # fmt: skip
    out = tmp_path / "table.json"
    calibrate([predictions], out)
    fitted = Calibration.from_json(json.loads(out.read_text()))
    assert "sound" in fitted.curves and 0.0 < fitted.guess_below < 1.0
    right = [fitted("sound", c) for _, c, ok in rows if ok]
    assert sum(fitted.is_guess(c) for c in right) <= 0.1 * len(right)


def test_the_guess_line_holds_on_every_run_it_is_fitted_on():
    which = {"question": "Which sound is this?", "choices": ["Dog", "Rain"]}
    wrong = {0, 2, 5, 9, 14, 20, 27, 35, 44, 54}  # fewer and fewer wrong as the value rises
    run = [{**which, "confidence": round(0.4 + 0.01 * i, 2), "correct": i not in wrong}
           for i in range(60)]  # fmt: skip
    # the same run with three of its surest right answers ties (guesses whatever the line)
    top = [j for j, i in enumerate(run) if i["correct"]][-3:]
    tied = [{**i, "guess": True} if j in top else i for j, i in enumerate(run)]

    def right_under(table: Calibration, items: list[dict]) -> int:
        return sum(bool(i.get("guess")) or table.is_guess(table("sound", i["confidence"]))
                   for i in items if i["correct"])  # fmt: skip

    pooled = fit_table([run + run + tied])
    assert right_under(pooled, tied) > 5  # over 10 % of its 50 right answers
    each = fit_table([run, run, tied])
    assert right_under(each, tied) <= 5 and right_under(each, run) <= 5


def test_check_applies_the_table_as_the_planner_does(tmp_path):
    which = {"question": "Which sound is this?", "choices": ["Dog", "Rain", "Siren"],
             "category": "which_sound"}  # fmt: skip
    raw = [
        {**which, "confidence": 0.33, "guess": True, "correct": True},  # a tie: stays a guess
        {**which, "confidence": 0.5, "guess": False, "correct": False},
        {**which, "confidence": 0.95, "guess": False, "correct": True},
        {"question": "Is there a hen?", "choices": [], "category": "open", "open": "yes_no",
         "confidence": 0.9, "guess": False, "correct": True, "model_output": "No: ..."},
        {**which, "confidence": 0.9, "guess": True, "correct": False, "expect_guess": True},
    ]  # fmt: skip
    path = tmp_path / "s7" / "raw.json"
    path.parent.mkdir()
    path.write_text(json.dumps(raw))
    curves = {"sound": ([0.0, 1.0], [0.0, 1.0]), "open:yes_no": ([0.0, 1.0], [0.5, 0.9])}
    result = check([path], Calibration(curves, 0.6, "s0"))
    groups = result["s7/raw.json"]
    assert groups["which_sound"]["guesses"] == 3  # the tie, the weak one, the silence item
    assert groups["which_sound"]["wrong_as_guess_pct"] == 100.0
    assert groups["which_sound"]["right_as_guess_pct"] == 50.0  # the tie
    assert groups["open yes_no"]["starts_yes_no_pct"] == 100.0
    assert groups["open yes_no"]["guesses"] == 0  # 0.9 raw -> 0.86, over the line
    # the silence item (a guess by design) is neither right nor wrong in the columns
    assert result["guess_columns"] == {"wrong": 1, "wrong_as_guess_pct": 100.0, "right": 3,
                                       "right_as_guess_pct": 33.3}  # fmt: skip
