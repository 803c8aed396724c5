"""Plain signal facts: duration, levels, loudness, silence, pitch and a voice-register estimate.

Levels are dBFS with a full-scale square wave at 0 dB (a full-scale sine has RMS -3.01 dBFS).
Loudness is an approximate ITU-R BS.1770 integrated loudness of the mono signal: K-weighting
(the standard's high-shelf and high-pass, designed for the 16 kHz rate), 400 ms blocks with 75 %
overlap, absolute gate -70 LUFS, relative gate -10 LU. Not a certified meter.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from agent.local_models.compile_lock import numba_compile_lock
from agent.local_models.executor import holds_gil

SAMPLE_RATE = 16_000
FLOOR_DB = -120.0  # reported instead of -inf for digital silence
SILENCE_DBFS = -50.0  # a 20 ms frame with RMS below this is silent
SILENCE_FRAME_S = 0.02
MIN_SILENT_SPAN_S = 0.2
# Voice register from the median f0 of voiced frames. Typical adult male speech sits around
# 85-155 Hz, adult female and children's speech around 165-300 Hz; between the two is unclear.
LOW_REGISTER_MAX_HZ = 155.0
HIGH_REGISTER_MIN_HZ = 165.0
MIN_VOICED_S = 0.2  # less voiced speech than this: register "unclear"
PITCH_FMIN, PITCH_FMAX = 60.0, 600.0
PITCH_FRAME = 1024
PITCH_HOP = 256  # 16 ms
# pyin's pitch grid in semitones. Its Viterbi pass (numba, holding the GIL) is quadratic in
# the number of pitch states: a quarter semitone instead of librosa's default 0.1 made it 3.4x
# faster on speech, with medians within 2 % (measured on FSDD and librosa's speech clips).
PITCH_RESOLUTION = 0.25
MAX_PITCH_SECONDS = 60.0  # pyin costs ~0.03 s per second of audio: longer input is subsampled

REGISTER_LOW = "low (typical adult male range)"
REGISTER_HIGH = "high (typical adult female or child range)"
REGISTER_UNCLEAR = "unclear"


@dataclass(frozen=True)
class SignalFacts:
    duration_s: float
    rms_dbfs: float
    peak_dbfs: float
    loudness_lufs: float | None  # approximate BS.1770 integrated loudness; None if all gated
    silence_threshold_dbfs: float
    silence_ratio: float  # share of 20 ms frames below the threshold
    silent_spans: list[tuple[float, float]]  # runs of silent frames >= 0.2 s, in seconds
    voiced_ratio: float  # share of pitch frames pyin marks voiced
    f0_median_hz: float | None
    f0_p10_hz: float | None
    f0_p90_hz: float | None
    register: str  # voice register from median f0: REGISTER_LOW / REGISTER_HIGH / REGISTER_UNCLEAR


def warm_up() -> None:
    """Compile librosa's pyin (numba) once; the first call is otherwise slow."""
    t = np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE
    with numba_compile_lock():
        facts((0.3 * np.sin(2 * np.pi * 150.0 * t)).astype(np.float32))


def _db(x: float) -> float:
    return round(20 * math.log10(x), 2) if x > 0 else FLOOR_DB


def _biquad_k_weighting(rate: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """K-weighting as two RBJ biquads with BS.1770's parameters (as pyloudnorm designs them)."""

    def shelf(gain_db: float, q: float, fc: float) -> tuple[np.ndarray, np.ndarray]:
        a = 10 ** (gain_db / 40)
        w0 = 2 * math.pi * fc / rate
        alpha = math.sin(w0) / (2 * q)
        cos = math.cos(w0)
        sq = 2 * math.sqrt(a) * alpha
        b = [a * ((a + 1) + (a - 1) * cos + sq), -2 * a * ((a - 1) + (a + 1) * cos)]
        b.append(a * ((a + 1) + (a - 1) * cos - sq))
        den = [(a + 1) - (a - 1) * cos + sq, 2 * ((a - 1) - (a + 1) * cos)]
        den.append((a + 1) - (a - 1) * cos - sq)
        return np.array(b) / den[0], np.array(den) / den[0]

    def highpass(q: float, fc: float) -> tuple[np.ndarray, np.ndarray]:
        w0 = 2 * math.pi * fc / rate
        alpha = math.sin(w0) / (2 * q)
        cos = math.cos(w0)
        b = np.array([(1 + cos) / 2, -(1 + cos), (1 + cos) / 2])
        den = np.array([1 + alpha, -2 * cos, 1 - alpha])
        return b / den[0], den / den[0]

    return [shelf(4.0, 1 / math.sqrt(2), 1500.0), highpass(0.5, 38.0)]


def integrated_loudness(audio: np.ndarray, rate: int = SAMPLE_RATE) -> float | None:
    from scipy.signal import lfilter

    if audio.size == 0:
        return None
    y = audio.astype(np.float64)
    for b, a in _biquad_k_weighting(rate):
        y = lfilter(b, a, y)
    block, step = int(0.4 * rate), int(0.1 * rate)
    if y.size <= block:
        powers = np.array([np.mean(y**2)])
    else:
        starts = np.arange(0, y.size - block + 1, step)
        csum = np.concatenate([[0.0], np.cumsum(y**2)])
        powers = (csum[starts + block] - csum[starts]) / block
    with np.errstate(divide="ignore"):
        block_lufs = -0.691 + 10 * np.log10(powers)
    gated = powers[block_lufs > -70.0]
    if gated.size == 0:
        return None
    relative_gate = -0.691 + 10 * math.log10(gated.mean()) - 10.0
    gated = powers[(block_lufs > -70.0) & (block_lufs > relative_gate)]
    if gated.size == 0:
        return None
    return round(-0.691 + 10 * math.log10(gated.mean()), 2)


def _silence(audio: np.ndarray) -> tuple[float, list[tuple[float, float]]]:
    n = int(SILENCE_FRAME_S * SAMPLE_RATE)
    n_frames = math.ceil(audio.size / n)
    if n_frames == 0:
        return 0.0, []
    padded = np.pad(audio.astype(np.float64), (0, n_frames * n - audio.size))
    counts = np.full(n_frames, n, dtype=np.float64)
    counts[-1] = audio.size - (n_frames - 1) * n
    rms = np.sqrt((padded.reshape(n_frames, n) ** 2).sum(axis=1) / counts)
    silent = rms < 10 ** (SILENCE_DBFS / 20)
    spans: list[tuple[float, float]] = []
    duration = audio.size / SAMPLE_RATE
    i = 0
    while i < n_frames:
        if not silent[i]:
            i += 1
            continue
        j = i
        while j + 1 < n_frames and silent[j + 1]:
            j += 1
        start, end = i * SILENCE_FRAME_S, min((j + 1) * SILENCE_FRAME_S, duration)
        if end - start >= MIN_SILENT_SPAN_S - 1e-9:
            spans.append((round(start, 3), round(end, 3)))
        i = j + 1
    return round(float(silent.mean()), 4), spans


def _pitch(audio: np.ndarray) -> tuple[float, np.ndarray]:
    """(voiced ratio, f0 of voiced frames in Hz) with librosa's pyin."""
    import librosa

    if audio.size > MAX_PITCH_SECONDS * SAMPLE_RATE:
        # Evenly spaced 1 s excerpts totalling MAX_PITCH_SECONDS.
        starts = np.linspace(0, audio.size - SAMPLE_RATE, int(MAX_PITCH_SECONDS)).astype(int)
        audio = np.concatenate([audio[s : s + SAMPLE_RATE] for s in starts])
    if audio.size < PITCH_FRAME // 2 or float(np.max(np.abs(audio))) < 1e-4:
        return 0.0, np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        f0, voiced, _ = librosa.pyin(
            audio,
            fmin=PITCH_FMIN,
            fmax=PITCH_FMAX,
            sr=SAMPLE_RATE,
            frame_length=PITCH_FRAME,
            hop_length=PITCH_HOP,
            resolution=PITCH_RESOLUTION,
        )
    voiced = voiced & np.isfinite(f0)
    return float(voiced.mean()) if voiced.size else 0.0, f0[voiced]


def register_from_f0(median_f0: float | None, voiced_seconds: float) -> str:
    if median_f0 is None or voiced_seconds < MIN_VOICED_S:
        return REGISTER_UNCLEAR
    if median_f0 < LOW_REGISTER_MAX_HZ:
        return REGISTER_LOW
    if median_f0 > HIGH_REGISTER_MIN_HZ:
        return REGISTER_HIGH
    return REGISTER_UNCLEAR


@holds_gil
def facts(samples: np.ndarray) -> SignalFacts:
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = audio.size / SAMPLE_RATE
    if audio.size == 0:
        return SignalFacts(
            0.0, FLOOR_DB, FLOOR_DB, None, SILENCE_DBFS, 0.0, [], 0.0, None, None, None,
            REGISTER_UNCLEAR,
        )  # fmt: skip
    x = audio.astype(np.float64)
    silence_ratio, spans = _silence(audio)
    voiced_ratio, f0 = _pitch(audio)
    if f0.size:
        p10, median, p90 = (round(float(v), 1) for v in np.percentile(f0, [10, 50, 90]))
    else:
        p10 = median = p90 = None
    voiced_seconds = f0.size * PITCH_HOP / SAMPLE_RATE
    return SignalFacts(
        duration_s=round(duration, 3),
        rms_dbfs=_db(float(np.sqrt(np.mean(x**2)))),
        peak_dbfs=_db(float(np.max(np.abs(x)))),
        loudness_lufs=integrated_loudness(audio),
        silence_threshold_dbfs=SILENCE_DBFS,
        silence_ratio=silence_ratio,
        silent_spans=spans,
        voiced_ratio=round(voiced_ratio, 4),
        f0_median_hz=median,
        f0_p10_hz=p10,
        f0_p90_hz=p90,
        register=register_from_f0(median, voiced_seconds),
    )
