"""Composing dev-set audio from real recordings: the sources, and cutting and joining them.

Shared by the dev-set builders (``bench.devsets``, ``bench.devsets_whole``,
``bench.devsets_open``); 16 kHz mono float32 throughout.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

SR = 16_000


@dataclass
class Sources:
    esc: list[tuple[str, np.ndarray]]  # (class name, 16 kHz samples)
    digits: list[tuple[str, str, np.ndarray]]  # (digit word, speaker, samples)
    phrases: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (reader, samples)
    music: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (piece, samples)


class ItemSink(Protocol):
    """What a dev-set builder writes items to (``bench.devsets.Builder``)."""

    src: Sources

    def add(self, category: str, sub: str, audio: np.ndarray, question: str, choices: Any,
            answer: Any, task: str, expect_guess: bool = False,
            **extra: Any) -> None: ...  # fmt: skip

    def esc_pool(self) -> list[str]: ...


def loudest(samples: np.ndarray, seconds: float) -> np.ndarray:
    """The window of this length with the most energy."""
    n = int(seconds * SR)
    if samples.size <= n:
        return samples.copy()
    power = np.concatenate([[0.0], np.cumsum(samples.astype(np.float64) ** 2)])
    energy = power[n:] - power[:-n]  # the energy of every window, by running sums
    start = int(np.argmax(energy[:: SR // 100])) * (SR // 100)
    return samples[start : start + n].copy()


def normalise(samples: np.ndarray, peak: float = 0.7) -> np.ndarray:
    top = float(np.max(np.abs(samples))) if samples.size else 0.0
    return samples * (peak / top) if top > 0 else samples


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SR), np.float32)


def faint_noise(seconds: float, rng: random.Random, level: float = 0.002) -> np.ndarray:
    gen = np.random.default_rng(rng.randrange(1 << 30))
    return (level * gen.standard_normal(int(seconds * SR))).astype(np.float32)


def concat_with_gaps(parts: list[np.ndarray], rng: random.Random, gap=(0.5, 1.0)) -> np.ndarray:
    return concat_timed(parts, rng, gap)[0]


def concat_timed(
    parts: list[np.ndarray], rng: random.Random, gap=(0.5, 1.0)
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The parts with pauses between them, and where each part lies (seconds)."""
    pieces = [silence(rng.uniform(0.2, 0.6))]
    at, times = pieces[0].size, []
    for i, part in enumerate(parts):
        pieces.append(part)
        times.append((at / SR, (at + part.size) / SR))
        pieces.append(silence(rng.uniform(*gap) if i < len(parts) - 1 else rng.uniform(0.2, 0.6)))
        at += part.size + pieces[-1].size
    return np.concatenate(pieces).astype(np.float32), times
