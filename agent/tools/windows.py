"""Splitting long audio into windows that a remote model accepts, with their offsets."""

from __future__ import annotations

import numpy as np


def windows(duration_s: float, max_s: float | None) -> list[tuple[float, float]]:
    """Consecutive [start, end) ranges covering the whole recording, none longer than max_s."""
    if not max_s or duration_s <= max_s:
        return [(0.0, duration_s)]
    count = int(np.ceil(duration_s / max_s))
    step = duration_s / count  # equal parts, so the last one is not a sliver
    return [(round(i * step, 3), round(min(duration_s, (i + 1) * step), 3)) for i in range(count)]


def select(samples: np.ndarray, start: float, end: float, rate: int = 16_000) -> np.ndarray:
    return samples[int(start * rate) : int(end * rate)]


def time_range(arguments: dict, duration: float) -> tuple[float, float]:
    """The [start, end] seconds a call asks for (default: all), checked against the audio."""
    from agent.tools.base import ToolError

    try:
        start = float(arguments.get("start") or 0.0)
        end = float(arguments.get("end") or duration)
    except (TypeError, ValueError) as exc:
        raise ToolError("start and end must be numbers of seconds.") from exc
    end = min(end, duration)
    if start < 0 or end - start < 0.05:
        raise ToolError(
            f"The range {start:.2f}–{end:.2f} s is empty; the recording lasts {duration:.2f} s."
        )
    return start, end


def quiet_windows(
    samples: np.ndarray, max_s: float | None, rate: int = 16_000, frame_s: float = 0.05
) -> list[tuple[float, float]]:
    """Like ``windows``, but each cut falls at the quietest 50 ms frame in the last third of
    the allowed window, so a model with a short window (Whisper's 30 s) is not handed
    words cut in half. Falls back to the window's end when no frame is quieter."""
    duration = len(samples) / rate
    if not max_s or duration <= max_s:
        return [(0.0, round(duration, 3))]
    frame = max(1, int(frame_s * rate))
    spans: list[tuple[float, float]] = []
    start = 0.0
    while duration - start > max_s:
        lo, hi = start + max_s * 2 / 3, start + max_s
        a, b = int(lo * rate), int(hi * rate)
        region = samples[a:b].astype(np.float64)
        count = len(region) // frame
        cut = hi
        if count > 0:
            energy = (region[: count * frame].reshape(count, frame) ** 2).mean(axis=1)
            quietest = int(np.argmin(energy))
            cut = lo + (quietest + 0.5) * frame / rate
        spans.append((round(start, 3), round(cut, 3)))
        start = cut
    spans.append((round(start, 3), round(duration, 3)))
    return spans
