"""Sibling runs of one question side by side (compare mode): each run's row, the votes, the
majority and the headline that becomes the assistant's message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent import events as ev
from storage.schemas import RunInfo


def summary_row(
    info: RunInfo, planner_label: str, answer: ev.Answer | None = None
) -> dict[str, Any]:
    """One run of a comparison, from its stored totals (and its answer event: confidence,
    and whether the answer was a best guess)."""
    return {
        "run_id": info.id,
        "planner": info.planner,
        "planner_label": planner_label,
        "strategy": info.strategy,
        "answer": info.answer_choice or info.answer_text,
        "confidence": answer.confidence if answer is not None else None,
        "guess": bool(answer is not None and answer.guess),
        "without_tools": bool(answer is not None and answer.without_tools),
        "status": info.status,
        "calls": info.calls,
        "tokens": info.input_tokens + info.output_tokens,
        "cost": info.cost,
        "wall_s": info.wall_s,
    }


def _confidences(rows: list[dict[str, Any]]) -> str:
    """ "confidence 0.25" or "confidence 0.25-0.40" over the rows that have one."""
    values = sorted(r["confidence"] for r in rows if r.get("confidence") is not None)
    if not values:
        return ""
    if values[0] == values[-1]:
        return f"confidence {values[0]:.2f}"
    return f"confidence {values[0]:.2f}-{values[-1]:.2f}"


@dataclass
class CompareSummary:
    """Sibling runs of one question side by side (compare mode)."""

    runs: list[dict[str, Any]]
    votes: dict[str, int]
    majority: str | None  # None when no answer has more votes than every other
    agreement: bool
    guessed: int = 0  # answers that were best guesses (the evidence could not decide)

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]]) -> CompareSummary:
        votes: dict[str, int] = {}
        for row in rows:
            if row["answer"]:
                votes[row["answer"]] = votes.get(row["answer"], 0) + 1
        ranked = sorted(votes.items(), key=lambda kv: -kv[1])
        majority = (
            ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
        )
        answered = [r for r in rows if r["answer"]]
        agreement = len(votes) == 1 and len(answered) == len(rows)
        guessed = sum(1 for r in answered if r.get("guess"))
        return cls(rows, votes, majority, agreement, guessed)

    @property
    def all_guessed(self) -> bool:
        """Every run answered, and every answer was a best guess."""
        answered = [r for r in self.runs if r["answer"]]
        return bool(answered) and len(answered) == len(self.runs) and self.guessed == len(answered)

    @property
    def headline(self) -> str:
        n = len(self.runs)
        sure = _confidences(self.runs)
        sure = f", {sure}" if sure else ""
        if self.agreement and self.majority and self.all_guessed:
            return f"{self.majority} (all {n} runs guessed: they agree on a guess{sure})"
        if self.agreement and self.majority:
            guessed = f"; {self.guessed} of them as a best guess" if self.guessed else ""
            return f"{self.majority} (all {n} runs agree{guessed}{sure})"
        if self.majority:
            guess = ", all best guesses" if self.all_guessed else ""
            return f"{self.majority} (majority, {self.votes[self.majority]} of {n}{guess})"
        return f"No majority among {n} runs: " + "; ".join(
            f"{r['planner']}/{r['strategy']}: {_stated(r)}" for r in self.runs
        )

    def public(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "votes": self.votes,
            "majority": self.majority,
            "agreement": self.agreement,
            "guessed": self.guessed,
            "all_guessed": self.all_guessed,
            "headline": self.headline,
        }


def _stated(row: dict[str, Any]) -> str:
    """A run's answer as the summary states it: "best guess: siren" for a guess."""
    if not row["answer"]:
        return row["status"]
    return f"best guess: {row['answer']}" if row.get("guess") else str(row["answer"])
