"""Is it there and when: the offline planner's answers about one thing (its kind: sound_naming).

"Is there a hen?" looks for the hen itself: the sound tagger's classes that fit "hen" (the
same matching as a "which sound" choice, see ``sound_match``) in each window of the
recording. "Does she say 'seven'?" looks for the word in the transcript, with its time.
"Is there music?" asks the tagger for music; the music analysis adds tempo and key only when
there is some. Speech comes from voice activity, the tagger's speech classes (in its windows
and on each stretch that stands out, tagged on its own) and the words recognised. Each answer
starts with Yes or No and names the evidence; ``strength`` (0..1, how strongly the evidence
says yes) is what the confidence is calibrated from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from agent.answer import Similarity, tokens
from agent.number_words import canonical
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_timeline import MIN_WORD_S
from agent.planners.sound_match import (
    NOT_A_SOURCE,
    group,
    name_profile,
    name_weights,
    vocabulary,
)

SOUND_YES = 0.2  # a window where the named sound's best class scores this much: it is there
SOUND_SURE = 0.35  # ... this much: no doubt
SPEECH_CLASS_SURE = 0.2  # a window where the tagger hears speech this much: someone speaks


@dataclass
class Presence:
    """Whether the thing asked about is there, in one answer sentence."""

    present: bool
    sentence: str  # starts with "Yes" or "No"
    strength: float  # 0..1: how strongly the evidence says it is there
    reason: str = ""  # the evidence in one sentence
    times: list[tuple[float, float, str]] = field(default_factory=list)
    heard: str = ""  # what the tools heard, for the answer's parentheses

    @property
    def decisive(self) -> float:
        """How far the evidence is from the line between yes and no (0: on it, 1: far)."""
        return float(min(1.0, abs(self.strength - 0.5) * 2))


def frames_of(
    evidence: Evidence,
) -> tuple[list[list[tuple[str, float]]], list[tuple[float, float]]]:
    """The tagger's classes per window and the windows' times; the whole-clip classes as one
    window when the tool gave no frames."""
    if evidence.frames:
        return [f.labels for f in evidence.frames], [(f.start, f.end) for f in evidence.frames]
    if evidence.labels:
        return [evidence.labels], [(0.0, evidence.duration_s or 0.0)]
    return [], []


def spans_above(
    profile: np.ndarray, times: Sequence[tuple[float, float]], floor: float
) -> list[tuple[float, float]]:
    """The stretches where ``profile`` is at least ``floor``, neighbouring windows joined."""
    out: list[tuple[float, float]] = []
    for value, (start, end) in zip(profile, times, strict=True):
        if value < floor:
            continue
        if out and start <= out[-1][1] + 0.05:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def refine(spans: list[tuple[float, float]], evidence: Evidence) -> list[tuple[float, float]]:
    """The tagger's windows are 0.96 s long: where a stretch that stands out from the
    background (the sound_events timeline, 10 ms steps) lies inside one, its times are the
    sound's."""
    stretches = [(float(t["start"]), float(t["end"])) for t in evidence.timeline or []]
    out = []
    for a, b in spans:
        inside = [(s, e) for s, e in stretches if s < b and e > a]
        if inside:
            first, last = min(s for s, _ in inside), max(e for _, e in inside)
            a, b = max(a - 0.25, first), min(b + 0.25, last)
        if not out or a > out[-1][1]:
            out.append((a, b))
        else:
            out[-1] = (out[-1][0], max(out[-1][1], b))
    return out


def peak(profile: np.ndarray) -> float:
    """The strongest two neighbouring windows, averaged (one odd window is not a sound);
    a single window as it is."""
    if profile.size < 2:
        return float(profile.max()) if profile.size else 0.0
    return float(np.max((profile[:-1] + profile[1:]) / 2))


def when_text(spans: list[tuple[float, float]], limit: int = 4) -> str:
    shown = [f"{a:.1f}–{b:.1f} s" for a, b in spans[:limit]]
    more = f" and {len(spans) - limit} more times" if len(spans) > limit else ""
    if len(shown) > 1:
        return "at " + ", ".join(shown[:-1]) + " and " + shown[-1] + more
    return ("at " + shown[0] + more) if shown else ""


def heard(evidence: Evidence, n: int = 3) -> str:
    """The tagger's main classes ("Duck (0.22), Speech (0.45)"), sources only."""
    top = [(lb, sc) for lb, sc in evidence.labels if lb not in NOT_A_SOURCE and sc >= 0.05]
    top.sort(key=lambda x: -x[1])
    return ", ".join(f"{lb} ({sc:.2f})" for lb, sc in top[:n]) or "nothing it can name"


def sound_presence(
    subject: str, evidence: Evidence, similarity: Similarity | None, *, steady: bool = False
) -> Presence | None:
    """Is the named sound there: its own classes, window by window. Where: the windows
    within half of its strongest (``steady``: every window where it is there at all, for a
    sound that goes on, such as music)."""
    frames, times = frames_of(evidence)
    if not frames or not subject:
        return None
    seen = {lb for labels in frames for lb, _ in labels}
    weights = name_weights(subject, vocabulary() or sorted(seen), similarity)
    profile, which = name_profile(weights, frames)
    strength = peak(profile)
    classes = sorted(weights, key=lambda lb: -weights[lb])[:3]
    looked_for = ", ".join(classes) or subject
    reason = f"classes that fit {subject!r}: {looked_for}; strongest {strength:.2f}"
    if strength >= SOUND_YES:
        floor = SOUND_YES if steady else max(SOUND_YES / 2, 0.5 * strength)
        spans = spans_above(profile, times, floor)
        spans = spans if steady else refine(spans, evidence)
        best = which[int(np.argmax(profile))]
        said = f"the sound classifier hears {best}, up to {float(profile.max()):.2f}"
        sentence = f"Yes: {subject} {when_text(spans)} ({said})."
        times_of = [(a, b, subject) for a, b in spans]
        return Presence(True, sentence, _scale(strength), reason, times_of, said)
    fitting = fitting_classes(weights)
    top = max((sc for labels in frames for lb, sc in labels if lb in fitting), default=0.0)
    said = f"the sound classifier hears {heard(evidence)}; {' / '.join(fitting)} at most {top:.2f}"
    sentence = f"No: nothing in it sounds like {subject} ({said})."
    # a name no class fits well ("washing machine": the tagger has none) leaves the "no" unsure
    fit = max(weights.values(), default=0.0)
    doubt = 0.5 * max(0.0, 0.8 - fit)
    return Presence(False, sentence, min(0.49, _scale(strength) + doubt), reason, heard=said)


def fitting_classes(weights: dict[str, float], n: int = 3) -> list[str]:
    """The classes that stand for a name: those that fit it at least half as well as the best
    (a "hen" is "Chicken, rooster"; "Duck" counts for it only a little, and is not named)."""
    best = max(weights.values(), default=0.0)
    ranked = sorted(weights, key=lambda lb: -weights[lb])
    return [lb for lb in ranked if weights[lb] >= 0.5 * best][:n]


def _scale(strength: float) -> float:
    """A class score of SOUND_YES sits on the line (0.5), SOUND_SURE and above is a clear yes,
    nothing at all a clear no."""
    if strength >= SOUND_YES:
        return float(min(1.0, 0.5 + 0.5 * (strength - SOUND_YES) / (SOUND_SURE - SOUND_YES)))
    return float(0.5 * strength / SOUND_YES)


def music_presence(evidence: Evidence, similarity: Similarity | None) -> Presence | None:
    """Is there music: the tagger's music classes; tempo and key only when there is."""
    found = sound_presence("music", evidence, similarity, steady=True)
    if found is None:
        return None
    if not found.present:
        found.sentence = f"No: no music was found (the sound classifier hears {heard(evidence)})."
        return found
    spans = [(a, b) for a, b, _ in found.times]
    where = _extent(spans, evidence.duration_s)
    kind = music_kind(evidence)
    facts = music_facts(evidence)
    sentence = f"Yes: music {where}"
    sentence += f"; it sounds like {kind}" if kind else ""
    sentence += f" ({facts})." if facts else "."
    found.sentence = sentence
    return found


def _extent(spans: list[tuple[float, float]], duration: float | None) -> str:
    if not spans:
        return ""
    covered = sum(b - a for a, b in spans)
    if duration and covered >= 0.85 * duration:
        return "throughout"
    return when_text(spans)


def music_kind(evidence: Evidence) -> str:
    """What kind of music the tagger hears: genres and moods, then instruments and singing."""
    scores: dict[str, float] = {}
    for labels in frames_of(evidence)[0]:
        for label, score in labels:
            scores[label] = max(scores.get(label, 0.0), score)
    styles = group("genre") | group("mood")
    instruments = (group("instrument") | group("singing")) - {"Musical instrument"}
    parts = []
    for members, floor in ((styles, 0.08), (instruments, 0.1)):
        top = sorted((s, lb) for lb, s in scores.items() if lb in members and s >= floor)[::-1]
        parts += [lb.lower() for _, lb in top[:2]]
    return ", ".join(dict.fromkeys(parts))


def music_facts(evidence: Evidence) -> str:
    music = evidence.music or {}
    facts = []
    if music.get("tempo_bpm"):
        facts.append(f"about {float(music['tempo_bpm']):.0f} beats per minute")
    if music.get("key") and float(music.get("key_confidence") or 0) >= 0.5:
        facts.append(f"key {music['key']}")
    return ", ".join(facts)


SPEECH_CLASSES = {
    "Speech", "Child speech, kid speaking", "Conversation", "Narration, monologue",
    "Speech synthesizer", "Chatter", "Hubbub, speech noise, speech babble",
}  # fmt: skip


# what whisper writes for a cry, a laugh or a sigh: not words anyone said
INTERJECTION = re.compile(r"a+h+|o+h+|u+h+|u+m+|h+m+|m+|h+a+(ha)*|huh|whoa|wow|ooh|aw+|ow+|eh")


def stretch_labels(evidence: Evidence) -> list[list[tuple[str, float]]]:
    """The tagger's classes for each stretch that stands out from the background, tagged on
    its own: a short word in a 0.96 s window full of background is drowned there ("Whoosh"
    at 0.50, "Speech" at 0.03) and heard on its own stretch ("Speech" at 0.82)."""
    return [
        [(str(x["label"]), float(x["score"])) for x in stretch.get("labels", [])]
        for stretch in evidence.timeline or []
    ]


def speech_presence(evidence: Evidence) -> Presence | None:
    """Is anyone speaking: the tagger's speech classes (window by window) and the words
    recognised; voice activity alone is fooled by grunts, barks and cries."""
    spans = evidence.speech_spans
    if spans is None and evidence.transcript is None and not evidence.labels:
        return None
    spans = spans or []
    seconds = sum(b - a for a, b in spans)
    frames, _ = frames_of(evidence)
    speech_class = max(
        (sc for labels in [*frames, evidence.labels, *stretch_labels(evidence)]
         for lb, sc in labels if lb in SPEECH_CLASSES),
        default=0.0,
    )  # fmt: skip
    words = len([w for w in tokens(evidence.transcript or "") if not INTERJECTION.fullmatch(w)])
    if not spans and words == 0:
        return Presence(False, "No: no speech was detected.", 0.05, "no voice activity")
    where = when_text(spans[:1]).replace("at ", "from ", 1).replace("–", " s to ", 1)
    where = where.replace(" s s", " s")
    more = f" and in {len(spans) - 1} more span(s)" if len(spans) > 1 else ""
    # whisper writes words over a car horn too: words alone count where voice activity agrees
    heard_words = (words >= 1 and speech_class >= 0.05) or (words >= 3 and seconds > 0)
    if speech_class >= SPEECH_CLASS_SURE or heard_words:
        strength = min(1.0, 0.55 + 0.1 * min(seconds, 2) + speech_class / 2 + 0.05 * min(words, 3))
        sentence = f"Yes: speech {where}{more}" if spans else "Yes: words were recognised"
        if evidence.transcript:
            sentence += f' ("{_clip(evidence.transcript, 60)}")'
        reason = f"{seconds:.1f} s of voice activity, speech class up to {speech_class:.2f}"
        return Presence(True, sentence + ".", strength, reason,
                        [(a, b, "speech") for a, b in spans])  # fmt: skip
    others = [lb for lb, sc in evidence.labels if lb not in NOT_A_SOURCE and sc >= 0.1][:2]
    what = f"the sound classifier hears {' and '.join(others)}" if others else "no speech class"
    marked = f"voice activity marked {seconds:.1f} s" + (
        f" ({spans[0][0]:.1f}–{spans[0][1]:.1f} s)" if spans else "")  # fmt: skip
    if spans:
        sentence = f"No, probably not: {marked}, but {what}" + (
            " and no words were recognised." if not words
            else f' and only "{_clip(evidence.transcript or "", 60)}".'
        )  # fmt: skip
    else:  # whisper wrote words where no other tool hears a voice
        sentence = (
            f"No, probably not: no voice activity was found and {what}; the speech-to-text"
            f' model\'s "{_clip(evidence.transcript or "", 60)}" is not confirmed by either.'
        )
    strength = 0.2 + 0.1 * min(seconds, 2) + speech_class
    return Presence(False, sentence, min(0.45, strength), f"{marked}, speech class "
                    f"up to {speech_class:.2f}, {words} word(s)")  # fmt: skip


def word_presence(subject: str, evidence: Evidence) -> Presence | None:
    """Is the word said: the transcript's words (numbers as words), with their times."""
    if evidence.transcript is None and evidence.utterances is None:
        if evidence.speech_spans == []:
            return Presence(False, f'No: there is no speech, so "{subject}" is not said.', 0.05)
        return None
    wanted = [canonical(w) for w in tokens(subject)]
    timed = [  # words of no length are whisper echoing its hint, not words said
        (a, b, canonical(w))
        for _, _, _, words in evidence.utterances or []
        for a, b, word in words
        if b - a >= MIN_WORD_S
        for w in tokens(word)
    ]
    if not timed and any(words for *_, words in evidence.utterances or []):
        return Presence(False, f'No: "{subject}" is not said (no word was heard clearly).', 0.2)
    said = [w for _, _, w in timed] or [canonical(w) for w in tokens(evidence.transcript or "")]
    text = evidence.transcript or " ".join(u[2] for u in evidence.utterances or [])
    hits = _phrase_at(said, wanted)
    # how sure whisper was of what it heard (0.8 when it did not say)
    sure = evidence.transcript_certainty if evidence.transcript_certainty is not None else 0.8
    if hits:
        times = [(timed[i][0], timed[i + len(wanted) - 1][1]) for i in hits] if timed else []
        when = f" {when_text(times)}" if times else ""
        sentence = f'Yes: "{subject}" is said{when} (the transcript reads "{_clip(text, 80)}").'
        return Presence(True, sentence, 0.5 + 0.5 * sure, f"{len(hits)} time(s) in the transcript",
                        [(a, b, subject) for a, b in times])  # fmt: skip
    if not said:
        return Presence(False, f'No: no words were recognised, so "{subject}" is not said.', 0.15)
    speech = speech_presence(evidence) if evidence.speech_spans == [] else None
    if speech is not None and not speech.present:
        # whisper writes words over a dog's bark too: with no voice activity at all, quoting
        # them as "the transcript" would read as if someone spoke; say that nobody seems to
        why = speech.sentence.split(": ", 1)[-1]
        sentence = f'No: "{subject}" is not said, and nobody seems to speak: {why}'
    else:
        sentence = f'No: "{subject}" is not in the transcript ("{_clip(text, 80)}").'
    return Presence(False, sentence, 0.5 * (1.0 - sure), "not in the transcript")


def _phrase_at(said: list[str], wanted: list[str]) -> list[int]:
    """Where ``wanted`` occurs in ``said`` (a plural 's' aside)."""
    if not wanted:
        return []

    def same(a: str, b: str) -> bool:
        return a == b or a.rstrip("s") == b.rstrip("s")

    n = len(wanted)
    return [
        i for i in range(len(said) - n + 1) if all(same(said[i + k], wanted[k]) for k in range(n))
    ]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
