"""Speakers for the offline rule planner: how many, the same or not, higher or lower.

Evidence: the ``speakers`` tool (voice features per speech span, clustered), with each
speaker's pitch and times. Each function returns a ``Finding`` like the counting ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agent.answer import tokens
from agent.number_words import count_word
from agent.planners.offline_timeline import Finding, count_scores
from agent.planners.question_focus import Focus

THIN_S = 0.5  # less speech than this in all: too little voice to tell speakers apart
HIGH = {"higher", "high", "female", "woman", "women", "girl", "child", "higher-pitched"}
LOW = {"lower", "low", "male", "man", "men", "boy", "deeper", "deep", "lower-pitched"}


def _hz(f0: float | None) -> str:
    return f"around {f0:.0f} Hz" if f0 else "pitch unclear"


def _spans(spans: list[list[float]]) -> str:
    shown = ", ".join(f"{a:.1f}–{b:.1f} s" for a, b in spans[:6])
    return shown + (f" and {len(spans) - 6} more" if len(spans) > 6 else "")


def _listing(found: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"speaker {s['speaker']} {_hz(s['f0_hz'])} ({_spans(s['spans'])})" for s in found
    )


def _thin(data: dict[str, Any]) -> str:
    """Why the speech is too thin to tell voices apart, else ""."""
    spans = data.get("speech_spans", [])
    speech = sum(b - a for a, b in spans)
    if not spans or not data["speakers"]:
        return "no speech long enough to compare voices was detected"
    if len(spans) == 1 and speech < THIN_S:
        return f"there is only one short stretch of speech ({speech:.1f} s)"
    return ""


def _unsure(data: dict[str, Any]) -> str:
    """Why the count of voices is a guess even with enough speech, else ""."""
    if data.get("unsure"):
        return (
            "the voices sit close to the line between fewer and more speakers "
            f"({_listing(data['speakers'])}), so the count is a best guess"
        )
    return ""


def count_speakers(data: dict[str, Any], choices: Sequence[str]) -> Finding:
    found = data["speakers"]
    count = len(found)
    thin = _thin(data) or _unsure(data)
    reason = thin or f"{count} voice(s) told apart by pitch and timbre: {_listing(found)}"
    noun = "speaker" if count == 1 else "speakers"
    answer = f"{count_word(count).capitalize()} {noun}"
    if found:
        answer += ": " + "; ".join(f"one {_hz(s['f0_hz'])} ({_spans(s['spans'])})" for s in found)
    answer += "."
    times = [(a, b, f"speaker {s['speaker']}") for s in found for a, b in s["spans"]]
    guess_count = max(count, 1) if thin else count
    return Finding(count_scores(guess_count, choices), reason, answer, not thin, times)


def _yes_no(choice: str) -> bool | None:
    words = set(tokens(choice))
    if words & {"yes", "same", "one", "single", "1"}:
        return True
    if words & {"no", "different", "two", "2", "multiple", "several"}:
        return False
    return None


def same_speaker(question: str, data: dict[str, Any], choices: Sequence[str]) -> Finding:
    found = data["speakers"]
    same = len(found) <= 1
    thin = _thin(data) or _unsure(data)
    asks_different = not re.search(r"\bsame\b", question.lower())
    scores = []
    for choice in choices:
        says = _yes_no(choice)
        if says is not None and set(tokens(choice)) & {"yes", "no"} and asks_different:
            says = not says  # "are there two different speakers?" - "yes" means not the same
        scores.append(0.0 if says is None else 1.0 if says == same else 0.0)
    if same:
        answer = "Yes, one voice throughout" if not asks_different else "No, one voice throughout"
        answer += f" ({_listing(found)})." if found else "."
    else:
        lead = "No" if not asks_different else "Yes"
        answer = f"{lead}: {count_word(len(found))} different voices: {_listing(found)}."
    reason = thin or f"{len(found)} voice(s) told apart by pitch and timbre: {_listing(found)}"
    times = [(a, b, f"speaker {s['speaker']}") for s in found for a, b in s["spans"]]
    return Finding(scores, reason, answer, not thin, times)


def compare_speaker(
    focus: Focus, question: str, data: dict[str, Any], choices: Sequence[str]
) -> Finding:
    """Is the named speaker higher or lower (male or female)? Pitch against the others."""
    found = data["speakers"]
    pos = focus.position or 2
    index = len(found) - 1 if pos == -1 else pos - 1
    target = found[index] if 0 <= index < len(found) else None
    others = [s["f0_hz"] for s in found if s is not target and s["f0_hz"]]
    thin = _thin(data)
    if target is None or not target["f0_hz"]:
        reason = thin or (
            f"only {count_word(len(found))} voice(s) told apart: {_listing(found)}"
            if target is None
            else f"the pitch of speaker {target['speaker']} is unclear"
        )
        return Finding([0.0] * len(choices), reason, "", False)
    f0 = target["f0_hz"]
    gendered = bool(re.search(r"\b(male|female|man|woman|gender|boy|girl)\b", question.lower()))
    if gendered or not others:
        high = f0 > 160.0
        what = (
            "a high voice (typical adult female or child range)"
            if high
            else ("a low voice (typical adult male range)")
        )
    else:
        ref = sorted(others)[len(others) // 2]
        high = f0 > ref
        what = f"{'higher' if high else 'lower'} than the other voice ({_hz(ref)})"
    scores = []
    for choice in choices:
        words = set(tokens(choice))
        if words & (HIGH if high else LOW):
            scores.append(1.0)
        else:
            scores.append(0.0)
    answer = f"Speaker {target['speaker']} ({_spans(target['spans'])}) is {_hz(f0)}: {what}."
    reason = thin or f"pitch per voice: {_listing(found)}"
    times = [(a, b, f"speaker {target['speaker']}") for a, b in target["spans"]]
    return Finding(scores, reason, answer, not thin, times)


def speaker_finding(
    focus: Focus, question: str, data: dict[str, Any], choices: Sequence[str]
) -> Finding:
    if focus.kind == "count":
        return count_speakers(data, choices)
    if focus.kind == "same":
        return same_speaker(question, data, choices)
    return compare_speaker(focus, question, data, choices)
