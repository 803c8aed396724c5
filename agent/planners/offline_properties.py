"""Yes or no about a property: the music fast or in a minor key, the speaker a woman or angry,
the recording noisy. The offline planner's answers to such questions, from what the tools
measure.

Each answer starts with Yes or No, or "I can't tell" and why, and then the evidence in one
sentence, with the line it was judged by (fast: ``FAST_BPM`` or more; a man's voice: a median
pitch under 155 Hz ...). What no tool measures (a speaker's emotion or accent) is said so,
with what was heard, as a guess. A property of something that is not there (the tempo of
music where there is none, the gender of a speaker where nobody speaks) is a No.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent.answer import Similarity
from agent.planners.offline_evidence import Evidence
from agent.planners.offline_presence import (
    SPEECH_CLASSES,
    frames_of,
    heard,
    music_presence,
    peak,
    speech_presence,
)
from agent.planners.question_focus import OpenAsk
from agent.planners.sound_match import NOT_A_SOURCE, group

FAST_BPM = 120.0  # a tempo of this or more is fast
SLOW_BPM = 80.0  # ... this or less is slow; between the two, moderate
KEY_SURE = 0.5  # the music analysis' key correlation under which the key is uncertain
# the signal tool's voice register (agent/local_models/signal.py): a median pitch under
# 155 Hz is a man's range, over 165 Hz a woman's or a child's
MAN_MAX_HZ, WOMAN_MIN_HZ = 155.0, 165.0
CHILD_CLASS = "Child speech, kid speaking"
CHILD_SURE = 0.2  # the tagger's child-speech class this high: a child speaks
LOUD_LUFS = -23.0  # louder than the EBU R128 broadcast level is loud; under it, quiet
NOISE_SURE = 0.3  # a background class this strong (two neighbouring windows): noise
NOISE_STEADY = 0.15  # ... this strong, in a recording that never falls silent: noise
SILENT_SHARE = 0.1  # a recording silent (under -50 dBFS) this share of the time has quiet gaps
SOUNDING_PAUSES = 0.2  # this share of a recording neither speech nor silence: a background
CLIP_DBFS = -0.1  # a peak this close to full scale may be clipped
# the tagger's mood classes for the music moods a question names
MOOD_CLASS = {
    "happy": "Happy music", "sad": "Sad music", "calm": "Tender music",
    "angry": "Angry music", "excited": "Exciting music", "scared": "Scary music",
    "tense": "Scary music",
}  # fmt: skip
NOISE_CLASSES = {
    "Noise", "White noise", "Pink noise", "Static", "Hum", "Mains hum", "Environmental noise",
    "Wind noise (microphone)", "Traffic noise, roadway noise", "Buzz", "Crowd",
    "Hubbub, speech noise, speech babble", "Air conditioning", "Mechanical fan",
}  # fmt: skip
# what a voice does that no tool reads as a feeling, but that a listener would mention
VOCAL_CUES = {
    "Shout",
    "Yell",
    "Screaming",
    "Laughter",
    "Giggle",
    "Crying, sobbing",
    "Whispering",
    "Sigh",
    "Groan",
    "Whimper",
    "Wail, moan",
}


@dataclass
class Judged:
    """A yes/no answer about a property."""

    text: str  # starts with "Yes", "No" or "I can't tell"
    reason: str  # the measure and the line it was judged by
    strength: float | None  # 0..1 support for the answer as given
    guess: bool = False  # nothing measures it, or the measure is unsure: a best guess


def pace(bpm: float) -> str:
    """Fast, slow or moderate, by the lines above."""
    return "fast" if bpm >= FAST_BPM else "slow" if bpm <= SLOW_BPM else "moderate"


def _beyond(value: float, line: float, scale: float) -> float:
    """Support for an answer that is ``value`` away from its line (0.5 on it, up to 0.95)."""
    return float(min(0.95, 0.5 + abs(value - line) / scale))


def property_answer(ask: OpenAsk, evidence: Evidence, similarity: Similarity | None) -> Judged:
    """The answer to a yes/no question about a property (``OpenAsk.form == "property"``)."""
    if ask.target == "music":
        music = music_presence(evidence, similarity)
        if music is not None and not music.present:
            what = {"tempo": "tempo", "mode": "key", "key": "key", "mood": "mood"}.get(
                ask.prop, "loudness"
            )
            text = (
                f"No: no music was found, so there is no {what} to judge (the sound "
                f"classifier hears {heard(evidence)})."
            )
            return Judged(text, "the sound classifier's music classes", 1 - music.strength)
    if ask.target == "speech" and ask.prop in ("gender", "child", "emotion", "accent", "pitch"):
        speech = speech_presence(evidence)
        if speech is not None and not speech.present:
            why = speech.sentence.split(": ", 1)[-1]
            return Judged(
                f"No: nobody seems to speak ({why.rstrip('.')}).", "no speech", 1 - speech.strength
            )
    handler = {
        "tempo": _tempo,
        "mode": _mode,
        "key": _key,
        "pitch": _voice_pitch,
        "mood": _mood,
        "loudness": _loudness,
        "gender": _gender,
        "child": _child,
        "emotion": _unmeasured,
        "accent": _unmeasured,
        "noise": _noise,
        "clipping": _clipping,
    }[ask.prop]
    return handler(ask, evidence)


def _cannot(why: str, reason: str) -> Judged:
    return Judged(f"I can't tell: {why}.", reason, None, guess=True)


def _tempo(ask: OpenAsk, evidence: Evidence) -> Judged:
    bpm = (evidence.music or {}).get("tempo_bpm")
    if not bpm:
        return _cannot("the music analysis found no steady beat to measure", "no tempo")
    bpm = float(bpm)
    kind = pace(bpm)
    lines = f"fast here means {FAST_BPM:.0f} or more, slow {SLOW_BPM:.0f} or less"
    said = f"about {bpm:.0f} beats per minute, which is {kind} ({lines})"
    reason = f"tempo {bpm:.0f} BPM (the music analysis' beat tracking)"
    if ask.value == "fast":
        yes, line = kind == "fast", FAST_BPM
    elif ask.value == "slow":
        yes, line = kind == "slow", SLOW_BPM
    else:  # "what's the tempo like": no value to say yes or no to
        return Judged(f"It is {kind}: {said}.", reason, None)
    word = "Yes" if yes else "No"
    return Judged(f"{word}: {said}.", reason, _beyond(bpm, line, 60))


def _mode(ask: OpenAsk, evidence: Evidence) -> Judged:
    music = evidence.music or {}
    key, sure = music.get("key"), float(music.get("key_confidence") or 0.0)
    if not key:
        return _cannot("the music analysis found no tonal content to estimate a key from", "no key")
    mode = "minor" if str(key).endswith("minor") else "major"
    reason = f"key {key}, template correlation {sure:.2f} (under {KEY_SURE} the key is uncertain)"
    if sure < KEY_SURE:
        return _cannot(
            f"the music analysis leans towards {key}, but its correlation "
            f"({sure:.2f}) is under {KEY_SURE}, where the key is uncertain",
            reason,
        )
    if not ask.value:  # "is it major or minor": the mode first
        return Judged(
            f"{mode.capitalize()}: the music analysis hears {key} (correlation {sure:.2f}).",
            reason,
            _beyond(sure, 0.3, 0.8),
        )
    word = "Yes" if mode == ask.value else "No"
    return Judged(
        f"{word}: the music analysis hears {key} (correlation {sure:.2f}).",
        reason,
        _beyond(sure, 0.3, 0.8),
    )


SEMITONE = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}


def _pitch_class(key: str) -> tuple[int, str]:
    """ "F# minor" -> (6, "minor"); "Bb major" -> (10, "major") (enharmonic names alike)."""
    name, _, mode = key.partition(" ")
    shift = {"#": 1, "b": -1}.get(name[1:2], 0)
    return (SEMITONE[name[0].upper()] + shift) % 12, mode


def _key(ask: OpenAsk, evidence: Evidence) -> Judged:
    music = evidence.music or {}
    key, sure = music.get("key"), float(music.get("key_confidence") or 0.0)
    if not key:
        return _cannot("the music analysis found no tonal content to estimate a key from", "no key")
    reason = f"key {key}, template correlation {sure:.2f} (under {KEY_SURE} the key is uncertain)"
    if sure < KEY_SURE:
        return _cannot(
            f"the music analysis leans towards {key}, but its correlation ({sure:.2f}) is under "
            f"{KEY_SURE}, where the key is uncertain",
            reason,
        )
    word = "Yes" if _pitch_class(str(key)) == _pitch_class(ask.value) else "No"
    return Judged(
        f"{word}: the music analysis hears {key} (correlation {sure:.2f}).",
        reason,
        _beyond(sure, 0.3, 0.8),
    )


def _voice_pitch(ask: OpenAsk, evidence: Evidence) -> Judged:
    """A high or a low (deep) voice, by the same lines as a man's or a woman's."""
    f0 = _pitch(evidence)
    if f0 is None:
        return _cannot("no voice pitch could be measured", "no pitch")
    reason = f"median voice pitch {f0:.0f} Hz"
    lines = f"low here is under {MAN_MAX_HZ:.0f} Hz, high over {WOMAN_MIN_HZ:.0f} Hz"
    level = "low" if f0 < MAN_MAX_HZ else "high" if f0 > WOMAN_MIN_HZ else "in between"
    if not ask.value:
        return Judged(
            f"It is {level}: the voice sits at about {f0:.0f} Hz ({lines}).", reason, None
        )
    if level == "in between":
        return _cannot(
            f"the voice sits at about {f0:.0f} Hz, between low and high ({lines})", reason
        )
    word = "Yes" if level == ask.value else "No"
    line = MAN_MAX_HZ if level == "low" else WOMAN_MIN_HZ
    text = f"{word}: the voice sits at about {f0:.0f} Hz, which is {level} ({lines})."
    return Judged(text, reason, _beyond(f0, line, 60))


def _scores(evidence: Evidence, classes: set[str] | frozenset[str]) -> dict[str, float]:
    """Each class's strength: its best two neighbouring windows (the whole clip's score when
    the tool gave no windows)."""
    frames, _ = frames_of(evidence)
    out = {}
    for label in classes:
        profile = np.array([dict(labels).get(label, 0.0) for labels in frames], dtype=float)
        if profile.size:
            out[label] = peak(profile)
    return {k: v for k, v in out.items() if v > 0}


def _mood(ask: OpenAsk, evidence: Evidence) -> Judged:
    moods = _scores(evidence, set(MOOD_CLASS.values()))
    wanted = MOOD_CLASS.get(ask.value, "")
    ranked = sorted(moods.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{lb.lower()} {sc:.2f}" for lb, sc in ranked[:3]) or "none"
    reason = f"the sound classifier's mood classes: {shown}"
    tempo = (evidence.music or {}).get("tempo_bpm")
    pace_said = (
        f"; it is {pace(float(tempo))}, about {float(tempo):.0f} beats per minute"
        if (tempo)
        else ""
    )
    if not ranked or ranked[0][1] < 0.1:
        return _cannot(f"the sound classifier's mood classes stay low ({shown}){pace_said}", reason)
    top, score = ranked[0]
    if not wanted:  # "is it happy or sad": the mood first
        mood = top.replace(" music", "").lower()
        return Judged(
            f"{mood.capitalize()}, to the sound classifier ({top.lower()} {score:.2f}){pace_said}.",
            reason,
            _beyond(score, 0.05, 0.4),
        )
    if top == wanted:
        return Judged(
            f"Yes: the sound classifier hears it as {top.lower()} ({score:.2f}){pace_said}.",
            reason,
            _beyond(score, 0.05, 0.4),
        )
    own = moods.get(wanted, 0.0)
    return Judged(
        f"No: the sound classifier hears it as {top.lower()} ({score:.2f}; "
        f"{wanted.lower()} {own:.2f}){pace_said}.",
        reason,
        _beyond(score - own, 0.0, 0.4),
    )


def _level(evidence: Evidence) -> tuple[float, str] | None:
    """The recording's loudness (integrated LUFS, else its RMS level) and how it was measured."""
    lufs = (evidence.signal or {}).get("loudness_lufs")
    if lufs is not None:
        return float(lufs), f"about {float(lufs):.0f} LUFS integrated loudness"
    if evidence.rms_dbfs is not None:
        return evidence.rms_dbfs, f"an RMS level of {evidence.rms_dbfs:.0f} dBFS"
    return None


def _loudness(ask: OpenAsk, evidence: Evidence) -> Judged:
    level = _level(evidence)
    if level is None:
        return _cannot("no level was measured", "no level")
    value, said = level
    loud = value > LOUD_LUFS
    reason = f"{said}; louder than {LOUD_LUFS:.0f} (the broadcast level of EBU R128) is loud"
    asked_loud = ask.value != "quiet"
    word = "Yes" if loud == asked_loud else "No"
    feel = "loud" if loud else "quiet"
    text = (
        f"{word}: it is {feel}, {said} (louder than {LOUD_LUFS:.0f}, the broadcast level, "
        "counts as loud)."
    )
    return Judged(text, reason, _beyond(value, LOUD_LUFS, 20))


def _pitch(evidence: Evidence) -> float | None:
    f0 = (evidence.signal or {}).get("f0_median_hz")
    return float(f0) if f0 else None


def _gender(ask: OpenAsk, evidence: Evidence) -> Judged:
    f0 = _pitch(evidence)
    register = str((evidence.signal or {}).get("register", ""))
    ranges = (
        f"men usually speak under {MAN_MAX_HZ:.0f} Hz, women and children over "
        f"{WOMAN_MIN_HZ:.0f} Hz"
    )
    if f0 is None:
        return _cannot("no voice pitch could be measured", "no pitch")
    reason = f"median voice pitch {f0:.0f} Hz ({register or 'no register'}); {ranges}"
    if not register.startswith(("low", "high")):
        return _cannot(
            f"the voice sits at about {f0:.0f} Hz, between the usual ranges ({ranges}"
            ", and too little voiced speech leaves the register unclear)",
            reason,
        )
    male = register.startswith("low")
    heard_as = "a man's" if male else "a woman's or a child's"
    word = "Yes" if male == (ask.value == "male") else "No"
    line = MAN_MAX_HZ if male else WOMAN_MIN_HZ
    text = f"{word}: the voice sits at about {f0:.0f} Hz, in {heard_as} range ({ranges})."
    return Judged(text, reason, _beyond(f0, line, 60))


def _child(ask: OpenAsk, evidence: Evidence) -> Judged:
    f0 = _pitch(evidence)
    child = _scores(evidence, {CHILD_CLASS}).get(CHILD_CLASS, 0.0)
    register = str((evidence.signal or {}).get("register", ""))
    pitch = f"the voice sits at about {f0:.0f} Hz" if f0 else "no voice pitch was measured"
    reason = f"child-speech class up to {child:.2f}; {pitch}"
    if child >= CHILD_SURE:
        return Judged(
            f"Yes: the sound classifier hears child speech ({child:.2f}); {pitch}.",
            reason,
            _beyond(child, 0.1, 0.4),
        )
    if f0 is not None and register.startswith("low"):
        return Judged(
            f"No: {pitch}, in a man's range (under {MAN_MAX_HZ:.0f} Hz), and the sound "
            f"classifier's child-speech class stays at {child:.2f}.",
            reason,
            0.8,
        )
    return _cannot(
        f"{pitch}, where women's and children's voices overlap, and the sound "
        f"classifier's child-speech class stays at {child:.2f}",
        reason,
    )


def _unmeasured(ask: OpenAsk, evidence: Evidence) -> Judged:
    """Emotion and accent: no tool measures them; say what was heard."""
    what = "emotion in a voice" if ask.prop == "emotion" else "accent"
    heard_parts = []
    speech = speech_presence(evidence)
    if speech is not None and speech.present:
        heard_parts.append(
            speech.sentence.split(": ", 1)[-1]
            .rstrip(".")
            .replace("speech from", "someone speaks from", 1)
        )
    cues = _scores(evidence, VOCAL_CUES)
    strong = sorted(((sc, lb) for lb, sc in cues.items() if sc >= 0.1), reverse=True)[:2]
    if strong:
        heard_parts.append(
            "the sound classifier hears "
            + " and ".join(f"{lb.lower()} ({sc:.2f})" for sc, lb in strong)
        )
    said = f"; what was heard: {'; '.join(heard_parts)}" if heard_parts else ""
    return _cannot(f"none of the tools measures {what}{said}", f"no tool measures {what}")


def _background(evidence: Evidence) -> tuple[dict[str, float], set[str]]:
    """The strength of each class that is background rather than the recording's subject
    (speech, singing, music, rooms; the clip's main sound when there is no speech or music)."""
    frames, _ = frames_of(evidence)
    seen = {lb for labels in frames for lb, _ in labels}
    foreground = set(group("human")) | set(group("music")) | set(group("place")) | SPEECH_CLASSES
    foreground |= NOT_A_SOURCE | {"Human voice", "Inside, small room", "Inside, large room or hall"}
    sources = [
        (lb, sc)
        for lb, sc in sorted(evidence.labels, key=lambda x: -x[1])
        if lb not in NOT_A_SOURCE
    ]
    if sources and sources[0][0] not in foreground and sources[0][0] not in NOISE_CLASSES:
        # a dog barking is what the recording is of, and so are the classes of its branch:
        # "Animal" on top does not make "Dog" and "Domestic animals, pets" a background
        foreground |= {sources[0][0]} | _branch(sources[0][0])
    candidates = (seen - foreground) | (seen & NOISE_CLASSES)
    candidates -= {"Whoosh, swoosh, swish", "Sound effect", "Inside, public space"}
    return _scores(evidence, candidates), foreground


# Ontology branches a recording's main sound may belong to, the narrowest first.
SOURCE_BRANCHES = ("bird", "insect", "animal", "engine", "vehicle", "alarm", "tool", "domestic")


def _branch(label: str) -> frozenset[str]:
    """The narrowest branch of sources holding ``label`` (empty when none does)."""
    for name in SOURCE_BRANCHES:
        members = group(name)
        if label in members:
            return members
    return frozenset()


def _noise(ask: OpenAsk, evidence: Evidence) -> Judged:
    scores, _ = _background(evidence)
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    silent = (evidence.signal or {}).get("silence_ratio")
    gaps = silent is not None and float(silent) >= SILENT_SHARE
    top = ranked[0][1] if ranked else 0.0
    named = ", ".join(f"{lb} ({sc:.2f})" for lb, sc in ranked[:2])
    falls = (
        ""
        if silent is None
        else "it never falls under -50 dBFS"
        if float(silent) < 0.01
        else (f"it is under -50 dBFS {float(silent):.0%} of the time")
    )
    reason = f"background classes: {named or 'none'}; {falls or 'no silence measured'}"
    noisy = top >= NOISE_SURE or (top >= NOISE_STEADY and not gaps)
    clean_asked = ask.value == "clean"
    if noisy:
        word = "No" if clean_asked else "Yes"
        text = f"{word}: besides {_subject(evidence)}, the sound classifier hears {named}"
        text += f"; {falls}." if falls else "."
        return Judged(text, reason, _beyond(top, NOISE_STEADY, 0.4))
    sounding = _between_words(evidence)
    if sounding is not None and sounding >= SOUNDING_PAUSES:
        word = "No" if clean_asked else "Yes"
        what = (  # a class too faint to mean anything is not named
            f"; the sound classifier's strongest other class is {ranked[0][0]} ({ranked[0][1]:.2f})"
            if ranked and ranked[0][1] >= 0.1
            else ""
        )
        text = (
            f"{word}: the pauses in the speech are not silent ({sounding:.0%} of the "
            f"recording is neither speech nor under -50 dBFS){what}."
        )
        return Judged(text, reason, _beyond(sounding, SOUNDING_PAUSES - 0.1, 0.4))
    if gaps:
        word = "Yes" if clean_asked else "No"
        extra = (
            f"; nothing else reaches {NOISE_STEADY}"
            if not ranked
            else f"; the strongest other sound, {ranked[0][0]}, stays under {NOISE_SURE}"
        )
        text = (
            f"{word}: between the sounds it falls silent (under -50 dBFS {float(silent):.0%} of "
            f"the time), and the sound classifier hears {heard(evidence)}"
        )
        return Judged(text + extra + ".", reason, _beyond(float(silent), 0.0, 0.4))
    return _cannot(
        f"{falls or 'no silence was measured'}, but the sound classifier names nothing "
        f"besides {_subject(evidence)} ({heard(evidence)})",
        reason,
    )


def _between_words(evidence: Evidence) -> float | None:
    """The share of the recording that is neither speech (voice activity) nor silence (under
    -50 dBFS): something sounds in the pauses. None without both measures."""
    silent = (evidence.signal or {}).get("silence_ratio")
    duration = evidence.duration_s or (evidence.signal or {}).get("duration_s")
    if silent is None or not duration or evidence.speech_spans is None:
        return None
    speech = sum(b - a for a, b in evidence.speech_spans)
    return max(0.0, 1.0 - min(1.0, speech / float(duration)) - float(silent))


def _subject(evidence: Evidence) -> str:
    labels = {lb for lb, sc in evidence.labels if sc >= 0.1}
    if labels & SPEECH_CLASSES:
        return "the speech"
    if "Music" in labels:
        return "the music"
    top = [lb for lb, _ in sorted(evidence.labels, key=lambda x: -x[1]) if lb not in NOT_A_SOURCE]
    return top[0].lower() if top else "the main sound"


def _clipping(ask: OpenAsk, evidence: Evidence) -> Judged:
    peak_dbfs = evidence.peak_dbfs
    if peak_dbfs is None:
        return _cannot("no level was measured", "no peak")
    reason = f"peak {peak_dbfs:.1f} dBFS"
    if peak_dbfs < CLIP_DBFS:
        return Judged(
            f"No: its peak stays at {peak_dbfs:.1f} dBFS, under full scale, so no "
            "sample is cut off.",
            reason,
            _beyond(peak_dbfs, CLIP_DBFS, 6),
        )
    return _cannot(
        f"its peak reaches full scale ({peak_dbfs:.1f} dBFS), where clipping happens, "
        "but no tool counts clipped samples",
        reason,
    )
