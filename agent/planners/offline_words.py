"""Answers in words, for questions asked without choices.

The answer says what was asked first, as a person would: a yes/no question starts with Yes
or No (or "I can't tell" and why), "when" with the times, "what kind" with the kind, "how
many" with the number, "who" with the speaker, "what is said" with the words. Then the
evidence in one sentence. ``Worded.strength`` says how strongly the evidence supports the
answer (0..1) for the calibrated confidence; None where there is nothing to weigh.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.answer import Similarity, tokens
from agent.number_words import stray_words
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_presence import (
    Presence,
    music_facts,
    music_kind,
    music_presence,
    sound_presence,
    speech_presence,
    when_text,
    word_presence,
)
from agent.planners.offline_properties import FAST_BPM, KEY_SURE, SLOW_BPM, pace, property_answer
from agent.planners.offline_timeline import Finding
from agent.planners.question_focus import OpenAsk
from agent.planners.sound_naming import branch_of, name_sound, naming_sentence

TOO_SHORT_S = 0.2  # shorter clips hold too little to tell sounds or words apart (a word: 0.25 s+)
QUIET_DBFS = -50.0  # a clip whose peak stays below this is as good as silent
QUIET_RMS_DBFS = -50.0  # ... or whose level stays below this (faint hiss, room tone)


@dataclass
class Worded:
    text: str  # the answer, first words first
    details: str  # the evidence behind it
    strength: float | None = None  # 0..1 support for the answer as given; None: not weighed
    cannot_tell: bool = False  # the recording cannot answer it (silent, too short)
    guess: bool = False  # no tool measures what is asked, or the measure is unsure


def cannot_tell(evidence: Evidence, finding: Finding | None) -> str:
    """Why the recording cannot decide the question (silent, too short), else ""."""
    if evidence.duration_s is not None and evidence.duration_s < TOO_SHORT_S:
        return f"the recording lasts only {evidence.duration_s:.2f} s"
    if evidence.peak_dbfs is not None and evidence.peak_dbfs < QUIET_DBFS:
        return f"the recording is silent (peak {evidence.peak_dbfs:.0f} dBFS)"
    if evidence.rms_dbfs is not None and evidence.rms_dbfs < QUIET_RMS_DBFS:
        return f"the recording is nearly silent (level {evidence.rms_dbfs:.0f} dBFS)"
    if finding is not None and not finding.decided:
        return finding.reason
    return ""


def only_silence(evidence: Evidence) -> bool:
    labels = [label for label, score in evidence.labels if score >= 0.2]
    return bool(labels) and all(label == "Silence" for label in labels)


def describe(kind: str, evidence: Evidence) -> str:
    """What the tools found, in a few sentences (the evidence behind an answer)."""
    parts = []
    if evidence.transcript and kind in ("speech_content", "speaker", "general"):
        parts.append(f'The speech says: "{evidence.transcript}".')
    if evidence.labels:
        top = sorted(evidence.labels, key=lambda x: -x[1])[:3]
        parts.append("The main sounds are " + ", ".join(f"{lbl} ({s:.2f})" for lbl, s in top) + ".")
    if evidence.music and evidence.music.get("tempo_bpm"):
        m = evidence.music
        parts.append(f"Tempo about {m['tempo_bpm']:.0f} BPM, key {m.get('key') or 'unclear'}.")
    if evidence.signal:
        s = evidence.signal
        parts.append(
            f"It lasts {s.get('duration_s', 0):.1f} s; voice register: {s.get('register', '?')}."
        )
    if evidence.transcript and kind not in ("speech_content", "speaker", "general"):
        parts.append(f'Speech in it says: "{evidence.transcript}".')
    if evidence.speech_seconds is not None and not evidence.transcript:
        heard = "nothing was recognised" if evidence.transcribed else "speech-to-text did not run"
        parts.append(
            f"Speech detected: {evidence.speech_seconds:.1f} s, but {heard}."
            if evidence.speech_seconds > 0
            else "No speech was detected in the recording."
        )
    if only_silence(evidence):
        parts.insert(0, "The recording is silent.")
    return " ".join(parts) or "The tools found nothing to report about this recording."


def level_sentence(evidence: Evidence) -> str:
    """How loud the recording is, in the measures people use (integrated loudness first)."""
    signal = evidence.signal or {}
    lufs = signal.get("loudness_lufs")
    parts = []
    if evidence.rms_dbfs is not None:
        parts.append(f"RMS level {evidence.rms_dbfs:.0f} dBFS")
    if evidence.peak_dbfs is not None:
        parts.append(f"peak {evidence.peak_dbfs:.0f} dBFS")
    if lufs is None and not parts:
        return ""
    if lufs is None:
        return parts[0][0].upper() + "; ".join(parts)[1:] + "."
    loud = float(lufs)
    feel = (
        "loud"
        if loud > -14
        else "moderately loud"
        if loud > -24
        else "quiet"
        if loud > -40
        else "very quiet"
    )
    extra = f" ({', '.join(parts)})" if parts else ""
    return f"{feel.capitalize()}: about {loud:.0f} LUFS integrated loudness{extra}."


def presence_of(ask: OpenAsk, evidence: Evidence, similarity: Similarity | None) -> Presence | None:
    """Whether the thing a yes/no question asks about is there (None: no evidence)."""
    if ask.target == "word":
        return word_presence(ask.subject, evidence)
    if ask.target == "speech":
        return speech_presence(evidence)
    if ask.target == "music":
        return music_presence(evidence, similarity)
    return sound_presence(ask.subject or "sound", evidence, similarity)


def _yes_no(ask: OpenAsk, evidence: Evidence, similarity: Similarity | None, details: str,
            silent: str) -> Worded:  # fmt: skip
    if silent:  # nothing is in a silent recording: that answers "is there X"
        return Worded(f"No: {silent}.", details, 0.95)
    found = presence_of(ask, evidence, similarity)
    if found is None:
        return Worded("I can't tell: the tools that would hear it gave no evidence.", details,
                      cannot_tell=True)  # fmt: skip
    text = found.sentence
    if ask.and_kind and found.present and ask.target == "sound":
        naming = name_sound(evidence, branch_of(ask.subject))
        if naming is not None:
            text = text.rstrip(".") + f"; it sounds like {naming.phrase}."
    strength = found.strength if found.present else 1.0 - found.strength
    return Worded(text, f"Evidence: {found.reason}. {details}".strip(), strength)


def _when(ask: OpenAsk, evidence: Evidence, similarity: Similarity | None, details: str) -> Worded:
    if ask.target == "speech":
        spans = evidence.speech_spans or []
        if not spans:
            return Worded("Never: no speech was detected.", details, 0.9)
        if ask.edge == "start":
            text = f"At {spans[0][0]:.1f} s (the first speech lasts until {spans[0][1]:.1f} s)."
        elif ask.edge == "end":
            text = f"At {spans[-1][1]:.1f} s (the last speech starts at {spans[-1][0]:.1f} s)."
        else:
            text = when_text(spans).capitalize() + "."
        return Worded(text, details, 0.85)
    found = presence_of(ask, evidence, similarity)
    what = ask.subject or ask.target
    if found is None:
        return Worded("I can't tell: the tools that would hear it gave no evidence.", details,
                      cannot_tell=True)  # fmt: skip
    if not found.present:
        stretches = [(float(t["start"]), float(t["end"])) for t in evidence.timeline or []]
        if ask.target == "sound" and stretches:  # asked "when": something there may be it
            where = when_text(stretches[:3])
            text = (
                f"Perhaps {where}: something stands out from the background there, but it does "
                f"not sound like {what} to the sound classifier ({found.heard})."
            )
            return Worded(text, details, 0.3)
        return Worded(f"Not at all: {found.sentence[4:]}", details, 1.0 - found.strength)
    spans = [(a, b) for a, b, _ in found.times]
    if ask.edge == "start" and spans:
        text = f"At {spans[0][0]:.1f} s ({what} {when_text(spans)}; {found.heard})."
    elif ask.edge == "end" and spans:
        text = f"At {spans[-1][1]:.1f} s ({what} {when_text(spans)}; {found.heard})."
    else:
        text = f"{when_text(spans).capitalize() or 'Throughout'} ({found.heard})."
    return Worded(text, f"Evidence: {found.reason}. {details}".strip(), found.strength)


def _kind(ask: OpenAsk, evidence: Evidence, similarity: Similarity | None, details: str) -> Worded:
    if ask.target == "music":
        found = music_presence(evidence, similarity)
        if found is not None and not found.present:
            return Worded(found.sentence.replace("No: no music", "There is no music", 1),
                          details, 1.0 - found.strength)  # fmt: skip
        kind = music_kind(evidence)
        facts = music_facts(evidence)
        if kind:
            text = kind[0].upper() + kind[1:] + (f", {facts}." if facts else ".")
            return Worded(text, details, found.strength if found else None)
    naming = name_sound(evidence, branch_of(ask.subject))
    if naming is None:
        return Worded("I can't tell: the sound classifier names nothing in it.", details,
                      cannot_tell=True)  # fmt: skip
    return Worded(naming_sentence(naming), details, naming.strength)


def answer_in_words(
    ask: OpenAsk | None,
    kind: str,
    question: str,
    evidence: Evidence,
    finding: Finding | None,
    similarity: Similarity | None = None,
) -> Worded:
    """The answer to a question without choices, and the evidence behind it."""
    details = describe(kind, evidence)
    why = cannot_tell(evidence, finding)
    silent = why if why.startswith("the recording is") else ""
    if ask is not None and ask.form == "yes_no" and finding is None:
        if why and not silent:
            return Worded(f"I can't tell: {why}.", details, cannot_tell=True)
        return _yes_no(ask, evidence, similarity, details, silent)
    if ask is not None and ask.form == "property" and finding is None:
        if why and not silent:
            return Worded(f"I can't tell: {why}.", details, cannot_tell=True)
        if silent and ask.prop != "loudness":  # a silent recording has no tempo, no speaker
            return Worded(f"No: {silent}.", details, 0.95)
        judged = property_answer(ask, evidence, similarity)
        return Worded(judged.text, f"Evidence: {judged.reason}. {details}".strip(),
                      judged.strength, guess=judged.guess)  # fmt: skip
    if why:
        return Worded(f"I can't tell: {why}.", details, cannot_tell=True)
    if finding is not None and finding.answer:
        return Worded(finding.answer, f"Evidence: {finding.reason}.", finding.certainty)
    if ask is not None and ask.form == "when":
        return _when(ask, evidence, similarity, details)
    if ask is not None and ask.form == "kind":
        return _kind(ask, evidence, similarity, details)
    return _plain(kind, question, evidence, details)


def _said(transcript: str, certainty: float | None, details: str) -> Worded:
    """What is said: the transcript, as sure as whisper was of its least sure words; a word
    that is not a number among numbers was misheard (``stray_words``), whatever whisper's
    certainty of it, so the reading is not to be trusted (strength 0)."""
    stray = stray_words(tokens(transcript))
    if stray:
        odd = " and ".join(f'"{w}"' for w in stray)
        misheard = "is probably a number" if len(stray) == 1 else "are probably numbers"
        details = f"{details} The reading is mostly numbers, so {odd} {misheard} misheard."
        certainty = 0.0
    return Worded(f'It says: "{transcript}"', details, certainty)


def _plain(kind: str, question: str, evidence: Evidence, details: str) -> Worded:
    """Who, what is said, how long or loud, the tempo; else what is heard."""
    q = question.lower()
    signal = evidence.signal or {}
    if (
        kind == "speaker"
        and not signal.get("f0_median_hz")
        and re.search(r"\b(man|woman|male|female|gender|boy|girl)\b", q)
    ):
        return Worded(
            "I can't tell whether it is a man or a woman: no voice pitch could be measured.",
            details,
            cannot_tell=True,
        )
    if kind == "speaker" and signal.get("f0_median_hz"):
        f0 = float(signal["f0_median_hz"])
        register = str(signal.get("register", ""))
        who = (
            "A man, probably"
            if register.startswith("low")
            else "A woman or a child, probably"
            if register.startswith("high")
            else "Hard to say whether a man or a woman"
        )
        return Worded(f"{who}: the voice sits at about {f0:.0f} Hz.", details)
    if kind == "speech_content" and evidence.transcript:
        return _said(evidence.transcript, evidence.transcript_certainty, details)
    if kind == "speech_content" and not evidence.speech_spans:
        return Worded("Nothing: no speech was detected.", details, 0.9)
    if kind == "signal" and evidence.duration_s and re.search(r"how long|duration", q):
        return Worded(f"It lasts {evidence.duration_s:.1f} s.", details)
    if kind == "signal" and re.search(r"loud|volume|level|decibel|quiet", q):
        level = level_sentence(evidence)
        if level:
            return Worded(level, details)
    if kind == "signal" and re.search(r"silen", q) and signal.get("silence_ratio") is not None:
        share = float(signal["silence_ratio"])
        return Worded(f"Silent for about {share:.0%} of its {evidence.duration_s or 0:.1f} s.",
                      details)  # fmt: skip
    if kind == "music" and evidence.music and evidence.music.get("tempo_bpm"):
        found = music_presence(evidence, None)
        if found is not None and not found.present:  # a beat tracker finds a tempo in rain too
            return Worded(found.sentence.replace("No: no music", "There is no music", 1), details)
        return Worded(describe_music(q, evidence), details)
    naming = name_sound(evidence)  # what is heard, as a person would name it
    if naming is not None:
        return Worded(naming_sentence(naming), details, naming.strength)
    return Worded(details, "")


def describe_music(question: str, evidence: Evidence) -> str:
    """Music in words: its pace and mood, what plays, then the measures behind them ("Slow,
    tender music with piano: about 72 beats per minute, in C minor."). A question about the
    tempo or the key gets that first."""
    music = evidence.music or {}
    bpm = float(music["tempo_bpm"])
    kind = pace(bpm)
    sure = float(music.get("key_confidence") or 0.0)
    key = str(music.get("key") or "")
    key_said = (f"in {key}" if sure >= KEY_SURE else f"perhaps in {key} (the key is uncertain)"
                ) if key else ""  # fmt: skip
    tempo_said = f"about {bpm:.0f} beats per minute"
    lines = f"fast here is {FAST_BPM:.0f} or more, slow {SLOW_BPM:.0f} or less"
    if re.search(r"\b(tempo|bpm|beats?|fast|slow|speed|pace)\b", question):
        return f"{kind.capitalize()}: {tempo_said} ({lines})" + (f", {key_said}." if key_said
                                                                   else ".")  # fmt: skip
    if re.search(r"\b(key|major|minor|scale|tonality)\b", question) and key:
        return f"{key_said[0].upper()}{key_said[1:]}, {tempo_said}."
    words = [w.strip() for w in music_kind(evidence).split(",") if w.strip()]
    moods = [w.replace(" music", "") for w in words if w.endswith(" music") and w.split()[0] in (
        "happy", "sad", "tender", "exciting", "angry", "scary")]  # fmt: skip
    # genres ("classical music", "music for children"); the rest is what plays
    styles = [w for w in words if "music" in w and w.replace(" music", "") not in moods]
    plays = [w for w in words if "music" not in w]
    head = ", ".join([kind if kind != "moderate" else "moderately paced", *moods[:1]])
    style = styles[0] if styles else "music"
    text = f"{head[0].upper()}{head[1:]} {style}"
    text += f" with {' and '.join(plays[:2])}" if plays else ""
    return text + f": {tempo_said}" + (f", {key_said}." if key_said else ".")
