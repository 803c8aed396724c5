"""Music facts: tempo and beats (librosa), key (Krumhansl-Schmuckler), notes (basic-pitch ONNX).

librosa has no key estimator; the key is the major/minor Krumhansl-Kessler profile, rotated to
each of the 12 tonics, that correlates best with the clip's mean CQT chroma.

Notes run basic-pitch's ``nmp.onnx`` on onnxruntime. Nothing of the ``basic_pitch`` Python package
is imported: its ``__init__`` tries to import tensorflow, coremltools and tflite-runtime (and logs
a warning for each one missing). The windowing, unwrapping and note decoding below follow
``basic_pitch.inference`` / ``basic_pitch.note_creation`` (Apache-2.0, Spotify AB) with their
default thresholds; pitch bends and MIDI output are left out.
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.local_models import executor
from agent.local_models.compile_lock import numba_compile_lock
from agent.local_models.executor import holds_gil

SAMPLE_RATE = 16_000
TEMPO_HOP = 128  # finer onset envelope than librosa's 512: 120.2 BPM on a 120 BPM click track
PITCH_CLASSES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
# Krumhansl & Kessler (1982) probe-tone profiles, tonic first.
MAJOR_PROFILE = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
MINOR_PROFILE = np.array([6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17])
SILENCE_PEAK = 1e-4
# Long audio is analysed this many samples at a time (a multiple of TEMPO_HOP), so the peak
# memory of a 300 s clip is about that of a 30 s one.
ANALYSIS_WINDOW = 30 * SAMPLE_RATE
ONSET_CONTEXT = 64 * TEMPO_HOP  # extra samples read on each side of an onset window

# basic-pitch model constants (basic_pitch/constants.py)
BP_SAMPLE_RATE = 22_050
BP_FFT_HOP = 256
BP_FPS = BP_SAMPLE_RATE // BP_FFT_HOP  # 86 frames per second
BP_WINDOW_FRAMES = BP_FPS * 2
BP_WINDOW_SAMPLES = BP_SAMPLE_RATE * 2 - BP_FFT_HOP  # 43844
BP_OVERLAP_FRAMES = 30
BP_OVERLAP_SAMPLES = BP_OVERLAP_FRAMES * BP_FFT_HOP
BP_HOP_SAMPLES = BP_WINDOW_SAMPLES - BP_OVERLAP_SAMPLES
BP_MIDI_OFFSET = 21  # piano key A0
BP_MAX_FREQ_IDX = 87

_LOCK = threading.Lock()


@dataclass(frozen=True)
class MusicFacts:
    duration_s: float
    tempo_bpm: float | None  # None when there is no rhythmic onset pattern (silence, < 1 s)
    beat_times: list[float]
    key: str | None  # e.g. "F# minor"; None for silence
    key_confidence: float  # Pearson correlation of the best key profile with the chroma, -1..1
    key_candidates: list[tuple[str, float]]  # best three keys with their correlations


@dataclass(frozen=True)
class Note:
    start: float
    end: float
    pitch_midi: int
    name: str  # e.g. "A4"
    amplitude: float  # mean note activation, 0..1


def warm_up_tone() -> np.ndarray:
    """2 s of a tone with clicks: enough to run every code path of ``analyze``."""
    t = np.arange(2 * SAMPLE_RATE) / SAMPLE_RATE
    tone = (0.3 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
    tone[:: SAMPLE_RATE // 2] = 1.0
    return tone


def warm_up() -> None:
    """Compile librosa's numba code paths (slow on the first call) and load the note model;
    with worker processes (executor), ``analyze`` is warmed there instead."""
    if not executor.get_executor().processes:
        with numba_compile_lock():
            analyze(warm_up_tone())
    _note_session()


@holds_gil
def analyze(samples: np.ndarray) -> MusicFacts:
    import librosa

    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = audio.size / SAMPLE_RATE
    if audio.size < SAMPLE_RATE // 4 or float(np.max(np.abs(audio))) < SILENCE_PEAK:
        return MusicFacts(duration, None, [], None, 0.0, [])

    tempo, beats = _tempo_and_beats(audio) if duration >= 1.0 else (None, [])
    # The mean chroma, a window at a time: memory stays that of one window on long audio.
    total, frames = np.zeros(12), 0
    for start in range(0, audio.size, ANALYSIS_WINDOW):
        piece = audio[start : start + ANALYSIS_WINDOW]
        if start and piece.size < SAMPLE_RATE // 4:
            break  # a short tail adds nothing to the mean but warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # short: "n_fft too large" per octave
            chroma = librosa.feature.chroma_cqt(y=piece, sr=SAMPLE_RATE)
        total += chroma.sum(axis=1)
        frames += chroma.shape[1]
    candidates = key_scores(total / max(frames, 1))
    key, confidence = candidates[0] if candidates else (None, 0.0)
    return MusicFacts(
        duration_s=duration,
        tempo_bpm=tempo,
        beat_times=beats,
        key=key,
        key_confidence=confidence,
        key_candidates=candidates[:3],
    )


def _tempo_and_beats(audio: np.ndarray) -> tuple[float | None, list[float]]:
    """Tempo from librosa's estimator, refined by the mean beat interval when they agree.

    At hop 128 and 16 kHz the estimator's lag grid is 8 ms, so 120 BPM comes out as 119.05 or
    120.97; the average interval over many tracked beats is finer.
    """
    import librosa

    envelope = onset_envelope(audio)
    if float(envelope.max()) <= 0:
        return None, []
    tempogram = mean_tempogram(envelope)
    bpm = float(librosa.feature.tempo(tg=tempogram, sr=SAMPLE_RATE, hop_length=TEMPO_HOP)[0])
    if bpm <= 0:
        return None, []
    _, beat_frames = librosa.beat.beat_track(
        onset_envelope=envelope, sr=SAMPLE_RATE, hop_length=TEMPO_HOP, bpm=bpm
    )
    beats = librosa.frames_to_time(beat_frames, sr=SAMPLE_RATE, hop_length=TEMPO_HOP)
    if len(beats) >= 4:
        refined = 60.0 * (len(beats) - 1) / float(beats[-1] - beats[0])
        if abs(refined - bpm) / bpm < 0.04:
            bpm = refined
    return round(bpm, 2), [round(float(b), 3) for b in beats]


def onset_envelope(audio: np.ndarray) -> np.ndarray:
    """librosa's onset strength at TEMPO_HOP, computed a window at a time.

    Each window is read with ``ONSET_CONTEXT`` extra samples on both sides and trimmed back,
    so the joined envelope matches the one-shot envelope frame for frame (up to the dB floor,
    which librosa sets per window); its spectrogram never holds more than one window.
    """
    import librosa

    def strength(piece: np.ndarray) -> np.ndarray:
        return librosa.onset.onset_strength(y=piece, sr=SAMPLE_RATE, hop_length=TEMPO_HOP)

    if audio.size <= ANALYSIS_WINDOW + 2 * ONSET_CONTEXT:
        return strength(audio)
    parts = []
    for start in range(0, audio.size, ANALYSIS_WINDOW):
        begin = max(0, start - ONSET_CONTEXT)
        end = min(audio.size, start + ANALYSIS_WINDOW + ONSET_CONTEXT)
        envelope = strength(audio[begin:end])
        skip = (start - begin) // TEMPO_HOP
        last = start + ANALYSIS_WINDOW >= audio.size
        keep = (audio.size - start) // TEMPO_HOP + 1 if last else ANALYSIS_WINDOW // TEMPO_HOP
        parts.append(envelope[skip : skip + keep])
    return np.concatenate(parts)


def mean_tempogram(envelope: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """librosa's tempogram (8 s autocorrelation windows) averaged over time, by chunks.

    The same numbers as ``tempogram(...).mean(axis=-1)``, without the full
    [window x frames] matrix (1.8 GB on a 300 s clip at this hop)."""
    import librosa

    win = int(librosa.time_to_frames(8.0, sr=SAMPLE_RATE, hop_length=TEMPO_HOP))
    n = envelope.size
    # As librosa centres the windows: a linear ramp of win // 2 frames on each side.
    padded = np.pad(envelope, (win // 2, win // 2), mode="linear_ramp", end_values=(0, 0))
    total = np.zeros(win)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        columns = librosa.feature.tempogram(
            onset_envelope=padded[a : b + win - 1],
            sr=SAMPLE_RATE,
            hop_length=TEMPO_HOP,
            win_length=win,
            center=False,
        )
        total += columns.sum(axis=1)
    return (total / max(n, 1))[:, None]


def key_scores(mean_chroma: np.ndarray) -> list[tuple[str, float]]:
    """All 24 keys with their profile correlation, best first ([] for a flat chroma)."""
    chroma = np.asarray(mean_chroma, dtype=np.float64)
    if chroma.shape != (12,) or np.allclose(chroma, chroma[0]):
        return []
    scores = []
    for mode, profile in (("major", MAJOR_PROFILE), ("minor", MINOR_PROFILE)):
        for tonic in range(12):
            r = float(np.corrcoef(chroma, np.roll(profile, tonic))[0, 1])
            scores.append((f"{PITCH_CLASSES[tonic]} {mode}", round(r, 4)))
    return sorted(scores, key=lambda kv: -kv[1])


# ---- notes (basic-pitch) ----------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _load_note_session() -> Any:
    import onnxruntime as ort

    spec = importlib.util.find_spec("basic_pitch")  # locates, does not import, the package
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("The 'basic-pitch' package (nmp.onnx) is not installed.")
    path = Path(list(spec.submodule_search_locations)[0]) / "saved_models/icassp_2022/nmp.onnx"
    options = ort.SessionOptions()
    # Sized with the model executor so concurrent calls do not oversubscribe the cores.
    options.intra_op_num_threads = executor.threads_per_call()
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _note_session() -> Any:
    with _LOCK:
        return _load_note_session()


def _model_output(audio_22k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(frames, onsets) activations [n_frames, 88] for the whole clip."""
    session = _note_session()
    input_name = session.get_inputs()[0].name
    original_length = audio_22k.size
    padded = np.concatenate([np.zeros(BP_OVERLAP_SAMPLES // 2, np.float32), audio_22k])
    notes, onsets = [], []
    for start in range(0, padded.size, BP_HOP_SAMPLES):
        window = padded[start : start + BP_WINDOW_SAMPLES]
        window = np.pad(window, (0, BP_WINDOW_SAMPLES - window.size))
        # outputs: :0 contour [.., 264], :1 note [.., 88], :2 onset [.., 88]
        note, onset = session.run(
            ["StatefulPartitionedCall:1", "StatefulPartitionedCall:2"],
            {input_name: window[None, :, None].astype(np.float32)},
        )
        notes.append(note[0])
        onsets.append(onset[0])
    half = BP_OVERLAP_FRAMES // 2
    n_frames = int(np.floor(original_length * (BP_FPS / BP_SAMPLE_RATE)))
    frames = np.concatenate([n[half:-half] for n in notes])[:n_frames]
    onset = np.concatenate([o[half:-half] for o in onsets])[:n_frames]
    return frames, onset


def _frame_times(n_frames: int) -> np.ndarray:
    """basic_pitch.note_creation.model_frames_to_time (including its alignment constant)."""
    original = np.arange(n_frames) * BP_FFT_HOP / BP_SAMPLE_RATE
    window_numbers = np.floor(np.arange(n_frames) / BP_WINDOW_FRAMES)
    offset = (BP_FFT_HOP / BP_SAMPLE_RATE) * (
        BP_WINDOW_FRAMES - BP_WINDOW_SAMPLES / BP_FFT_HOP
    ) + 0.0018
    return original - offset * window_numbers


def _inferred_onsets(onsets: np.ndarray, frames: np.ndarray, n_diff: int = 2) -> np.ndarray:
    diffs = []
    for n in range(1, n_diff + 1):
        shifted = np.concatenate([np.zeros((n, frames.shape[1])), frames])
        diffs.append(shifted[n:, :] - shifted[:-n, :])
    frame_diff = np.min(diffs, axis=0)
    frame_diff[frame_diff < 0] = 0
    frame_diff[:n_diff, :] = 0
    peak = np.max(frame_diff)
    if peak > 0:
        frame_diff = np.max(onsets) * frame_diff / peak
    return np.max([onsets, frame_diff], axis=0)


def _clear(energy: np.ndarray, rows: slice | int, freq: int) -> None:
    energy[rows, freq] = 0
    if freq < BP_MAX_FREQ_IDX:
        energy[rows, freq + 1] = 0
    if freq > 0:
        energy[rows, freq - 1] = 0


def _decode_notes(
    frames: np.ndarray,
    onsets: np.ndarray,
    *,
    onset_thresh: float,
    frame_thresh: float,
    min_note_len: int,
    energy_tol: int = 11,
) -> list[tuple[int, int, int, float]]:
    """basic_pitch.note_creation.output_to_notes_polyphonic with infer_onsets and melodia_trick."""
    from scipy.signal import argrelmax

    n_frames = frames.shape[0]
    onsets = _inferred_onsets(onsets, frames)
    peaks = np.zeros(onsets.shape)
    idx = argrelmax(onsets, axis=0)
    peaks[idx] = onsets[idx]
    onset_t, onset_f = np.where(peaks >= onset_thresh)
    remaining = frames.copy()
    events: list[tuple[int, int, int, float]] = []

    for start, freq in zip(onset_t[::-1], onset_f[::-1], strict=True):  # backwards in time
        if start >= n_frames - 1:
            continue
        i, k = start + 1, 0
        while i < n_frames - 1 and k < energy_tol:
            k = k + 1 if remaining[i, freq] < frame_thresh else 0
            i += 1
        i -= k
        if i - start <= min_note_len:
            continue
        _clear(remaining, slice(start, i), freq)
        events.append(
            (int(start), int(i), int(freq) + BP_MIDI_OFFSET, float(frames[start:i, freq].mean()))
        )

    # "Melodia trick": also keep long stretches of energy that had no onset.
    while remaining.size and np.max(remaining) > frame_thresh:
        mid, freq = np.unravel_index(np.argmax(remaining), remaining.shape)
        remaining[mid, freq] = 0
        i, k = mid + 1, 0
        while i < n_frames - 1 and k < energy_tol:
            k = k + 1 if remaining[i, freq] < frame_thresh else 0
            _clear(remaining, i, freq)
            i += 1
        end = i - 1 - k
        i, k = mid - 1, 0
        while i > 0 and k < energy_tol:
            k = k + 1 if remaining[i, freq] < frame_thresh else 0
            _clear(remaining, i, freq)
            i -= 1
        begin = i + 1 + k
        if end - begin <= min_note_len:
            continue
        events.append(
            (
                int(begin),
                int(end),
                int(freq) + BP_MIDI_OFFSET,
                float(frames[begin:end, freq].mean()),
            )
        )
    return events


def notes(
    samples: np.ndarray,
    *,
    onset_threshold: float = 0.5,
    frame_threshold: float = 0.3,
    min_note_ms: float = 127.7,
) -> list[Note]:
    """Polyphonic note events (basic-pitch defaults), sorted by start time then pitch."""
    import librosa
    from scipy.signal import resample_poly

    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    if audio.size == 0 or float(np.max(np.abs(audio))) < SILENCE_PEAK:
        return []
    audio_22k = resample_poly(audio, 441, 320).astype(np.float32)  # 16 kHz -> 22.05 kHz
    frames, onsets = _model_output(audio_22k)
    if frames.shape[0] < 2:
        return []
    min_len = int(np.round(min_note_ms / 1000 * (BP_SAMPLE_RATE / BP_FFT_HOP)))
    events = _decode_notes(
        frames,
        onsets,
        onset_thresh=onset_threshold,
        frame_thresh=frame_threshold,
        min_note_len=min_len,
    )
    times = _frame_times(frames.shape[0] + 1)
    result = [
        Note(
            start=round(float(times[s]), 3),
            end=round(float(times[e]), 3),
            pitch_midi=p,
            name=librosa.midi_to_note(p, unicode=False),
            amplitude=round(a, 4),
        )
        for s, e, p, a in events
    ]
    return sorted(result, key=lambda n: (n.start, n.pitch_midi))
