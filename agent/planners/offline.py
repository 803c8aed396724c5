"""The offline rule planner: a deterministic policy, not an LLM.

Turn 1 classifies the question (keywords and the shape of the choices) and calls the local
tools that answer that type of question, all at once. If a sound question turns out to
contain speech, turn 2 also transcribes it. The last turn weighs the evidence for each
choice (label and text-similarity matching) and explains its choice. Without choices it
answers with a summary of what the tools found.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
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
)
from agent.planners.offline_scoring import Evidence, collect_evidence, score_choices
from agent.planners.question_types import DESCRIPTION, QuestionType, classify

LABEL = "Offline rule planner (not an LLM)"


class OfflinePlanner:
    name = "offline"
    label = LABEL
    model = None
    is_llm = False

    def __init__(self, similarity: Similarity | None = None) -> None:
        self.similarity = similarity
        self._ids = itertools.count(1)

    async def stream_turn(
        self, messages: list[ChatMessage], tools: list[ToolSpec], *, force_answer: bool = False
    ) -> AsyncIterator[PlannerChunk]:
        question, choices, results = _current_question(messages)
        qtype = classify(question, choices)
        available = {t.name for t in tools}
        called = {name for name, _ in results}
        if not results and not force_answer:
            wanted = [t for t in qtype.tools if t in available]
            missing = [t for t in qtype.tools if t not in available]
            text = f"This question is {DESCRIPTION[qtype.kind]}: {qtype.reason}. "
            if wanted:
                text += "I will ask " + ", ".join(wanted) + " for evidence."
            else:
                text += "None of the tools that answer it are enabled."
            if missing:
                text += f" ({', '.join(missing)} would help but is switched off.)"
            for chunk in _sentences(text):
                yield TextDelta(chunk)
            if wanted:
                for name in wanted:
                    yield self._call(name)
                return
        follow_up = self._follow_up(qtype, results, available, called, force_answer)
        if follow_up:
            yield TextDelta(follow_up[0])
            yield self._call(follow_up[1])
            return
        answer = await asyncio.to_thread(self._decide, qtype, question, choices, results)
        for chunk in _sentences(answer.rationale):
            yield TextDelta(chunk)
        yield answer

    def _call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolCallRequest:
        return ToolCallRequest(f"offline_{next(self._ids)}", name, arguments or {})

    @staticmethod
    def _follow_up(
        qtype: QuestionType,
        results: list[tuple[str, dict[str, Any]]],
        available: set[str],
        called: set[str],
        force_answer: bool,
    ) -> tuple[str, str] | None:
        """Cross-check: speech inside a sound/general question is worth transcribing."""
        if force_answer or "transcribe" in called or "transcribe" not in available:
            return None
        evidence = collect_evidence(results)
        speechy = (evidence.speech_seconds or 0) > 0.5 or any(
            "speech" in label.lower() and score > 0.3 for label, score in evidence.labels
        )
        if qtype.kind in ("sound", "signal", "music") and speechy:
            return (
                "The recording contains speech, so I will also transcribe it to cross-check. ",
                "transcribe",
            )
        return None

    def _decide(
        self,
        qtype: QuestionType,
        question: str,
        choices: list[str],
        results: list[tuple[str, dict[str, Any]]],
    ) -> FinalAnswer:
        evidence = collect_evidence(results)
        failed = [name for name, data in results if data.get("_error")]
        notes = f" ({', '.join(failed)} failed.)" if failed else ""
        if not choices:
            text = _describe(qtype.kind, evidence)
            return FinalAnswer(text=text, confidence=None, rationale=f"{text}{notes}")
        total, sources = score_choices(qtype.kind, question, choices, evidence, self.similarity)
        if not sources or not np.any(total > 0):
            return FinalAnswer(
                text=choices[0],
                choice=choices[0],
                confidence=1.0 / len(choices),
                rationale="No tool gave evidence for any choice, so this is a guess: "
                f"{choices[0]}.{notes}",
            )
        best = int(np.argmax(total))
        ordered = np.sort(total)[::-1]
        margin = float(ordered[0] - ordered[1]) if len(ordered) > 1 else float(ordered[0])
        confidence = float(min(0.95, 1.0 / len(choices) + margin / max(1e-6, ordered[0])))
        lines = [f"Evidence: {s.reason}." for s in sources]
        table = ", ".join(f"{c} {t:.2f}" for c, t in zip(choices, total, strict=True))
        lines.append(f"Support per choice: {table}.")
        lines.append(f'The best-supported choice is "{choices[best]}".{notes}')
        return FinalAnswer(
            text=choices[best],
            choice=choices[best],
            confidence=round(confidence, 2),
            rationale=" ".join(lines),
        )


def _current_question(
    messages: list[ChatMessage],
) -> tuple[str, list[str], list[tuple[str, dict[str, Any]]]]:
    """The question being answered now and the tool results gathered for it."""
    index = max(
        (i for i, m in enumerate(messages) if m.role == "user" and "question" in m.data),
        default=None,
    )
    if index is None:
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        return (last_user.content if last_user else ""), [], []
    current = messages[index]
    results = []
    for message in messages[index + 1 :]:
        if message.role == "tool" and message.name:
            data = dict(message.data)
            if message.error:
                data["_error"] = message.error
            results.append((message.name, data))
    return current.data["question"], list(current.data.get("choices", [])), results


def _describe(kind: str, evidence: Evidence) -> str:
    parts = []
    if evidence.transcript and kind in ("speech_content", "speaker", "general"):
        parts.append(f'The speech says: "{evidence.transcript}".')
    if evidence.labels:
        top = sorted(evidence.labels, key=lambda x: -x[1])[:3]
        parts.append("The main sounds are " + ", ".join(f"{lbl} ({s:.2f})" for lbl, s in top) + ".")
    if evidence.music:
        m = evidence.music
        parts.append(f"Tempo about {m.get('tempo_bpm', 0):.0f} BPM, key {m.get('key', '?')}.")
    if evidence.signal:
        s = evidence.signal
        parts.append(
            f"It lasts {s.get('duration_s', 0):.1f} s; voice register: {s.get('register', '?')}."
        )
    if evidence.transcript and kind not in ("speech_content", "speaker", "general"):
        parts.append(f'Speech in it says: "{evidence.transcript}".')
    if evidence.speech_seconds is not None and not evidence.transcript:
        parts.append(f"Speech detected: {evidence.speech_seconds:.1f} s.")
    return " ".join(parts) or "The tools found nothing to report about this recording."


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
