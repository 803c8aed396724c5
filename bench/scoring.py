"""Scores of one answered benchmark question, each by its benchmark's own rule.

- MMAU and MMAR (and the demo format): the token rule of their ``evaluation.py``
  (``official_token_match``), and beside it an exact-choice column: the token rule credits a
  prediction that holds every token of the answer and none found only in wrong choices, so
  in "A, then B" items the wrong order ("B, then A") passes; exact choice does not.
- MMAU-Pro closed questions: the prediction is mapped to the most similar choice and counted
  right when that is the answer. The official script embeds with NV-Embed-v2 (a 7B model);
  here the bundled MiniLM does it. Whenever the prediction is a choice's exact text (what this
  program writes when its answer matched a choice) both pick that choice, so the two agree;
  a free-text prediction may be mapped differently (``pro_rule`` says which applied).
  Closed items without at least two choices are left out, as the official script does.
- MMAU-Pro instruction following: ``bench.instruction_following``.
- MMAU-Pro open questions: the judge's overall score / 5 (``bench.judge``), or not scored.

A score is a plain dict (stored in ``bench_results.score``): ``value`` is the number the
benchmark averages (1/0, or the judge's fraction), None when not scored; ``correct`` the
same as a bool where there is one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agent.answer import Similarity
from bench.formats import Item
from bench.instruction_following import follows

_WORD = re.compile(r"\b\w+\b")


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def official_token_match(answer: str, prediction: str, choices: list[str]) -> bool:
    """MMAU's and MMAR's ``string_match``: every token of the answer in the prediction, and
    no token that belongs only to wrong choices (a choice with the answer's very tokens is
    not a wrong one); an empty prediction is wrong."""
    predicted = _tokens(prediction)
    wanted = _tokens(answer)
    if not predicted:
        return False
    wrong: set[str] = set()
    for choice in choices:
        tokens = _tokens(choice)
        if tokens != wanted:
            wrong |= tokens - wanted
    return wanted <= predicted and predicted.isdisjoint(wrong)


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def exact_choice(prediction: str, answer: str) -> bool:
    """The prediction is the answer's text (case and punctuation aside)."""
    return bool(_normal(prediction)) and _normal(prediction) == _normal(answer)


def pro_match(
    prediction: str, choices: list[str], similarity: Similarity | None
) -> tuple[str | None, str]:
    """The choice MMAU-Pro's matching picks for a prediction, and how it was found."""
    if prediction in choices:
        return prediction, "exact"
    if similarity is not None:
        scores = np.asarray(similarity(prediction, list(choices)), dtype=float)
        return choices[int(np.argmax(scores))], "minilm"
    overlaps = [len(_tokens(prediction) & _tokens(c)) for c in choices]
    return choices[int(np.argmax(overlaps))], "overlap"


@dataclass
class RunFacts:
    """What a report needs of a run, read from its events and its row."""

    prediction: str = ""
    reasoning: str = ""
    status: str = "ok"
    guess: bool = False
    tool_calls: int = 0  # tool_call events: 0 means answered without any tool
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    wall_s: float = 0.0
    failed: str | None = None


@dataclass
class Score:
    kind: str
    value: float | None
    correct: bool | None = None
    token: bool | None = None
    exact: bool | None = None
    pro_choice: str | None = None
    pro_rule: str | None = None
    judge: dict[str, Any] | None = None
    not_scored: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return asdict(self)


def score_item(
    item: Item,
    facts: RunFacts,
    *,
    similarity: Similarity | None = None,
    verdict: dict[str, Any] | None = None,
) -> Score:
    prediction = facts.prediction
    base = {"facts": asdict(facts)}
    if item.kind == "open":
        if verdict is None:
            return Score("open", None, not_scored="no judge configured (--judge)", **base)
        return Score("open", float(verdict["value"]), judge=verdict, **base)
    if item.kind == "instruction":
        ok = follows(
            prediction, item.raw.get("task_identifier"), item.raw.get("kwargs"), item.question
        )
        return Score("instruction", float(ok), correct=ok, **base)
    if not item.choices and item.raw.get("open"):
        # the dev sets' questions in words carry their own scorer (bench.devsets_open): the
        # token rule, made for choices, would read "Three numbers: ..." against "3" as wrong
        from bench.devsets_open import score_open

        ok = score_open(item.raw, prediction)
        return Score("words", float(ok), correct=ok, **base)
    exact = exact_choice(prediction, item.answer) if item.choices else None
    if item.benchmark == "mmau-pro":
        if len(item.choices) < 2:
            return Score("choice", None, exact=exact, not_scored="fewer than two choices", **base)
        picked, rule = pro_match(prediction, item.choices, similarity)
        ok = picked == item.answer
        return Score(
            "choice", float(ok), correct=ok, exact=exact, pro_choice=picked, pro_rule=rule, **base
        )
    ok = official_token_match(item.answer, prediction, item.choices)
    return Score("choice", float(ok), correct=ok, token=ok, exact=exact, **base)
