"""The steps a strategy asks of a planner, shared by the strategies and the offline planner.

A strategy that wants a planner to take one of its own steps (not a free tool-calling turn)
puts ``{"step": Step.X, ...}`` in the data of the user message that asks for it; the offline
rule planner reads the step back (``Step.of``) and answers it by rule. LLM planners read only
the message text. A new strategy step is a member here, so a planner that does not handle it
is found by a search for its name, not by a misspelt string.
"""

from __future__ import annotations

from enum import StrEnum


class Step(StrEnum):
    REFINE_PLAN = "refine.plan"  # which details the caption document misses
    REFINE_INTERACT = "refine.interact"  # one action to get them: a tool call or "done"
    REFINE_ANSWER = "refine.answer"  # the answer from the document
    EVIDENCE_FILTER = "evidence.filter"  # the evidence list kept from the tools' results
    EVIDENCE_ANSWER = "evidence.answer"  # one of two answers (``variant`` 1 or 2)
    EVIDENCE_VERIFY = "evidence.verify"  # the verifier's pick among the ``candidates``

    @classmethod
    def of(cls, value: object) -> Step | None:
        """The step named in a message's data, or None (none, or one this version lacks)."""
        try:
            return cls(str(value)) if value else None
        except ValueError:
            return None


ANSWER_STEPS = frozenset({Step.REFINE_ANSWER, Step.EVIDENCE_ANSWER})
