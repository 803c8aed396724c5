"""How the offline rule planner weighs tool evidence for each answer choice.

Each source of evidence (transcript, sound classes, music facts, signal facts) gives every
choice a score in [0, 1] with a one-line reason; the planner adds them with weights that
depend on the question type and picks the best-supported choice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agent.answer import NUMBER_NAMES, Similarity, number_value, tokens

# The tonic is a capital letter (so the article "a" is no key); the mode words any case.
KEY_NAME = re.compile(
    r"\b([A-G])\s*(#|♯|b|♭|[Ss]harp|[Ff]lat)?\s*((?i:major|minor|maj|min))?(?![\w#])"
)
KEY_LOWER = re.compile(r"\b([a-g])\s*(#|♯|b|♭|sharp|flat)?\s*(major|minor)\b")  # "a minor"
NOT_A_SOURCE = {"Silence"}
GENERIC_LABELS = {
    "Animal", "Wild animals", "Domestic animals, pets", "Livestock, farm animals, working animals",
    "Vehicle", "Motor vehicle (road)", "Music", "Musical instrument", "Inside, small room",
    "Inside, large room or hall", "Outside, rural or natural", "Outside, urban or manmade",
    "Environmental noise", "Sound effect", "Mechanisms", "Liquid", "Water", "Noise",
    "Speech", "Human voice",
}  # fmt: skip
LOW_WORDS = {"male", "man", "men", "boy", "deep", "low", "masculine", "father", "husband"}
HIGH_WORDS = {"female", "woman", "women", "girl", "child", "kid", "high", "feminine", "mother"}


@dataclass
class SourceScore:
    source: str  # transcript | sounds | music | signal
    scores: list[float]
    reason: str


@dataclass
class Evidence:
    transcript: str | None = None
    labels: list[tuple[str, float]] = field(default_factory=list)
    music: dict[str, Any] | None = None
    signal: dict[str, Any] | None = None
    speech_seconds: float | None = None
    hinted_transcript: bool = False
    duration_s: float | None = None
    peak_dbfs: float | None = None
    rms_dbfs: float | None = None
    option_logprobs: dict[str, float] = field(default_factory=dict)  # whisper, option forced
    speech_spans: list[tuple[float, float]] | None = None


SOURCE_TOOL = {
    "transcript": "transcribe",
    "listening": "transcribe",
    "sounds": "sound_events",
    "music": "music_analysis",
    "signal": "signal_stats",
}


def flatten_sources(
    tool_data: list[tuple[str, dict[str, Any]]],
) -> list[tuple[str, dict[str, Any]]]:
    """Expand composite results (caption / ask_audio carry their tools' data as sources)."""
    flat: list[tuple[str, dict[str, Any]]] = []
    for tool, data in tool_data:
        nested = data.get("sources")
        if isinstance(nested, list):
            flat.extend((item["tool"], item.get("data", {})) for item in nested if "tool" in item)
        else:
            flat.append((tool, data))
    return flat


def collect_evidence(tool_data: list[tuple[str, dict[str, Any]]]) -> Evidence:
    evidence = Evidence()
    plain: list[str] = []
    hinted: list[str] = []  # transcripts made with the answer options as hints
    for tool, data in flatten_sources(tool_data):
        if data.get("_error"):
            continue
        if isinstance(data.get("duration_s"), int | float):
            evidence.duration_s = float(data["duration_s"])
        if isinstance(data.get("peak_dbfs"), int | float):
            evidence.peak_dbfs = float(data["peak_dbfs"])
        if isinstance(data.get("rms_dbfs"), int | float):
            evidence.rms_dbfs = float(data["rms_dbfs"])
        if tool == "transcribe" or ("text" in data and "segments" in data):
            text = str(data.get("text", "")).strip()
            bucket = hinted if data.get("prompt") else plain
            for item in data.get("option_scores") or []:
                evidence.option_logprobs[str(item["option"])] = float(item["logprob"])
            if text and text not in bucket:  # the same transcript may arrive twice
                bucket.append(text)
        elif tool == "sound_events":
            known = {label for label, _ in evidence.labels}
            evidence.labels += [
                (x["label"], float(x["score"]))
                for x in data.get("labels", [])
                if x["label"] not in known
            ]
        elif tool == "music_analysis":
            evidence.music = data
        elif tool == "signal_stats":
            evidence.signal = data
        elif tool == "speech_activity":
            evidence.speech_seconds = float(data.get("speech_seconds", 0.0))
            evidence.speech_spans = [(x["start"], x["end"]) for x in data.get("spans", [])]
    # Short speech is easily misheard; a transcript that knew the options wins.
    evidence.transcript = " ".join(hinted or plain) or None
    evidence.hinted_transcript = bool(hinted)
    return evidence


def _stems(text: str) -> set[str]:
    """Words with a plural 's' dropped, so "birds" meets "Bird" (no stop words)."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in tokens(text)} - {
        "and", "or", "the", "of", "a",
    }  # fmt: skip


def normalise_numbers(words: Sequence[str]) -> list[str]:
    return [NUMBER_NAMES.get(int(w), w) if w.isdigit() and int(w) <= 20 else w for w in words]


def transcript_scores(
    transcript: str, choices: Sequence[str], similarity: Similarity | None
) -> SourceScore:
    spoken = normalise_numbers(tokens(transcript))
    said = set(spoken)
    lexical = []
    for choice in choices:
        words = set(normalise_numbers(tokens(choice)))
        lexical.append(len(words & said) / len(words) if words else 0.0)
    # Several short choices all heard (whisper repeats the hint list on short clips): the
    # one heard first, and most often, is the likelier one.
    full = [i for i, x in enumerate(lexical) if x == 1.0]
    if len(full) > 1 and all(len(tokens(choices[i])) == 1 for i in full):
        first = {i: spoken.index(normalise_numbers(tokens(choices[i]))[0]) for i in full}
        freq = {i: spoken.count(normalise_numbers(tokens(choices[i]))[0]) for i in full}
        ranked = sorted(full, key=lambda i: (first[i], -freq[i]))
        for rank, i in enumerate(ranked):
            lexical[i] = 1.0 - 0.05 * rank
    semantic = _similarities(similarity, transcript, choices) if transcript else None
    if semantic is not None:
        scores = [max(lx, 0.8 * float(sm)) for lx, sm in zip(lexical, semantic, strict=True)]
    else:
        scores = lexical
    return SourceScore("transcript", scores, f'the transcript reads "{_clip_text(transcript)}"')


def listening_scores(logprobs: dict[str, float], choices: Sequence[str]) -> SourceScore | None:
    """Whisper's reading of each choice forced as the transcript, as probabilities."""
    if not logprobs or any(c not in logprobs for c in choices):
        return None
    values = np.array([logprobs[c] for c in choices], dtype=float)
    probs = np.exp(values - values.max())
    probs = probs / probs.sum()
    best = choices[int(np.argmax(probs))]
    reason = (
        "read with each choice forced as the transcript, whisper finds "
        + ", ".join(f'"{c}" {p:.2f}' for c, p in zip(choices, probs, strict=True))
        + f' (best: "{best}")'
    )
    return SourceScore("listening", [round(float(p), 3) for p in probs], reason)


def sound_scores(
    labels: list[tuple[str, float]], choices: Sequence[str], similarity: Similarity | None
) -> SourceScore:
    # "Silence" names no sound source: zero-padded clips score it highly, and it would
    # otherwise pull the similarity towards whichever choice sounds quietest.
    top = sorted((x for x in labels if x[0] not in NOT_A_SOURCE and x[1] > 0), key=lambda x: -x[1])[
        :10
    ]
    if not top:
        return SourceScore("sounds", [0.0] * len(choices), "no sound classes were found")
    # Broad AudioSet parents (Animal, Vehicle ...) match many choices a little; the specific
    # classes below them say more.
    specificity = np.array([0.4 if label in GENERIC_LABELS else 1.0 for label, _ in top])
    weights = np.array([s for _, s in top], dtype=float) * specificity
    weights = weights / weights.sum()
    scores = []
    for choice in choices:
        choice_words = _stems(choice)
        if similarity is not None:
            sims = np.clip(np.asarray(similarity(choice, [label for label, _ in top]), float), 0, 1)
        else:
            sims = np.zeros(len(top))
        sims = sims * specificity
        lexical = np.array([1.0 if choice_words & _stems(label) else 0.0 for label, _ in top])
        per_label = np.maximum(sims, 0.9 * lexical)
        # The best single match matters most; the weighted mean rewards consistent evidence.
        scores.append(
            float(
                0.6 * np.max(per_label * np.sqrt(weights / weights.max()))
                + 0.4 * float(per_label @ weights)
            )
        )
    named = ", ".join(f"{label} ({score:.2f})" for label, score in top[:4])
    return SourceScore("sounds", scores, f"the sound classifier hears {named}")


def music_scores(music: dict[str, Any], choices: Sequence[str]) -> SourceScore:
    scores = [0.0] * len(choices)
    reasons = []
    tempo = music.get("tempo_bpm")
    numbers = [_first_number(c) for c in choices]
    if tempo and any(n is not None for n in numbers):
        for i, n in enumerate(numbers):
            if n is not None:
                # Half/double-time errors are common; accept them at a discount.
                ratio = min(abs(n - tempo), 0.5 * abs(n - 2 * tempo), 0.5 * abs(n - tempo / 2))
                scores[i] = max(scores[i], float(np.exp(-ratio / 8.0)))
        reasons.append(f"the tempo is about {tempo:.0f} BPM")
    key = music.get("key")
    if key:
        tonic, mode = _parse_key(key)
        for i, choice in enumerate(choices):
            found = _parse_key(choice)
            if found[0] and tonic:
                scores[i] = max(
                    scores[i], 0.6 * (found[0] == tonic) + 0.4 * (found[1] in (None, mode))
                )
            lower = choice.lower()
            if mode == "minor" and re.search(r"\b(minor|sad|melanchol|dark)", lower):
                scores[i] = max(scores[i], 0.3)
            if mode == "major" and re.search(r"\b(major|happy|bright|cheerful)", lower):
                scores[i] = max(scores[i], 0.3)
        reasons.append(f"the key estimate is {key}")
    if re.search(r"\b(fast|slow|upbeat|tempo)\b", " ".join(choices).lower()) and tempo:
        for i, choice in enumerate(choices):
            lower = choice.lower()
            if re.search(r"\b(fast|upbeat|energetic|quick)\b", lower):
                scores[i] = max(scores[i], 0.6 if tempo >= 115 else 0.1)
            if re.search(r"\b(slow|calm|relaxed|gentle)\b", lower):
                scores[i] = max(scores[i], 0.6 if tempo < 95 else 0.1)
    return SourceScore("music", scores, "; ".join(reasons) or "no musical facts decide it")


def signal_scores(signal: dict[str, Any], choices: Sequence[str], question: str) -> SourceScore:
    scores = [0.0] * len(choices)
    reasons = []
    register = str(signal.get("register", ""))
    if register.startswith(("low", "high")):
        wanted = LOW_WORDS if register.startswith("low") else HIGH_WORDS
        other = HIGH_WORDS if register.startswith("low") else LOW_WORDS
        for i, choice in enumerate(choices):
            words = set(tokens(choice))
            if words & wanted and not words & other:
                scores[i] = 0.7
        reasons.append(f"the voice register is {register}")
    duration = signal.get("duration_s")
    if duration and re.search(r"\b(how long|duration|seconds|length)\b", question.lower()):
        for i, choice in enumerate(choices):
            n = _first_number(choice)
            if n is not None:
                scores[i] = max(
                    scores[i], float(np.exp(-abs(n - duration) / max(1.0, duration / 4)))
                )
        reasons.append(f"the recording lasts {duration:.1f} s")
    return SourceScore("signal", scores, "; ".join(reasons) or "no signal fact decides it")


WEIGHTS: dict[str, dict[str, float]] = {
    "speech_content": {
        "transcript": 1.0,
        "listening": 1.5,
        "sounds": 0.3,
        "music": 0.2,
        "signal": 0.3,
    },
    "speaker": {"transcript": 0.4, "sounds": 0.8, "music": 0.2, "signal": 1.0},
    "music": {"transcript": 0.3, "sounds": 0.8, "music": 1.0, "signal": 0.3},
    "signal": {"transcript": 0.3, "sounds": 0.5, "music": 0.3, "signal": 1.0},
    "sound": {"transcript": 0.4, "sounds": 1.0, "music": 0.3, "signal": 0.3},
    "general": {"transcript": 0.7, "sounds": 1.0, "music": 0.5, "signal": 0.5},
}


def score_choices(
    kind: str,
    question: str,
    choices: Sequence[str],
    evidence: Evidence,
    similarity: Similarity | None,
    *,
    uniform: bool = False,
) -> tuple[np.ndarray, list[SourceScore]]:
    """Support per choice. ``uniform``: every source counts the same (a second opinion)."""
    sources: list[SourceScore] = []
    if evidence.transcript:
        sources.append(transcript_scores(evidence.transcript, choices, similarity))
    listened = listening_scores(evidence.option_logprobs, choices)
    if listened is not None:
        sources.append(listened)
    if evidence.labels:
        sources.append(sound_scores(evidence.labels, choices, similarity))
    if evidence.music:
        sources.append(music_scores(evidence.music, choices))
    if evidence.signal:
        sources.append(signal_scores(evidence.signal, choices, question))
    weights = WEIGHTS.get(kind, WEIGHTS["general"])
    total = np.zeros(len(choices))
    for source in sources:
        weight = 1.0 if uniform else weights.get(source.source, 0.3)
        total += weight * np.asarray(source.scores, dtype=float)
    return total, sources


def _similarities(similarity: Similarity | None, text: str, options: Sequence[str]):
    if similarity is None:
        return None
    return np.clip(np.asarray(similarity(text, list(options)), dtype=float), 0, 1)


def _first_number(text: str) -> float | None:
    found = re.search(r"\d+(?:\.\d+)?", text)
    if found:
        return float(found.group())
    value = number_value(text)
    return float(value) if value is not None else None


def _parse_key(text: str) -> tuple[str | None, str | None]:
    """("F#", "minor") from "F# minor", "in the key of F sharp minor" ...; a key named with
    its mode wins over a bare capital letter (which may be the article "A")."""
    if not re.search(r"\b(major|minor|key|maj|min)\b", text, re.I):
        return None, None
    found = [*KEY_NAME.finditer(text), *KEY_LOWER.finditer(text)]
    if not found:
        return None, None
    best = next((m for m in found if m.group(3)), found[0])
    accidental = (best.group(2) or "").lower()
    accidental = {"♯": "#", "sharp": "#", "♭": "b", "flat": "b"}.get(accidental, accidental)
    mode = (best.group(3) or "").lower()
    mode = {"maj": "major", "min": "minor"}.get(mode, mode) or None
    return best.group(1).upper() + accidental, mode


def _clip_text(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
