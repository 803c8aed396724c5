"""The offline planner's confidence table: fitted on dev-set runs, checked on others.

    python -m bench.offline_eval calibrate raw-0.json raw-1.json raw-2.json
    python -m bench.offline_eval check raw-7.json [--table T]    # a held-out seed

Both read what ``bench.run_benchmark --raw-confidence --out FILE`` wrote on the dev sets
(``bench.devsets``). ``calibrate`` fits, per family of questions
(``agent.planners.offline_confidence.family_of``), a monotone curve from raw confidence to
the share of answers that were right (isotonic regression on the family's own answers; "all"
for a family not seen), and the line under which an answer is a guess: the highest that
keeps at most 10 % of the right answers under it on each seed's run (ties, guesses whatever
the line, counted). It prints the reliability table and writes ``offline_calibration.json``.

``check`` applies a table to a raw run as the planner would (the answers are the same; the
confidence goes through the table and answers under the line become guesses; answers that
were guesses for a reason of their own, silence or a tie, stay so) and prints, per category,
the accuracy, how many wrong and right answers were shown as guesses, and the reliability
table: on a seed the table was not fitted on, the honest figures.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from agent.planners.offline_confidence import Calibration, family_of
from agent.planners.question_types import classify
from bench.devsets_open import starts_yes_no
from bench.run_benchmark import guess_columns, reliability

WORDS_FITTED = " + in words: "  # fitted_on's part that bench.words_calibration writes
RIGHT_GUESSED_AT_MOST = 0.10  # the guess line keeps at most this share of right answers under it


def family(item: dict[str, Any]) -> str:
    choices = item.get("choices") or []
    return family_of(classify(item["question"], choices), choices)


def calibrated_by_table(item: dict[str, Any]) -> bool:
    """Whether the planner puts this answer's confidence through the table: not for items
    that are guesses for a reason of their own (silence, a tie: already marked in a raw run,
    whose table draws no line), nor for answers without a number."""
    return item.get("confidence") is not None and not item.get("guess")


def family_rows(items: list[dict[str, Any]]) -> list[tuple[str, float, bool]]:
    """(family, raw confidence, right) per answer the table is for."""
    return [
        (family(item), float(item["confidence"]), bool(item["correct"]))
        for item in items
        if "correct" in item and not item.get("expect_guess") and calibrated_by_table(item)
    ]


def fit_curves(rows: list[tuple[str, float, bool]]) -> dict[str, tuple[list[float], list[float]]]:
    """Per family (and "all"), raw -> share right, through the isotonic fit's points. Each
    family's curve is fitted on its own answers: leaning on the other families (0.15 of
    their weight) gave flat curves for families whose raw value says little, and held out
    one seed at a time, the share of right answers shown as guesses rose with it."""
    from sklearn.isotonic import IsotonicRegression

    curves = {}
    for name in sorted({r[0] for r in rows}) + ["all"]:
        mine = [r for r in rows if name in (r[0], "all")]
        fit = IsotonicRegression(y_min=0.02, y_max=0.98, out_of_bounds="clip")
        fit.fit(np.array([r[1] for r in mine]), np.array([float(r[2]) for r in mine]))
        xs = [round(float(v), 3) for v in fit.X_thresholds_]
        ys = [round(float(v), 3) for v in fit.y_thresholds_]
        curves[name] = (xs, ys)
    return curves


def guess_line(calibrated: list[tuple[float, bool]], right_guessed_anyway: int = 0) -> float:
    """The highest line that keeps at most RIGHT_GUESSED_AT_MOST of the right answers under
    it (the answers under it are shown as guesses), counting the right answers that are
    guesses for a reason of their own (a tie) against the allowance."""
    right = sorted(c for c, ok in calibrated if ok)
    if not right:
        return 0.5
    allowed = int(RIGHT_GUESSED_AT_MOST * (len(right) + right_guessed_anyway))
    allowed = max(0, allowed - right_guessed_anyway)
    return round(float(right[allowed]), 2)  # the right answer just above the allowance


def apply(table: Calibration, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A raw run's answered items as the planner with ``table`` gives them."""
    out = []
    for item in items:
        if "correct" not in item:
            continue
        if calibrated_by_table(item):
            confidence = table(family(item), float(item["confidence"]))
            guess = table.is_guess(confidence, family(item))
            item = {**item, "confidence": confidence, "guess": guess}
        out.append(item)
    return out


def right_tied(items: list[dict[str, Any]]) -> int:
    """Right answers that are guesses for a reason of their own (a tie)."""
    return sum(
        bool(i.get("guess")) and bool(i.get("correct"))
        for i in items
        if "correct" in i and not i.get("expect_guess")
    )


def fit_table(runs: list[list[dict[str, Any]]], fitted_on: str = "") -> Calibration:
    """The table from raw runs (one list of items per seed): the curves from all of them; the
    line the highest that keeps at most RIGHT_GUESSED_AT_MOST of the right answers under it
    on every run (ties counted), not only on all together: a seed with many right ties
    (seed 0: 11 of 174) otherwise takes the whole allowance of the pooled line."""
    rows = family_rows([i for run in runs for i in run])
    curves = fit_curves(rows)
    unlined = Calibration(curves, 0.0, fitted_on)
    lines = [
        guess_line([(unlined(fam, raw) or 0.0, ok) for fam, raw, ok in family_rows(run)],
                   right_tied(run))
        for run in runs
        if family_rows(run)
    ]  # fmt: skip
    return Calibration(curves, min(lines, default=0.5), fitted_on)


def keep_family_lines(table: Calibration, previous: Path) -> Calibration:
    """``table`` with the families that have a line of their own in the table at
    ``previous`` kept as they were there (their curve and line: ``bench.words_calibration``
    fits them on the questions in words, which these runs may not have)."""
    if not previous.is_file():
        return table
    old = Calibration.from_json(json.loads(previous.read_text()))
    kept = {f: old.curves[f] for f in old.family_lines if f in old.curves}
    words = old.fitted_on.partition(WORDS_FITTED)[2]
    fitted_on = f"{table.fitted_on}{WORDS_FITTED}{words}" if words else table.fitted_on
    return replace(table, curves={**table.curves, **kept}, family_lines=dict(old.family_lines),
                   fitted_on=fitted_on)  # fmt: skip


def calibrate(files: list[Path], out: Path) -> Calibration:
    runs = [json.loads(f.read_text()) for f in files]
    fitted_on = ", ".join(f"{f.parent.name}/{f.name}" for f in files)
    table = keep_family_lines(fit_table(runs, fitted_on), out)
    out.write_text(json.dumps(table.as_json(), indent=1) + "\n")
    items = [i for run in runs for i in run]
    scored = [i for i in apply(table, items) if not i.get("expect_guess")]
    print(
        f"{len(family_rows(items))} answers, {len(table.curves)} curves; guess line "
        f"{table.guess_below:.2f}; wrote {out}"
    )
    print(json.dumps(guess_columns(scored)))
    for row in reliability(scored):
        print(f"  {row['confidence']}: {row['right']}/{row['n']} right ({row['right_pct']} %)")
    return table


def category(item: dict[str, Any]) -> str:
    return f"open {item['open']}" if item.get("open") else str(item.get("category", "all"))


def summary(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per category (and "all"): accuracy, guesses, and for yes/no the answers' first word."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        groups[category(item)].append(item)
        groups["all"].append(item)
    out = {}
    for name, group in sorted(groups.items()):
        row: dict[str, Any] = {
            "n": len(group),
            "right_pct": round(100 * sum(bool(i["correct"]) for i in group) / len(group), 1),
            "guesses": sum(bool(i.get("guess")) for i in group),
            **guess_columns(group),
        }
        if name == "open yes_no":
            starts = [starts_yes_no(str(i.get("model_output", ""))) for i in group]
            row["starts_yes_no_pct"] = round(100 * sum(starts) / len(starts), 1)
        out[name] = row
    return out


def check(files: list[Path], table: Calibration) -> dict[str, Any]:
    """Per file, the summary with ``table`` applied; and the reliability of all together."""
    every: list[dict[str, Any]] = []
    result: dict[str, Any] = {"table": table.fitted_on, "guess_below": table.guess_below}
    for path in files:
        items = apply(table, json.loads(path.read_text()))
        every += items
        result[f"{path.parent.name}/{path.name}"] = summary(items)
    answered = [i for i in every if not i.get("expect_guess")]
    result["guess_columns"] = guess_columns(answered)
    result["reliability"] = reliability(answered)
    return result


def print_check(result: dict[str, Any]) -> None:
    print(f"table fitted on {result['table']}; guess line {result['guess_below']:.2f}")
    for name, groups in result.items():
        if not isinstance(groups, dict) or "all" not in groups:
            continue
        print(f"== {name}")
        for cat, row in groups.items():
            starts = (
                f"  starts yes/no {row['starts_yes_no_pct']} %"
                if "starts_yes_no_pct" in row
                else ""
            )
            print(
                f"  {cat:<16} n={row['n']:<4} right {row['right_pct']:5.1f} %  guesses "
                f"{row['guesses']:<3} wrong as guess {row['wrong_as_guess_pct']} % of "
                f"{row['wrong']}, right as guess {row['right_as_guess_pct']} % of "
                f"{row['right']}{starts}"
            )
    print("all files:", json.dumps(result["guess_columns"]))
    for row in result["reliability"]:
        print(f"  {row['confidence']}: {row['right']}/{row['n']} right ({row['right_pct']} %)")
