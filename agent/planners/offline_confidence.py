"""Confidence that means something: the offline planner's raw support, calibrated.

The planner's raw confidence (for choices: 1 / choices + the gap between the best two /
the best; for answers in words: how strongly the evidence supports them) is mapped through a
monotone table fitted on the dev sets (``python -m bench.offline_eval calibrate``), one per
family of questions, to the share of answers that were right at that raw value. Below
``guess_below`` the answer is a guess: every view shows it as "best guess". A family may have
a line of its own (``family_lines``: the answers in words, whose line is fitted so that at
most 10 % of the answers shown without "best guess" are wrong, ``bench.words_calibration``).

The table lives in ``offline_calibration.json`` beside this file, written by the bench
script; without it (or for a family it does not know) the raw value is used as it is.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent.planners.question_types import QuestionType

TABLE = Path(__file__).with_name("offline_calibration.json")
DEFAULT_GUESS_BELOW = 0.35


def family_of(qtype: QuestionType, choices: Sequence[str]) -> str:
    """Which calibration a question's confidence goes through: its type (with what a count
    or an order is of), and whether it came with choices ("sound", "count:speakers",
    "open:yes_no" ...)."""
    kind = qtype.kind
    if qtype.focus is not None and kind in ("count", "order"):
        kind = f"{kind}:{qtype.focus.target}"
    if not choices and qtype.expect is not None:
        # a key, digits, a number ... read from speech: calibrated on its own (a misheard
        # menu must not pull the line of every other answer about speech)
        return f"open:expect:{qtype.expect.value}"
    if not choices:
        return f"open:{qtype.ask.form if qtype.ask is not None else kind}"
    return kind


@dataclass(frozen=True)
class Calibration:
    """Per family, raw confidence -> share right (piecewise linear through fitted points)."""

    curves: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    guess_below: float = DEFAULT_GUESS_BELOW
    fitted_on: str = ""  # which dev sets, for the reader of the table
    family_lines: dict[str, float] = field(default_factory=dict)  # a family's own line

    def __call__(self, family: str, raw: float) -> float | None:
        """The calibrated confidence; for an answer in words of a family never measured,
        None (a number nobody checked would mean nothing)."""
        open_answer = family.startswith("open:")
        curve = self.curves.get(family) or (None if open_answer else self.curves.get("all"))
        if curve is None:
            return None if open_answer and self.curves else round(float(raw), 2)
        xs, ys = curve
        return round(float(np.interp(raw, xs, ys)), 2)

    def line(self, family: str | None = None) -> float:
        """The line under which an answer of ``family`` is a guess."""
        return self.family_lines.get(family or "", self.guess_below)

    def is_guess(self, confidence: float | None, family: str | None = None) -> bool:
        return confidence is not None and confidence < self.line(family)

    def as_json(self) -> dict[str, Any]:
        return {
            "fitted_on": self.fitted_on,
            "guess_below": self.guess_below,
            "family_lines": dict(sorted(self.family_lines.items())),
            "curves": {k: {"raw": list(x), "right": list(y)} for k, (x, y) in self.curves.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        curves = {k: (list(v["raw"]), list(v["right"])) for k, v in data.get("curves", {}).items()}
        lines = {k: float(v) for k, v in data.get("family_lines", {}).items()}
        return cls(curves, float(data.get("guess_below", DEFAULT_GUESS_BELOW)),
                   str(data.get("fitted_on", "")), lines)  # fmt: skip


RAW = Calibration(guess_below=0.0)  # raw values, no line: what the table is fitted from


@functools.lru_cache(maxsize=1)
def fitted() -> Calibration:
    """The table fitted on the dev sets (raw values and the default line without one)."""
    if not TABLE.is_file():
        return Calibration()
    return Calibration.from_json(json.loads(TABLE.read_text()))
