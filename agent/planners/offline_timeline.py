"""Counting and order for the offline rule planner, from time-stamped evidence.

Sounds: the ``sound_events`` timeline (stretches that stand out from the background, each
tagged by YAMNet on its own). Speech: ``transcribe`` run per voice-activity span (one text
per utterance, with its time) and the ``speech_activity`` spans. Each function returns a
score per choice, the finding in one sentence, and the times it rests on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent.answer import Similarity, tokens
from agent.number_words import canonical, count_word, is_number_word, leading_number
from agent.planners.offline_evidence import Timed, Utterance
from agent.planners.question_focus import NUMERIC_RE, ORDINAL, Focus, named_word
from agent.planners.sound_match import GENERIC_LABELS, choice_fit


@dataclass
class Finding:
    """A count or a position found in the evidence."""

    scores: list[float]
    reason: str  # the evidence, with times
    answer: str  # one sentence answering the question
    decided: bool = True  # False: the evidence cannot settle it
    times: list[tuple[float, float, str]] = field(default_factory=list)
    certainty: float | None = None  # 0..1: how sure the evidence it rests on is (None: no say)


SHORT_UTTERANCE_S = 1.2  # a span this short is one spoken item
SPLIT_SOURCES_CERTAINTY = 0.4  # a count of one source among several stand-out sounds
MIN_WORD_S = 0.05  # a timed word shorter than this is an echo, not a word (whisper repeats)


def spoken_items(
    spoken: list[Utterance] | None,
    keep: Callable[[str], bool] = bool,
    short_as_one: bool = True,
) -> tuple[list[Timed], bool]:
    """One (start, end, word) per spoken item, and whether any times are the words' own.

    A short span counts as one item (whisper may glue "two three" into "23", or echo its
    prompt) unless ``short_as_one`` is off (to find what is said at a time, where the
    words' own times matter more than their number). A longer one gives one item per
    word: at the word's own time where word timestamps are there (words of no length left
    out: echoes), else at the span's time. ``keep`` filters the words (e.g. numbers only).
    """
    items: list[Timed] = []
    timed = False
    for start, end, text, words in spoken or []:
        plain = [w for w in tokens(text) if keep(w)]
        if end - start <= SHORT_UTTERANCE_S and (short_as_one or not words):
            items += [(start, end, plain[0])] if plain else []
            continue
        own = [
            (a, b, w)
            for a, b, word in words
            if b - a >= MIN_WORD_S
            for w in tokens(word)
            if keep(w)
        ]
        if words:
            items += own or [(start, end, w) for w in plain[:1]]
            timed = True
        else:
            items += [(start, end, w) for w in plain]
    return items, timed


def _labels(event: dict[str, Any]) -> list[tuple[str, float]]:
    return [(x["label"], float(x["score"])) for x in event.get("labels", [])]


def _top(event: dict[str, Any], n: int = 2) -> str:
    return ", ".join(label for label, _ in _labels(event)[:n]) or "a sound"


def _span(start: float, end: float) -> str:
    return f"{start:.1f}–{end:.1f} s"


# -- counting ---------------------------------------------------------------------------------
def count_scores(count: int, choices: Sequence[str]) -> list[float]:
    scores = []
    for choice in choices:
        n = leading_number(choice)
        if n is None:
            scores.append(0.0)
        else:
            scores.append(1.0 if n == count else 0.25 if abs(n - count) == 1 else 0.0)
    return scores


def count_sounds(
    focus: Focus,
    timeline: list[dict[str, Any]],
    choices: Sequence[str],
    similarity: Similarity | None,
) -> Finding:
    events = list(timeline)
    what = "sound events"
    if focus.subject and similarity is not None and len(events) > 1:
        # Events that share a tagged class are one source; count the source that fits the
        # subject best (a mis-tagged repetition still shares a class with its neighbours).
        fit = []
        for event in events:
            labels = [label for label, _ in _labels(event)[:3]] or ["sound"]
            fit.append(float(np.max(similarity(focus.subject, labels))))
        groups = _sources(events)
        if len(groups) > 1:
            best = max(range(len(groups)), key=lambda g: max(fit[i] for i in groups[g]))
            events = [events[i] for i in groups[best]]
            what = f'"{focus.subject}" sounds'
    count = len(events)
    listed = "; ".join(f"{_span(e['start'], e['end'])} {_top(e)}" for e in events[:12])
    reason = f"{count} {what} stand out from the background" + (f": {listed}" if listed else "")
    left_out = len(timeline) - count
    if left_out:
        reason += f" ({left_out} other sound(s) left out as another source)"
    answer = f"{count_word(count).capitalize()} {'time' if count == 1 else 'times'}"
    starts = ", ".join(f"at {e['start']:.1f} s" for e in events[:8])
    answer += f" ({starts})." if events else "."
    return Finding(
        count_scores(count, choices),
        reason,
        answer,
        decided=count > 0,
        times=[(e["start"], e["end"], _top(e)) for e in events],
        # a source told apart from the others by its tags may have lost a repetition to them
        certainty=SPLIT_SOURCES_CERTAINTY if left_out else None,
    )


def _sources(events: list[dict[str, Any]]) -> list[list[int]]:
    """Groups of events linked by a shared class among their top three (single linkage)."""
    parent = list(range(len(events)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    tops = [{label for label, _ in _labels(e)[:3]} - GENERIC_LABELS for e in events]
    for i in range(len(events)):
        for j in range(i + 1, len(events)):
            if tops[i] & tops[j]:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(events)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def misheard_numbers(spoken: list[Utterance] | None) -> list[Timed]:
    """Short spans (one spoken item each) read as a word that is not a number, among spans
    read as numbers: in a row of spoken numbers such a span is a number misheard ("nine"
    read as "guys"), so a count of the numbers counts it. None when most short spans are
    not numbers (then the words are what they say)."""
    short = [(a, b, tokens(text)) for a, b, text, _ in spoken or [] if b - a <= SHORT_UTTERANCE_S]
    numbers = [words for *_, words in short if any(is_number_word(w) for w in words)]
    if len(numbers) < 2 or 2 * len(numbers) <= len(short):
        return []
    return [
        (a, b, f'"{words[0]}"?')
        for a, b, words in short
        if words and not any(is_number_word(w) for w in words)
    ]


def count_speech(
    focus: Focus,
    question: str,
    spoken: list[Utterance] | None,
    spans: list[tuple[float, float]] | None,
    choices: Sequence[str],
) -> Finding:
    """Numbers or words, or one named word: from the per-utterance transcript, with each
    word's own time where word timestamps are there (see ``spoken_items``)."""
    numeric = bool(NUMERIC_RE.search(question.lower()))
    named = named_word(question)
    if named:
        wanted = {canonical(named)}
        items, timed = spoken_items(spoken, lambda w: canonical(w) in wanted)
    else:
        items, timed = spoken_items(spoken, is_number_word if numeric else bool)
        if numeric:
            items = sorted(items + misheard_numbers(spoken), key=lambda x: x[0])
    if not spoken and spans and not named:
        items = [(a, b, "speech") for a, b in spans if b - a <= SHORT_UTTERANCE_S]
    count = len(items)
    noun = f'times "{named}"' if named else "numbers" if numeric else "words"
    listed = ", ".join(f"{w} ({a:.1f}–{b:.1f} s)" for a, b, w in items[:15])
    reason = f"{count} {noun} spoken" + (f": {listed}" if listed else "")
    if timed:
        reason += " (times from word timestamps)"
    if named:
        answer = f"{count_word(count).capitalize()} {'time' if count == 1 else 'times'}"
        answer += f" ({', '.join(f'at {a:.1f} s' for a, _, _ in items[:8])})." if items else "."
    else:
        answer = f"{count_word(count).capitalize()} {noun if count != 1 else noun[:-1]}"
        answer += f": {', '.join(w for _, _, w in items[:15])}." if items else "."
    decided = count > 0 or (named is not None and bool(spoken))
    return Finding(count_scores(count, choices), reason, answer, decided=decided, times=items)


# -- order ------------------------------------------------------------------------------------
def _target_index(focus: Focus, n: int, match_anchor) -> int | None:
    if n == 0:
        return None
    if focus.position is not None:
        index = n - 1 if focus.position == -1 else focus.position - 1
        return index if 0 <= index < n else None
    if focus.relation in ("after", "before") and focus.anchor:
        anchor = match_anchor(focus.anchor)
        if anchor is None:
            return None
        step = 1 if focus.relation == "after" else -1
        index = anchor + step
        return index if 0 <= index < n else None
    return None


def order_sounds(
    focus: Focus,
    timeline: list[dict[str, Any]],
    choices: Sequence[str],
    similarity: Similarity | None,
) -> Finding:
    """The sound at a position (first, last, after X ...), scored against the choices.

    Neighbouring stretches that the tagger hears as the same source are merged first (one
    source with pauses in it is one event for the order)."""
    events = _merge_same_source(timeline, similarity)
    n = len(events)
    if not n:
        return Finding([0.0] * len(choices), "no sound stands out from the background", "", False)
    # match[i][j]: how well choice j fits event i
    match = np.array([choice_fit(_labels(e), choices, similarity) for e in events])
    listed = "; ".join(f"{i + 1}. {_span(e['start'], e['end'])} {_top(e)}" for i, e in
                       enumerate(events[:12]))  # fmt: skip

    def anchor_of(name: str) -> int | None:
        if similarity is None:
            return None
        fit = [
            float(np.max(similarity(name, [lb for lb, _ in _labels(e)[:3]] or ["sound"])))
            for e in events
        ]
        return int(np.argmax(fit))

    if focus.relation == "at" and focus.anchor:
        t = float(focus.anchor)
        inside = [i for i, e in enumerate(events) if e["start"] - 0.25 <= t <= e["end"] + 0.25]
        index = inside[0] if inside else None
    else:
        index = _target_index(focus, n, anchor_of)
    if index is None:
        reason = f"the sounds in time order: {listed}"
        return Finding([0.0] * len(choices), reason, "", False)
    own = match[index]
    best_elsewhere = np.max(np.delete(match, index, axis=0), axis=0) if n > 1 else 0 * own
    # a choice that fits another event better is probably that event
    scores = np.clip(own - 0.5 * np.maximum(0.0, best_elsewhere - own), 0, None)
    event = events[index]
    where = _where(focus, index, n)
    reason = f"the sounds in time order: {listed}; the {where} is {_top(event)}"
    answer = f"The {where} is {_top(event)} ({_span(event['start'], event['end'])})."
    return Finding(
        [float(s) for s in scores],
        reason,
        answer,
        times=[(e["start"], e["end"], _top(e)) for e in events],
    )


def _where(focus: Focus, index: int, n: int) -> str:
    if focus.relation == "at":
        return f"sound at {focus.anchor} s"
    if focus.relation in ("after", "before"):
        return f"sound {focus.relation} {focus.anchor}"
    if index == n - 1 and focus.position == -1:
        return "last sound"
    return f"{_ordinal(index + 1)} sound"


def _ordinal(n: int) -> str:
    return {v: k for k, v in ORDINAL.items()}.get(n, f"{n}th")


def _merge_same_source(
    timeline: list[dict[str, Any]], similarity: Similarity | None
) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for event in timeline:
        if merged and _same_source(merged[-1], event, similarity):
            last = merged[-1]
            keep = last if _labels(last)[:1] >= _labels(event)[:1] else event
            merged[-1] = {**keep, "start": last["start"], "end": event["end"]}
        else:
            merged.append(dict(event))
    return merged


def _same_source(a: dict[str, Any], b: dict[str, Any], similarity: Similarity | None) -> bool:
    top_a = [label for label, _ in _labels(a)[:3]]
    top_b = [label for label, _ in _labels(b)[:3]]
    if not top_a or not top_b:
        return False
    return top_a[0] == top_b[0] and len(set(top_a) & set(top_b)) >= 2


def order_speech(
    focus: Focus,
    spoken: list[Utterance] | None,
    choices: Sequence[str],
) -> Finding:
    """The word at a position in the sequence of utterances (first, third, after X, at 2 s),
    with each word's own time where word timestamps are there."""
    items, timed = spoken_items(spoken, short_as_one=focus.relation != "at")
    n = len(items)
    said = [canonical(w) for _, _, w in items]

    def anchor_of(name: str) -> int | None:
        wanted = [canonical(w) for w in tokens(name)]
        hits = [i for i, w in enumerate(said) if w in wanted]
        return hits[0] if hits else None

    if focus.relation == "at" and focus.anchor:
        t = float(focus.anchor)
        inside = [i for i, (a, b, _) in enumerate(items) if a - 0.25 <= t <= b + 0.25]
        # the item whose middle is nearest the time (several words may share a span)
        index = min(inside, key=lambda i: abs(t - (items[i][0] + items[i][1]) / 2), default=None)
    else:
        index = _target_index(focus, n, anchor_of)
    listed = ", ".join(f"{w} ({a:.1f}–{b:.1f} s)" for a, b, w in items[:15])
    source = " (times from word timestamps)" if timed else ""
    if index is None:
        reason = f"the words in order{source}: {listed or 'none'}"
        return Finding([0.0] * len(choices), reason, "", False)
    word = said[index]
    scores = [1.0 if word in {canonical(w) for w in tokens(c)} else 0.0 for c in choices]
    where = _where(focus, index, n).replace("sound", "word")
    a, b, text = items[index]
    reason = f"the words in order{source}: {listed}; the {where} is {text} ({a:.1f}–{b:.1f} s)"
    answer = f'The {where} is "{text}" (at {a:.1f} s).'
    return Finding(scores, reason, answer, times=items)
