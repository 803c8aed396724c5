"""Which time-stamped reading answers a question: a count, a position, sounds in a row,
speakers, or yes / no about one thing; each gives a ``Finding`` (a score per choice, the
finding in one sentence, the times it rests on)."""

from __future__ import annotations

from collections.abc import Sequence

from agent.answer import Similarity, tokens
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_properties import property_answer
from agent.planners.offline_sequence import sequence_scores
from agent.planners.offline_speakers import speaker_finding
from agent.planners.offline_timeline import (
    Finding,
    count_sounds,
    count_speech,
    order_sounds,
    order_speech,
)
from agent.planners.offline_words import presence_of
from agent.planners.question_focus import is_yes_no_choices, named_word
from agent.planners.question_types import QuestionType

SPEAKERS_SURE_MARGIN = 0.25  # the nearest merge this far from the line: the count is sure


def finding_for(
    qtype: QuestionType,
    question: str,
    choices: Sequence[str],
    evidence: Evidence,
    similarity: Similarity | None,
) -> Finding | None:
    """The finding for the question's focus from the evidence, with how sure the evidence it
    rests on is; None without a focus or the evidence it needs."""
    finding = _finding(qtype, question, choices, evidence, similarity)
    focus = qtype.focus
    if finding is None or focus is None:
        return finding
    if focus.target == "speech" and not (focus.kind == "count" and not named_word(question)):
        # whisper's own certainty of what it heard; not for a count of all the words or
        # numbers, which rests on how many there are, not on which: the per-span readings'
        # first words are unsure (mostly under 0.11 on the dev sets' counts, right or wrong)
        finding.certainty = evidence.transcript_certainty
    elif focus.target == "speakers" and evidence.speakers is not None:
        margin = evidence.speakers.get("margin")
        finding.certainty = 0.6 if margin is None else min(1.0, margin / SPEAKERS_SURE_MARGIN)
    return finding


def _finding(
    qtype: QuestionType,
    question: str,
    choices: Sequence[str],
    evidence: Evidence,
    similarity: Similarity | None,
) -> Finding | None:
    focus = qtype.focus
    ask = qtype.ask
    if focus is None and ask is not None and ask.form == "yes_no" and choices:
        if not is_yes_no_choices(choices):
            return None
        found = presence_of(ask, evidence, similarity)
        if found is None:
            return None
        yes = found.strength
        scores = [yes if tokens(c)[0] == "yes" else 1.0 - yes for c in choices]
        return Finding(scores, found.reason or found.sentence, found.sentence)
    if focus is None and ask is not None and ask.form == "property" and choices:
        if not is_yes_no_choices(choices):
            return None
        judged = property_answer(ask, evidence, similarity)
        if judged.guess:  # nothing measures it: neither choice is supported
            why = judged.text.removeprefix("I can't tell: ").rstrip(".")
            return Finding([0.5] * len(choices), why, judged.text, decided=False)
        said_yes = tokens(judged.text)[0] == "yes"
        sure = judged.strength if judged.strength is not None else 0.75
        yes = sure if said_yes else 1.0 - sure
        scores = [yes if tokens(c)[0] == "yes" else 1.0 - yes for c in choices]
        return Finding(scores, judged.reason, judged.text)
    if focus is None:
        return None
    if focus.kind == "sequence":
        return sequence_scores(choices, evidence, similarity)
    if focus.target == "sound":
        timeline = evidence.timeline
        if timeline is None:
            return None
        if focus.kind == "count":
            return count_sounds(focus, timeline, choices, similarity)
        return order_sounds(focus, timeline, choices, similarity)
    if focus.target == "speech":
        spoken, spans = evidence.utterances, evidence.speech_spans
        if spoken is None and spans is None:
            return None
        if focus.kind == "count":
            return count_speech(focus, question, spoken, spans, choices)
        return order_speech(focus, spoken, choices)
    if focus.target == "speakers":
        if evidence.speakers is None:
            return None
        return speaker_finding(focus, question, evidence.speakers, choices)
    return None
