"""How many people speak, and in which register: voice features per speech segment, clustered.

Speech is found by Silero VAD (a low threshold), and each span is cut at its pauses
(``split_at_pauses``: voice activity bridges short pauses, so a quick change of turn hides
inside one span); pieces longer than ``LONG_SPAN_S`` are also cut into windows of about
``WINDOW_S``, so a change of voice inside one can show. Each segment gets its voice features
(``voice_features``: pitch median and spread, MFCC and delta statistics, spectral tilt,
H1-H2, cepstral peak prominence). Two segments' differences are weighed into the
probability that they are different voices (a logistic model fitted on composed dev items,
``bench.speakers_tune``), and segments are grouped by average-linkage clustering on it, cut
at ``THRESHOLD``; each cluster is one speaker. When a merge sits close to the cut, the count
is reported as unsure. A rule-based estimate, not a diarisation model: two similar voices
may merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agent.local_models.executor import holds_gil
from agent.local_models.voice_features import Segment, pair_features, segment_features

VAD_THRESHOLD = 0.2  # Silero at 0.5 misses some short, band-limited words (FSDD digits)
MIN_SILENCE_MS = 100  # a pause this long ends a span (turns can follow quickly)
SAMPLE_RATE = 16_000
PAUSE_S = 0.08  # a quieter stretch this long inside a span is a pause ...
PAUSE_DB = -35.0  # ... quieter than this against the span's loudest frame
LONG_SPAN_S = 3.0  # longer spans are cut into windows ...
WINDOW_S = 1.5  # ... of about this length
# P(different voices) = sigmoid(WEIGHTS . pair_features + BIAS), pair features in the order of
# voice_features.PAIR_NAMES; fitted with `python -m bench.speakers_tune --fit --seed 0 --n 240`
# (796 pairs of segments in 240 seed-0 items); seeds 1 and 2 are the held-out check.
WEIGHTS = np.array([3.37, 2.38, 0.67, -0.05, -0.73, 0.56, 0.8, 1.39])
BIAS = -4.08
THRESHOLD = 0.65  # clusters are not merged above this average probability of different voices
UNSURE = 0.05  # a merge this close to the threshold makes the count unsure


@dataclass
class Speaker:
    index: int  # 1-based, in order of first appearance
    f0_hz: float | None  # median over the speaker's segments
    spans: list[tuple[float, float]]

    @property
    def seconds(self) -> float:
        return sum(b - a for a, b in self.spans)


@dataclass
class Found:
    spans: list[tuple[float, float]]  # voice activity
    speakers: list[Speaker]
    unsure: bool  # the count sits close to the line between fewer and more voices
    margin: float = float("inf")  # how far the nearest merge sits from that line


def difference(a: Segment, b: Segment) -> float:
    """The probability that two segments are different voices."""
    z = float(WEIGHTS @ pair_features(a, b) + BIAS)
    return 1.0 / (1.0 + np.exp(-z))


def cluster(segments: list[Segment], threshold: float = THRESHOLD) -> tuple[list[int], float]:
    """A cluster label per segment (0-based, numbered by first appearance), and the smallest
    distance between a merge height and the threshold (inf with fewer than two segments)."""
    if len(segments) < 2:
        return [0] * len(segments), float("inf")
    from scipy.cluster.hierarchy import fcluster, linkage

    n = len(segments)
    condensed = [difference(segments[i], segments[j]) for i in range(n) for j in range(i + 1, n)]
    tree = linkage(np.asarray(condensed), method="average")
    raw = fcluster(tree, t=threshold, criterion="distance")
    order: dict[int, int] = {}
    margin = float(np.min(np.abs(tree[:, 2] - threshold)))
    return [order.setdefault(int(label), len(order)) for label in raw], margin


def windows(start: float, end: float) -> list[tuple[float, float]]:
    """A long span as windows of about ``WINDOW_S``; a short one as it is."""
    if end - start <= LONG_SPAN_S:
        return [(start, end)]
    count = max(2, round((end - start) / WINDOW_S))
    edges = np.linspace(start, end, count + 1)
    return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def split_at_pauses(samples: np.ndarray, start: float, end: float) -> list[tuple[float, float]]:
    """A span cut at its pauses: ``PAUSE_S`` or more of frames ``PAUSE_DB`` below its loudest
    (voice activity bridges short pauses, and a quick change of turn hides in one)."""
    hop = SAMPLE_RATE // 100
    audio = np.asarray(samples, np.float32)[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    frames = audio.size // hop
    if frames < 3:
        return [(start, end)]
    rms = np.sqrt(np.mean(audio[: frames * hop].reshape(frames, hop) ** 2, axis=1) + 1e-12)
    db = 20 * np.log10(rms / rms.max())
    quiet = db < PAUSE_DB
    pieces, begun, run = [], None, 0
    for i, q in enumerate(quiet):
        if not q:
            if begun is None:
                begun = i
            elif run >= PAUSE_S * 100:  # a pause inside: close the piece before it
                pieces.append((begun, i - run))
                begun = i
            run = 0
        else:
            run += 1
    if begun is not None:
        pieces.append((begun, frames - run))
    return [(start + a / 100, start + b / 100) for a, b in pieces if b > a] or [(start, end)]


def segments_of(samples: np.ndarray, spans: list[tuple[float, float]]) -> list[Segment]:
    return [
        s
        for a, b in spans
        for pa, pb in split_at_pauses(samples, a, b)
        for wa, wb in windows(pa, pb)
        if (s := segment_features(samples, wa, wb)) is not None
    ]


def group(segments: list[Segment], threshold: float = THRESHOLD) -> tuple[list[Speaker], bool]:
    """The speakers among these segments, in order of first appearance; and whether unsure."""
    found, margin = grouped(segments, threshold)
    return found, margin < UNSURE


def grouped(segments: list[Segment], threshold: float = THRESHOLD) -> tuple[list[Speaker], float]:
    """The speakers among these segments, in order of first appearance; and how far the
    nearest merge sits from the threshold (inf with fewer than two voiced segments).

    Segments without a voiced frame (pYIN found no pitch) carry no voice to compare: the
    voiced ones are clustered, and each unvoiced one joins the voice nearest to it.
    """
    voiced = [s for s in segments if s.f0_hz] or segments
    labels, margin = cluster(voiced, threshold)
    label_of = {id(s): k for s, k in zip(voiced, labels, strict=True)}
    for s in segments:
        if id(s) not in label_of:
            label_of[id(s)] = min(
                set(labels),
                key=lambda k: np.mean(
                    [difference(s, v) for v, j in zip(voiced, labels, strict=True) if j == k]
                ),
            )
    order: dict[int, int] = {}  # renumbered by first appearance in time
    found: list[Speaker] = []
    for s in sorted(segments, key=lambda s: s.start):
        k = order.setdefault(label_of[id(s)], len(order))
        if k == len(found):
            found.append(Speaker(k + 1, None, []))
        found[k].spans.append((s.start, s.end))
    for speaker, label in zip(found, order, strict=True):
        f0s = [s.f0_hz for s in segments if label_of[id(s)] == label and s.f0_hz]
        speaker.f0_hz = float(np.median(f0s)) if f0s else None
        speaker.spans = _joined(speaker.spans)
    return found, margin


def _joined(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Windows of one span that went to the same speaker, joined again."""
    out: list[tuple[float, float]] = []
    for a, b in spans:
        if out and abs(out[-1][1] - a) < 1e-6:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def speech_spans(samples: np.ndarray) -> list[tuple[float, float]]:
    from agent.local_models import vad

    # A lower threshold than the default: a missed span loses a speaker, while a false one
    # without voice is dropped (too short) or joins the nearest voice.
    return vad.speech_spans(samples, threshold=VAD_THRESHOLD, min_silence_ms=MIN_SILENCE_MS)


@holds_gil  # pYIN per segment: run in a model worker process where there are several cores
def from_audio(samples: np.ndarray) -> Found:
    """Voice-activity spans (Silero) and the speakers found in them."""
    spans = speech_spans(samples)
    found, margin = grouped(segments_of(samples, spans))
    return Found(spans, found, margin < UNSURE, margin)
