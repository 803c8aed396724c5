"""How many people speak, and in which register: voice features per speech segment, clustered.

Each voice-activity span gets a median F0 (pYIN) and the mean and spread of its MFCCs (mel
bands up to 4 kHz, so telephone-band and full-band audio compare alike). Segments are grouped
by average-linkage agglomerative clustering with a distance threshold; each cluster is one
speaker. A rule-based guess, not a diarisation model: it hears two speakers when two voices
differ clearly in timbre or pitch, and may merge two similar voices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16_000
MIN_SEGMENT_S = 0.15  # shorter segments carry too little voice to compare
# Tuned on compositions of the FSDD test-split digits (six male speakers, see
# bench/devsets.py "speakers"): timbre distance (RMS of z-scored MFCC means) plus
# PITCH_WEIGHT x |log2 F0 ratio| (capped at PITCH_CAP octaves); clusters split above THRESHOLD.
THRESHOLD = 2.0
PITCH_WEIGHT = 4.0
PITCH_CAP = 0.6
N_MFCC = 13
VAD_THRESHOLD = 0.2  # Silero at 0.5 misses some short, band-limited words (FSDD digits)
# Spread of MFCC means 1..12 between single words of different speakers (FSDD, 50 clips).
MFCC_SPREAD = np.array([23.7, 18.6, 15.6, 9.9, 11.7, 7.5, 9.9, 6.6, 4.6, 6.9, 4.6, 3.7])


@dataclass
class Segment:
    start: float
    end: float
    f0_hz: float | None
    mfcc: np.ndarray  # mean of MFCC coefficients 1..12 over the louder frames


@dataclass
class Speaker:
    index: int  # 1-based, in order of first appearance
    f0_hz: float | None  # median over the speaker's voiced frames
    spans: list[tuple[float, float]]

    @property
    def seconds(self) -> float:
        return sum(b - a for a, b in self.spans)


def segment_features(samples: np.ndarray, start: float, end: float) -> Segment | None:
    import librosa

    audio = np.asarray(samples, np.float32)[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    if audio.size < MIN_SEGMENT_S * SAMPLE_RATE:
        return None
    peak = float(np.max(np.abs(audio)))
    if peak <= 0:
        return None
    audio = audio / peak
    mel = librosa.feature.melspectrogram(
        y=audio, sr=SAMPLE_RATE, n_fft=512, hop_length=160, n_mels=40, fmax=4000
    )
    log_mel = librosa.power_to_db(mel)
    energy = log_mel.mean(axis=0)
    loud = energy >= np.percentile(energy, 50)  # the louder half of the frames: the voice
    mfcc = librosa.feature.mfcc(S=log_mel, n_mfcc=N_MFCC)[:, loud]
    f0, voiced, _ = librosa.pyin(
        audio, fmin=70.0, fmax=300.0, sr=SAMPLE_RATE, frame_length=1024, hop_length=256
    )
    voiced_f0 = f0[voiced & np.isfinite(f0)]
    median = float(np.median(voiced_f0)) if voiced_f0.size >= 3 else None
    return Segment(start, end, median, mfcc.mean(axis=1)[1:])


def distance(a: Segment, b: Segment) -> float:
    timbre = float(np.sqrt(np.mean(((a.mfcc - b.mfcc) / MFCC_SPREAD) ** 2)))
    pitch = 0.0
    if a.f0_hz and b.f0_hz:
        pitch = min(abs(float(np.log2(a.f0_hz / b.f0_hz))), PITCH_CAP) * PITCH_WEIGHT
    return timbre + pitch


def cluster(segments: list[Segment], threshold: float = THRESHOLD) -> list[int]:
    """A cluster label per segment (0-based, numbered by first appearance)."""
    if len(segments) < 2:
        return [0] * len(segments)
    from scipy.cluster.hierarchy import fcluster, linkage

    n = len(segments)
    condensed = [distance(segments[i], segments[j]) for i in range(n) for j in range(i + 1, n)]
    tree = linkage(np.asarray(condensed), method="average")
    raw = fcluster(tree, t=threshold, criterion="distance")
    order: dict[int, int] = {}
    return [order.setdefault(int(label), len(order)) for label in raw]


def speakers(samples: np.ndarray, spans: list[tuple[float, float]]) -> list[Speaker]:
    """The speakers heard in the given speech spans, in order of first appearance."""
    segments = [s for a, b in spans if (s := segment_features(samples, a, b)) is not None]
    labels = cluster(segments)
    found: list[Speaker] = []
    for label in sorted(set(labels)):
        members = [s for s, k in zip(segments, labels, strict=True) if k == label]
        f0s = [s.f0_hz for s in members if s.f0_hz]
        f0 = float(np.median(f0s)) if f0s else None
        found.append(Speaker(label + 1, f0, [(s.start, s.end) for s in members]))
    return found


def from_audio(samples: np.ndarray) -> tuple[list[tuple[float, float]], list[Speaker]]:
    """Voice-activity spans (Silero) and the speakers found in them."""
    from agent.local_models import vad

    # A lower threshold than the default: a missed span loses a speaker, while a false one
    # without voice is dropped (too short) or joins the nearest voice.
    spans = vad.speech_spans(samples, threshold=VAD_THRESHOLD)
    return spans, speakers(samples, spans)
