"""The offline rule planner: a deterministic policy, not an LLM.

It classifies the question (keywords and the shape of the choices) and calls the local
tools that answer that type of question, all at once. If a sound question turns out to
contain speech, it also transcribes it. It then weighs the evidence for each choice
(label and text-similarity matching; sounds in a row by where each one's evidence lies),
reports where the tools' evidence agrees or not, and explains its choice. Without choices it
answers the question asked, in words (``offline_words``): yes or no first, the kind, the
number, the time. Its confidence goes through the table calibrated on the dev sets
(``offline_confidence``); under its line the answer is a best guess.

The strategies' other steps get rule-based counterparts, read from the step named in the
last user message's ``data``: refine's plan / interact / answer, evidence's filter / two
answers / verify, and the caption-first follow-up question.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent.answer import Similarity
from agent.planners.base import (
    ChatMessage,
    FinalAnswer,
    PlannerChunk,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    Verify,
)
from agent.planners.offline_confidence import Calibration, family_of, fitted
from agent.planners.offline_evidence import collect_evidence, flatten_sources
from agent.planners.offline_expected import answer_expected
from agent.planners.offline_findings import finding_for
from agent.planners.offline_scoring import SOURCE_TOOL, SourceScore, score_choices
from agent.planners.offline_situation import Situation, read_situation
from agent.planners.offline_timeline import (
    Finding,
)
from agent.planners.offline_words import (
    answer_in_words,
    cannot_tell,
    describe,
    only_silence,
)
from agent.planners.question_types import (
    DESCRIPTION,
    TOOLS_FOR,
    QuestionType,
    classify,
    tool_arguments,
)
from agent.strategies.steps import ANSWER_STEPS, Step

LABEL = "Offline rule planner (not an LLM)"
CONFIDENT_MARGIN = 0.12  # support gap between the best two choices that needs no more evidence


@dataclass
class Decision:
    best: int | None
    total: np.ndarray
    sources: list[SourceScore]
    margin: float
    confidence: float
    guess: bool = False  # the evidence cannot separate the best choices
    why_guess: str = ""  # why not (silence, too short, a tie, no evidence)
    tied: list[int] = field(default_factory=list)  # the choices it could not separate
    finding: Finding | None = None  # a count or a position found in time-stamped evidence
    raw: float = 0.0  # the confidence before calibration
    weak: bool = False  # a guess because the calibrated confidence is under the line


TIE = 0.03  # support gap below which two choices are tied


class OfflinePlanner:
    name = "offline"
    label = LABEL
    model = None
    is_llm = False

    def __init__(
        self, similarity: Similarity | None = None, calibration: Calibration | None = None
    ) -> None:
        self.similarity = similarity
        # raw support -> share right on the dev sets; RAW reports the raw values (to refit)
        self.calibration = calibration if calibration is not None else fitted()
        self._ids = itertools.count(1)

    async def stream_turn(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSpec],
        *,
        force_answer: bool = False,
        temperature: float | None = None,
    ) -> AsyncIterator[PlannerChunk]:
        situation = read_situation(messages)
        qtype = classify(situation.question, situation.choices)
        handler = (
            {
                Step.REFINE_PLAN: self._refine_plan,
                Step.REFINE_INTERACT: self._refine_interact,
                Step.EVIDENCE_FILTER: self._evidence_filter,
                Step.EVIDENCE_VERIFY: self._evidence_verify,
            }.get(situation.step)
            if situation.step
            else None
        )
        if handler is not None:
            text = await asyncio.to_thread(handler, qtype, situation)
            for chunk in _sentences(text):
                yield TextDelta(chunk)
            return
        if situation.step in ANSWER_STEPS:
            uniform = situation.step_data.get("variant") == 2
            answer = await asyncio.to_thread(self._decide, qtype, situation, uniform)
            for chunk in _sentences(answer.rationale):
                yield TextDelta(chunk)
            yield answer
            return
        async for chunk in self._tool_turn(qtype, situation, tools, force_answer):
            yield chunk

    # -- react and caption-first ---------------------------------------------------------------
    async def _tool_turn(
        self,
        qtype: QuestionType,
        situation: Situation,
        tools: list[ToolSpec],
        force_answer: bool,
    ) -> AsyncIterator[PlannerChunk]:
        available = {t.name for t in tools}
        called = {name for name, _ in situation.results}
        if not situation.results and not force_answer:
            wanted = [t for t in qtype.tools if t in available]
            missing = [t for t in qtype.tools if t not in available]
            text = f"This question is {DESCRIPTION[qtype.kind]}: {qtype.reason}. "
            text += (
                "I will ask " + ", ".join(wanted) + " for evidence."
                if wanted
                else "None of the tools that answer it are enabled."
            )
            if missing and wanted:
                text += f" ({', '.join(missing)} would help but is switched off.)"
            for chunk in _sentences(text):
                yield TextDelta(chunk)
            if wanted:
                for name in wanted:
                    arguments = tool_arguments(name, qtype, situation.choices, self.similarity)
                    yield self._call(name, arguments)
                return
        if not force_answer:
            follow_up = await asyncio.to_thread(
                self._follow_up, qtype, situation, available, called
            )
            if follow_up is not None:
                text, name, arguments = follow_up
                yield TextDelta(text)
                yield self._call(name, arguments)
                return
        decision = await asyncio.to_thread(self._score, qtype, situation, False)
        verify = _verification(situation, decision)
        if verify is not None:
            yield verify
        answer = self._final(qtype, situation, decision, off=set(qtype.tools) - available)
        for chunk in _sentences(answer.rationale):
            yield TextDelta(chunk)
        yield answer

    def _call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolCallRequest:
        return ToolCallRequest(f"offline_{next(self._ids)}", name, arguments or {})

    def _follow_up(
        self,
        qtype: QuestionType,
        situation: Situation,
        available: set[str],
        called: set[str],
    ) -> tuple[str, str, dict[str, Any]] | None:
        """One more call when the evidence calls for it (a cross-check), else None."""
        evidence = collect_evidence(situation.results)
        speechy = (evidence.speech_seconds or 0) > 0.5 or any(
            "speech" in label.lower() and score > 0.3 for label, score in evidence.labels
        )
        if (
            qtype.kind in ("sound", "signal", "music")
            and speechy
            and "transcribe" in available
            and "transcribe" not in called
            and not evidence.transcript
        ):
            text = "The recording contains speech, so I will also transcribe it to cross-check. "
            return text, "transcribe", {}
        if "ask_audio" in available and "ask_audio" not in called and situation.choices:
            decision = self._score(qtype, situation, False)
            ask = {"question": situation.question, "options": situation.choices}
            if self._needs_hinted_transcript(qtype, situation):
                text = (
                    "The caption was made without the question; short speech is easily "
                    "misheard, so I will ask again with the answer options. "
                )
                return text, "ask_audio", ask
            if decision.margin < CONFIDENT_MARGIN:
                text = (
                    "The caption does not settle it (the best two choices are within "
                    f"{decision.margin:.2f}), so I will ask about the question directly. "
                )
                return text, "ask_audio", ask
        return None

    # -- scoring -------------------------------------------------------------------------------
    def _score(self, qtype: QuestionType, situation: Situation, uniform: bool) -> Decision:
        evidence = collect_evidence(situation.results)
        choices = situation.choices
        finding = finding_for(qtype, situation.question, choices, evidence, self.similarity)
        if not choices:
            return Decision(None, np.zeros(0), [], 0.0, 0.0, finding=finding)
        if finding is not None:
            total = np.asarray(finding.scores, dtype=float)
            sources = [SourceScore("timeline", list(finding.scores), finding.reason)]
        else:
            total, sources = score_choices(
                qtype.kind, situation.question, choices, evidence, self.similarity,
                uniform=uniform,
            )  # fmt: skip
        # Ties are broken by the evidence, then by the choice text: never by list position.
        ranking = sorted(range(len(choices)), key=lambda i: (-total[i], choices[i].casefold()))
        best = ranking[0]
        top = float(total[best])
        second = float(total[ranking[1]]) if len(ranking) > 1 else 0.0
        margin = top - second
        tied = [i for i in ranking if top - float(total[i]) < TIE]
        why = cannot_tell(evidence, finding)
        if not why and top <= 0:
            why = "no tool gave evidence for any choice"
            if only_silence(evidence):
                why = "the recording is silent (the sound classifier hears only silence)"
        if why:
            tied = ranking
        elif len(tied) > 1:
            why = "the evidence ties " + " and ".join(f'"{choices[i]}"' for i in tied)
        if why:
            confidence = round(1.0 / len(tied), 2)
            return Decision(best, total, sources, margin, confidence, True, why, tied, finding)
        raw = float(min(0.95, 1.0 / len(choices) + margin / max(1e-6, top)))
        if finding is not None and finding.certainty is not None:
            raw *= 0.5 + 0.5 * finding.certainty  # a transcript whisper was unsure of, ...
        family = family_of(qtype, choices)
        confidence = self.calibration(family, raw)
        assert confidence is not None  # choice families always have a value
        if self.calibration.is_guess(confidence):
            why = (
                f"the evidence leans towards it only weakly (confidence {confidence:.2f}, under "
                f"the line of {self.calibration.guess_below:.2f} below which answers were "
                "mostly wrong on the dev sets)"
            )
            return Decision(best, total, sources, margin, confidence, True, why, ranking[:2],
                            finding, raw, weak=True)  # fmt: skip
        return Decision(best, total, sources, margin, confidence, finding=finding, raw=raw)

    def _decide(self, qtype: QuestionType, situation: Situation, uniform: bool) -> FinalAnswer:
        return self._final(qtype, situation, self._score(qtype, situation, uniform), uniform)

    def _final(
        self,
        qtype: QuestionType,
        situation: Situation,
        decision: Decision,
        uniform: bool = False,
        off: set[str] | None = None,
    ) -> FinalAnswer:
        failed = [name for name, data in situation.results if data.get("_error")]
        notes = f" ({', '.join(failed)} failed.)" if failed else ""
        choices = situation.choices
        if not choices:
            evidence = collect_evidence(situation.results)
            stt = "failed" if "transcribe" in failed else ""
            stt = "off" if "transcribe" in (off or ()) else stt
            speech_asked = qtype.kind == "speech_content" and "transcribe" in qtype.tools
            worded = answer_expected(
                qtype.expect, speech_asked, situation.question, evidence, stt,
                describe(qtype.kind, evidence),
            ) or answer_in_words(
                qtype.ask, qtype.kind, situation.question, evidence, decision.finding,
                self.similarity,
            )  # fmt: skip
            rationale = f"{worded.text} {worded.details}{notes}".strip()
            if worded.cannot_tell:
                return FinalAnswer(text=worded.text, rationale=rationale)
            if worded.guess:  # nothing measures what is asked: a guess between yes and no
                return FinalAnswer(text=worded.text, confidence=0.5, rationale=rationale,
                                   guess=True)  # fmt: skip
            raw = worded.strength if worded.strength is not None else 1.0
            confidence = self.calibration(family_of(qtype, ()), raw)
            guess = self.calibration.is_guess(confidence, family_of(qtype, ()))
            return FinalAnswer(
                text=worded.text, confidence=confidence, rationale=rationale, guess=guess
            )
        if decision.guess and decision.best is not None:
            pick = choices[decision.best]
            others = [choices[i] for i in decision.tied if i != decision.best]
            lines = [f"Can't tell: {decision.why_guess}."]
            lines += [f"Evidence: {s.reason}." for s in decision.sources]
            if decision.weak:
                lines.append(f'Best guess: "{pick}" (the best supported, but not by much).')
            elif len(decision.tied) == len(choices):
                lines.append(
                    f'Best guess: "{pick}" (no choice is better supported than another; '
                    "picked by a fixed rule, not by its place in the list)."
                )
            else:
                lines.append(
                    f'Best guess: "{pick}", tied with '
                    + ", ".join(f'"{o}"' for o in others)
                    + " (picked by a fixed rule, not by its place in the list)."
                )
            return FinalAnswer(
                text=pick,
                choice=pick,
                confidence=decision.confidence,
                rationale=" ".join(lines) + notes,
                guess=True,
            )
        lines = [f"Evidence: {s.reason}." for s in decision.sources]
        table = ", ".join(f"{c} {t:.2f}" for c, t in zip(choices, decision.total, strict=True))
        weighting = "every source counted alike" if uniform else "weighted by question type"
        lines.append(f"Support per choice ({weighting}): {table}.")
        lines.append(f'The best-supported choice is "{choices[decision.best]}".{notes}')
        return FinalAnswer(
            text=choices[decision.best],
            choice=choices[decision.best],
            confidence=decision.confidence,
            rationale=" ".join(lines),
        )

    # -- refine steps --------------------------------------------------------------------------
    def _refine_plan(self, qtype: QuestionType, situation: Situation) -> str:
        present = {tool for tool, _ in flatten_sources(situation.results)}
        missing_tools = [t for t in (qtype.tools or TOOLS_FOR[qtype.kind]) if t not in present]
        decision = self._score(qtype, situation, False)
        if situation.choices:
            sufficient = decision.margin >= CONFIDENT_MARGIN or not missing_tools
        else:
            sufficient = not missing_tools
        missing = [f"evidence from {t}" for t in missing_tools]
        if self._needs_hinted_transcript(qtype, situation):
            sufficient = False
            missing.append("a transcript made knowing the answer options")
        reply = {
            "sufficient": sufficient,
            "missing": missing,
            "questions": [] if sufficient else [situation.question],
        }
        why = (
            f"The gap between the best two choices is {decision.margin:.2f}. "
            if situation.choices
            else ""
        )
        if sufficient and missing_tools:
            why += "That is enough to answer. "
        elif sufficient:
            why += "The local tools have nothing more to add. "
        else:
            why += f"Still missing: {', '.join(missing)}. "
        return why + json.dumps(reply)

    @staticmethod
    def _needs_hinted_transcript(qtype: QuestionType, situation: Situation) -> bool:
        """The caption's transcript was made without the question; short speech with known
        options deserves a second listen that knows them."""
        if qtype.kind != "speech_content" or not situation.choices:
            return False
        return not collect_evidence(situation.results).hinted_transcript

    def _refine_interact(self, qtype: QuestionType, situation: Situation) -> str:
        evidence = collect_evidence(situation.results)
        if self._needs_hinted_transcript(qtype, situation):
            reply = {"action": "transcribe", "prompt": ", ".join(situation.choices)}
            why = "A transcript that knows the answer options hears short words better. "
        elif qtype.kind in ("speech_content", "speaker") and not evidence.transcript:
            reply = {"action": "transcribe"}
            why = "The question is about speech and the document has no transcript. "
        else:
            reply = {"action": "recaption", "focus": situation.question}
            why = "A description focused on the question should add the missing details. "
        return why + json.dumps(reply)

    # -- evidence steps ------------------------------------------------------------------------
    def _evidence_filter(self, qtype: QuestionType, situation: Situation) -> str:
        """Each source's finding, the one that separates the choices most first."""
        decision = self._score(qtype, situation, False)
        ranked = sorted(decision.sources, key=lambda s: -float(np.ptp(s.scores)))
        items = [s.reason for s in ranked] or [
            describe(qtype.kind, collect_evidence(situation.results))
        ]
        return "Most decisive evidence first. " + json.dumps({"evidence": items})

    def _evidence_verify(self, qtype: QuestionType, situation: Situation) -> str:
        weighted = self._score(qtype, situation, False)
        candidates = situation.step_data.get("candidates", [])
        if weighted.best is not None and situation.choices:
            chosen = situation.choices[weighted.best]
            why = (
                f'Weighting the sources by question type supports "{chosen}" most '
                f"(margin {weighted.margin:.2f})."
            )
        else:
            chosen = min(candidates, key=str.casefold) if candidates else ""
            why = "Neither candidate has more support; this is a guess."
        return json.dumps({"answer": chosen, "rationale": why, "guess": weighted.guess})


def _verification(situation: Situation, decision: Decision) -> Verify | None:
    """Each evidence source's own favourite choice, when at least two sources have one."""
    if not situation.choices or decision.best is None:
        return None
    picks = {}
    for source in decision.sources:
        scores = np.asarray(source.scores, dtype=float)
        if scores.size and scores.max() > 0:
            picks[SOURCE_TOOL.get(source.source, source.source)] = situation.choices[
                int(np.argmax(scores))
            ]
    if len(picks) < 2:
        return None
    agreement = len(set(picks.values())) == 1
    chosen = situation.choices[decision.best]
    resolution = (
        f'All sources point to "{chosen}".'
        if agreement
        else f'The sources disagree; weighting them by question type gives "{chosen}".'
    )
    return Verify(list(picks), picks, agreement, resolution, question=situation.question)


def _sentences(text: str) -> list[str]:
    """Stream in sentence-sized pieces so the reasoning appears as it is written."""
    pieces, current = [], ""
    for word in text.split(" "):
        current += word + " "
        if word.endswith((".", ":", ";")) and len(current) > 20:
            pieces.append(current)
            current = ""
    if current.strip():
        pieces.append(current)
    return pieces
