"""Long audio is analysed in windows with the same result as in one piece (music facts)."""

from __future__ import annotations

import numpy as np

from agent.local_models import music

RATE = music.SAMPLE_RATE


def _click_track(seconds: float, bpm: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    audio = 0.01 * rng.standard_normal(int(seconds * RATE)).astype(np.float32)
    period = int(RATE * 60 / bpm)
    t = np.arange(int(0.03 * RATE)) / RATE
    click = (0.8 * np.sin(2 * np.pi * 880 * t) * np.exp(-t * 80)).astype(np.float32)
    for start in range(0, audio.size - click.size, period):
        audio[start : start + click.size] += click
    return audio


def test_windowed_onset_envelope_and_tempogram_match_the_one_shot_ones():
    import librosa

    audio = _click_track(40, 100)  # more than one analysis window
    whole = librosa.onset.onset_strength(y=audio, sr=RATE, hop_length=music.TEMPO_HOP)
    windowed = music.onset_envelope(audio)
    assert windowed.shape == whole.shape
    assert np.corrcoef(whole, windowed)[0, 1] > 0.999
    win = int(librosa.time_to_frames(8.0, sr=RATE, hop_length=music.TEMPO_HOP))
    full = librosa.feature.tempogram(
        onset_envelope=whole, sr=RATE, hop_length=music.TEMPO_HOP, win_length=win
    ).mean(axis=1)
    np.testing.assert_allclose(music.mean_tempogram(whole)[:, 0], full, rtol=1e-6, atol=1e-9)


def test_tempo_of_a_long_click_track():
    facts = music.analyze(_click_track(40, 100))
    assert facts.tempo_bpm is not None and abs(facts.tempo_bpm - 100) < 2
    assert facts.duration_s == 40
