"""An LLM judge for open-ended answers (MMAU-Pro's "open" category).

MMAU-Pro's script asks Qwen2.5-7B-Instruct to grade a response against the reference on four
criteria from 1 to 5 (correctness, relevance, completeness, clarity) and an overall score,
one per line (``CORRECTNESS: 4 - ...``); a criterion it cannot read counts 3, and an overall
score that is missing (or 3) is replaced by the mean of the four. The category's score is the
mean overall score / 5. This judge keeps that scale, output format and parsing, with any
planner of the catalogue as the model (``--judge NAME``: for the official judge, an
``openai_compatible`` entry pointing at a vLLM server of Qwen2.5-7B-Instruct); the wording of
the instructions is ours. Without a judge, open-ended items are reported "not scored".
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from agent.planners.base import ChatMessage, Planner, TextDelta, TurnEnd

CRITERIA = ("correctness", "relevance", "completeness", "clarity")
NEUTRAL = 3.0
JUDGE_TEMPERATURE = 0.1
SYSTEM = "You are a careful, impartial grader of answers about audio recordings."


def judge_prompt(question: str, reference: str, response: str) -> str:
    return (
        "Grade a model's answer to a question about an audio recording against the "
        "reference answer.\n\n"
        f"Question: {question}\n\nReference answer: {reference}\n\nModel answer: {response}\n\n"
        "Give each criterion a whole score from 1 (poor) to 5 (excellent) with a one-sentence "
        "reason:\n"
        "1. Correctness: is it factually right, judged against the reference?\n"
        "2. Relevance: does it answer the question that was asked?\n"
        "3. Completeness: does it cover the important points of the reference?\n"
        "4. Clarity: is it clear and well organised?\n\n"
        "Answer in exactly this form, one line each:\n"
        "CORRECTNESS: <score> - <reason>\nRELEVANCE: <score> - <reason>\n"
        "COMPLETENESS: <score> - <reason>\nCLARITY: <score> - <reason>\n"
        "OVERALL: <mean score> - <one-sentence verdict>"
    )


def parse_scores(text: str) -> dict[str, float]:
    """The criteria's scores as MMAU-Pro's script reads them (see the module docstring)."""
    scores = {}
    for name in CRITERIA:
        found = re.search(rf"{name.upper()}:\s*(\d+)", text, re.IGNORECASE)
        scores[name] = float(found.group(1)) if found else NEUTRAL
    overall = re.search(r"OVERALL:\s*(\d+(?:\.\d+)?)", text, re.IGNORECASE)
    value = float(overall.group(1)) if overall else NEUTRAL
    if value == NEUTRAL:
        value = statistics.mean(scores[name] for name in CRITERIA)
    scores["overall"] = value
    return scores


@dataclass
class Verdict:
    scores: dict[str, float]
    text: str
    model: str
    cost: float = 0.0
    tokens: int = 0

    def public(self) -> dict[str, object]:
        return {
            "scores": self.scores,
            "value": self.scores["overall"] / 5.0,
            "model": self.model,
            "text": self.text,
            "cost": self.cost,
            "tokens": self.tokens,
        }


async def judge(planner: Planner, question: str, reference: str, response: str) -> Verdict:
    """One judgement; raises the planner's own error when the model cannot be reached."""
    messages = [
        ChatMessage("system", SYSTEM),
        ChatMessage("user", judge_prompt(question, reference, response)),
    ]
    text: list[str] = []
    cost, tokens = 0.0, 0
    async for chunk in planner.stream_turn(messages, [], temperature=JUDGE_TEMPERATURE):
        if isinstance(chunk, TextDelta) and chunk.kind == "text":
            text.append(chunk.text)
        elif isinstance(chunk, TurnEnd):
            cost = chunk.cost
            tokens = chunk.usage.input_tokens + chunk.usage.output_tokens
    body = "".join(text)
    return Verdict(parse_scores(body), body, planner.model or planner.name, cost, tokens)
