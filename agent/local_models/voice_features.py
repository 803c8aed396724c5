"""Voice features of one stretch of speech, and how different two stretches sound.

Per stretch: the pitch (pYIN) median and spread, and over the voiced frames the mean and spread
of MFCCs 1-12 and of their deltas, and the spectral tilt. Mel bands stop at 4 kHz, so
telephone-band and full-band audio compare alike; the level is normalised first. No cepstral
mean subtraction: the mean is the timbre that tells voices apart (a recording's channel shifts
every stretch of it alike, so it cancels in the differences).

``pair_features`` turns two stretches into a few differences; ``speakers`` weighs them into a
probability that the two are different voices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16_000
MIN_SEGMENT_S = 0.15  # shorter stretches carry too little voice to compare
N_MFCC = 13
FMAX = 4000.0
# Spread of MFCC means 1..12 between single words of different speakers (FSDD, 50 clips).
MFCC_SPREAD = np.array([23.7, 18.6, 15.6, 9.9, 11.7, 7.5, 9.9, 6.6, 4.6, 6.9, 4.6, 3.7])
PAIR_NAMES = (
    "pitch_octaves",
    "timbre",
    "timbre_spread",
    "dynamics",
    "tilt_db",
    "pitch_spread",
    "h1_h2_db",
    "cpp",
)


@dataclass
class Segment:
    start: float
    end: float
    f0_hz: float | None  # median over the voiced frames
    f0_spread: float | None  # octaves between the 20th and 80th percentile of F0
    mfcc: np.ndarray  # mean of MFCC 1..12 over the voiced (or louder) frames
    mfcc_std: np.ndarray  # their spread
    delta_std: np.ndarray  # spread of the MFCC deltas: how fast the timbre moves
    tilt_db: float  # spectral slope, dB per octave (150 Hz - 4 kHz), voiced frames
    h1_h2_db: float | None  # first minus second harmonic, median over voiced frames (breathiness)
    cpp: float  # cepstral peak prominence in the pitch range (how periodic the voice is)

    @property
    def seconds(self) -> float:
        return self.end - self.start


def segment_features(samples: np.ndarray, start: float, end: float) -> Segment | None:
    """The voice features of samples[start:end] (seconds), or None when too short or silent."""
    import librosa

    audio = np.asarray(samples, np.float32)[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    if audio.size < MIN_SEGMENT_S * SAMPLE_RATE:
        return None
    peak = float(np.max(np.abs(audio)))
    if peak <= 0:
        return None
    audio = audio / peak
    hop = 160
    power = np.abs(librosa.stft(audio, n_fft=512, hop_length=hop)) ** 2
    mel = librosa.feature.melspectrogram(S=power, sr=SAMPLE_RATE, n_mels=40, fmax=FMAX)
    log_mel = librosa.power_to_db(mel)
    f0, flags, _ = librosa.pyin(
        audio,
        fmin=60.0,
        fmax=320.0,
        sr=SAMPLE_RATE,
        frame_length=1024,
        hop_length=hop,
    )  # librosa's 0.1-semitone grid: the quarter-semitone one (signal.PITCH_RESOLUTION) is
    # ~3x faster here, but counted 2-3 points worse on every seed (bench.speakers_tune)
    voiced_f0 = f0[flags & np.isfinite(f0)]
    frames = min(log_mel.shape[1], f0.size)
    log_mel, power = log_mel[:, :frames], power[:, :frames]
    voiced = (flags & np.isfinite(f0))[:frames]
    energy = log_mel.mean(axis=0)
    loud = energy >= np.percentile(energy, 50)
    keep = voiced if voiced.sum() >= 5 else loud  # the voice: voiced frames, else the louder half
    mfcc_all = librosa.feature.mfcc(S=log_mel, n_mfcc=N_MFCC)
    mfcc = mfcc_all[1:, keep]
    width = min(9, frames - (1 - frames % 2)) if frames >= 3 else 0
    delta = (
        librosa.feature.delta(mfcc_all, width=max(3, width))[1:, keep]
        if width >= 3
        else np.zeros_like(mfcc)
    )
    median = spread = None
    if voiced_f0.size >= 3:
        median = float(np.median(voiced_f0))
        low, high = np.percentile(voiced_f0, [20, 80])
        spread = float(np.log2(high / low))
    return Segment(
        start,
        end,
        median,
        spread,
        mfcc.mean(axis=1),
        mfcc.std(axis=1),
        delta.std(axis=1),
        _tilt(power[:, keep]),
        _h1_h2(power[:, voiced], f0[:frames][voiced]),
        _cpp(power[:, keep]),
    )


def _tilt(power: np.ndarray) -> float:
    """Slope of the mean log spectrum against log frequency, dB per octave."""
    freqs = np.fft.rfftfreq(512, 1 / SAMPLE_RATE)
    band = (freqs >= 150) & (freqs <= FMAX)
    if power.shape[1] == 0:
        return 0.0
    spectrum = 10 * np.log10(power[band].mean(axis=1) + 1e-10)
    slope = np.polyfit(np.log2(freqs[band]), spectrum, 1)[0]
    return float(slope)


def _h1_h2(power: np.ndarray, f0: np.ndarray) -> float | None:
    """Level of the first harmonic over the second, dB, median over the voiced frames."""
    if f0.size < 3:
        return None
    freqs = np.fft.rfftfreq(512, 1 / SAMPLE_RATE)
    db = 10 * np.log10(power + 1e-12)
    values = []
    for column, pitch in zip(db.T, f0, strict=True):
        h1 = column[(freqs > 0.8 * pitch) & (freqs < 1.2 * pitch)]
        h2 = column[(freqs > 1.8 * pitch) & (freqs < 2.2 * pitch)]
        if h1.size and h2.size:
            values.append(float(h1.max() - h2.max()))
    return float(np.median(values)) if values else None


def _cpp(power: np.ndarray) -> float:
    """Cepstral peak prominence between 60 and 320 Hz quefrencies, mean over the frames."""
    if power.shape[1] == 0:
        return 0.0
    cepstrum = np.fft.irfft(0.5 * np.log(power + 1e-12), axis=0)
    quefrency = np.arange(cepstrum.shape[0]) / SAMPLE_RATE
    band = cepstrum[(quefrency > 1 / 320) & (quefrency < 1 / 60)]
    return float(np.mean(band.max(axis=0) - band.mean(axis=0)))


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def pair_features(a: Segment, b: Segment) -> np.ndarray:
    """How two stretches differ, one number per name in ``PAIR_NAMES``."""
    pitch = spread = 0.0
    if a.f0_hz and b.f0_hz:
        pitch = min(abs(float(np.log2(a.f0_hz / b.f0_hz))), 1.0)
    if a.f0_spread is not None and b.f0_spread is not None:
        spread = min(abs(a.f0_spread - b.f0_spread), 1.0)
    return np.array(
        [
            pitch,
            _rms((a.mfcc - b.mfcc) / MFCC_SPREAD),
            _rms((a.mfcc_std - b.mfcc_std) / MFCC_SPREAD),
            _rms((a.delta_std - b.delta_std) / MFCC_SPREAD),
            min(abs(a.tilt_db - b.tilt_db), 10.0) / 10.0,
            spread,
            min(abs(a.h1_h2_db - b.h1_h2_db), 20.0) / 10.0
            if a.h1_h2_db is not None and b.h1_h2_db is not None
            else 0.0,
            abs(a.cpp - b.cpp) * 10,
        ]
    )
