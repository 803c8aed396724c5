"""The local tools' results, read once into one ``Evidence`` for every part of the offline
planner: the choice scorer, counting and order, speakers and the answers in words.

Time-stamped evidence keeps its times: the sound tagger's frames (its top classes every
0.48 s) and stretches that stand out from the background, the per-utterance transcript with
each word's time, the voice-activity spans and the speakers found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agent.answer import tokens
from agent.speech_loops import cut_loop

Timed = tuple[float, float, str]  # (start, end, word or text)
Utterance = tuple[float, float, str, list[Timed]]  # a span, its text and its timed words
Labels = list[tuple[str, float]]  # (class, score), best first


@dataclass(frozen=True)
class Frame:
    """The sound tagger's view of one short window: its top classes there."""

    start: float
    end: float
    labels: Labels


@dataclass
class Evidence:
    transcript: str | None = None
    labels: Labels = field(default_factory=list)  # whole-clip classes
    music: dict[str, Any] | None = None
    signal: dict[str, Any] | None = None
    speech_seconds: float | None = None
    hinted_transcript: bool = False
    duration_s: float | None = None
    peak_dbfs: float | None = None
    rms_dbfs: float | None = None
    option_logprobs: dict[str, float] = field(default_factory=dict)  # whisper, option forced
    speech_spans: list[tuple[float, float]] | None = None
    timeline: list[dict[str, Any]] | None = None  # stretches that stand out, each tagged
    frames: list[Frame] | None = None  # the tagger's top classes per window, in time order
    utterances: list[Utterance] | None = None  # per-span transcript with word times
    speakers: dict[str, Any] | None = None  # the speakers tool's data
    # how sure whisper was of what it heard: the mean token probability of its transcript
    transcript_certainty: float | None = None
    transcribed: bool = False  # speech-to-text ran (its reading may still be empty)
    loop_cut: bool = False  # whisper repeated itself and the repeats were cut (speech_loops)
    # each speech span read as the best word of a closed vocabulary (the ten digits):
    # (start, end, word, margin of its log-probability over the next best word)
    span_words: list[tuple[float, float, str, float]] | None = None


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


def _labels(items: list[dict[str, Any]]) -> Labels:
    return [(str(x["label"]), float(x["score"])) for x in items]


def _read_transcript(data: dict[str, Any], evidence: Evidence, bucket: list[str]) -> None:
    """A transcript, with any repetition loop cut (a result stored before the tool cut
    them, or from another reader): a count must not count the repeats."""
    loop = cut_loop(str(data.get("text", "")))
    text = loop.text
    evidence.transcribed = True
    evidence.loop_cut = evidence.loop_cut or loop.cut or bool(data.get("loops_cut"))
    if data.get("span_words") and evidence.span_words is None:
        evidence.span_words = [
            (float(w["start"]), float(w["end"]), str(w["word"]), float(w["margin"]))
            for w in data["span_words"]
        ]
    for item in data.get("option_scores") or []:
        evidence.option_logprobs[str(item["option"])] = float(item["logprob"])
    if data.get("per_span"):  # a loop may end any utterance, not only the last one
        utterances = [_utterance(s) for s in data.get("segments", [])]
        text = " ".join(u[2] for u in utterances if u[2]).strip() if utterances else text
        if evidence.utterances is None:
            evidence.utterances = utterances
    if text and text not in bucket:  # the same transcript may arrive twice
        bucket.append(text)


def _utterance(segment: dict[str, Any]) -> Utterance:
    """One span's reading and its timed words, a repetition loop cut from both."""
    words = [(w["start"], w["end"], w["word"]) for w in segment.get("words", [])]
    loop = cut_loop(str(segment["text"]))
    if loop.cut and len(words) == len(str(segment["text"]).split()):
        words = words[: loop.kept]
    return (segment["start"], segment["end"], loop.text, words)


def _read_sounds(data: dict[str, Any], evidence: Evidence) -> None:
    known = {label for label, _ in evidence.labels}
    evidence.labels += [x for x in _labels(data.get("labels", [])) if x[0] not in known]
    if evidence.timeline is None and isinstance(data.get("timeline"), list):
        evidence.timeline = data["timeline"]
    if isinstance(data.get("frames"), list) and (evidence.frames is None or data.get("tracks")):
        tracks = data.get("tracks") or {}
        evidence.frames = [
            Frame(float(f["start"]), float(f["end"]), _with_tracks(f, i, tracks))
            for i, f in enumerate(data["frames"])
        ]


def _with_tracks(frame: dict[str, Any], index: int, tracks: dict[str, list[float]]) -> Labels:
    """A window's top classes, and the tracked classes' scores there (best first)."""
    scores = dict(_labels(frame.get("labels", [])))
    for label, values in tracks.items():
        if index < len(values):
            scores[label] = max(scores.get(label, 0.0), float(values[index]))
    return sorted(scores.items(), key=lambda x: -x[1])


LEAST_SURE_SHARE = 0.1  # with word times: the least sure tenth of the words


def _certainty(tool_data: list[tuple[str, dict[str, Any]]]) -> float | None:
    """How sure whisper was of its transcript (the least sure one, when there are several):
    with word times, the mean probability of its least sure tenth of the words (a misheard
    word is where whisper hesitated); else its mean token probability. A transcript that
    repeats itself (whisper looping on noise), or whose loop was cut, is not to be trusted at
    all. None without one."""
    found = []
    for tool, data in flatten_sources(tool_data):
        segments = [s for s in data.get("segments") or [] if "avg_logprob" in s]
        if tool != "transcribe" or data.get("_error") or not segments:
            continue
        words = sorted(float(w["probability"]) for s in segments for w in s.get("words", [])
                       if "probability" in w)  # fmt: skip
        if words:
            least = words[: max(1, math.ceil(LEAST_SURE_SHARE * len(words)))]
            sure = sum(least) / len(least)
        else:
            weights = [max(0.1, float(s["end"]) - float(s["start"])) for s in segments]
            mean = sum(w * float(s["avg_logprob"]) for w, s in zip(weights, segments, strict=True))
            sure = math.exp(mean / sum(weights))
        text = str(data.get("text", ""))
        if repeats_itself(text) or cut_loop(text).cut or data.get("loops_cut"):
            sure *= 0.3
        found.append(sure)
    return round(min(found), 3) if found else None


def repeats_itself(text: str) -> bool:
    """Whisper looping: a pair of words said three or more times over in a long transcript."""
    words = tokens(text)
    pairs = list(zip(words, words[1:], strict=False))
    return len(words) >= 8 and any(pairs.count(p) >= 3 for p in set(pairs))


def collect_evidence(tool_data: list[tuple[str, dict[str, Any]]]) -> Evidence:
    """Everything the tools found, from their results (failed calls left out)."""
    evidence = Evidence()
    plain: list[str] = []
    hinted: list[str] = []  # transcripts made with the answer options as hints
    for tool, data in flatten_sources(tool_data):
        if data.get("_error"):
            continue
        for key in ("duration_s", "peak_dbfs", "rms_dbfs"):
            if isinstance(data.get(key), int | float):
                setattr(evidence, key, float(data[key]))
        if tool == "transcribe" or ("text" in data and "segments" in data):
            _read_transcript(data, evidence, hinted if data.get("prompt") else plain)
        elif tool == "sound_events":
            _read_sounds(data, evidence)
        elif tool == "music_analysis":
            evidence.music = data
        elif tool == "signal_stats":
            evidence.signal = data
        elif tool == "speech_activity":
            evidence.speech_seconds = float(data.get("speech_seconds", 0.0))
            evidence.speech_spans = [(x["start"], x["end"]) for x in data.get("spans", [])]
        elif tool == "speakers" and "speakers" in data:
            evidence.speakers = data
    # Short speech is easily misheard; a transcript that knew the options wins.
    evidence.transcript = " ".join(hinted or plain) or None
    evidence.transcript_certainty = _certainty(tool_data)
    evidence.hinted_transcript = bool(hinted)
    return evidence
