"""One question run through the offline planner on a clip composed in a test, as the app runs it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from agent import events as ev
from agent.audio import AudioStore, load_samples
from agent.registry import Registry
from agent.run import RunRequest, run_question
from bench.devsets import normalise

SR = 16_000
FIXTURES = Path(__file__).parent / "fixtures"


def pause(seconds: float) -> np.ndarray:
    """Digital silence of ``seconds``."""
    return np.zeros(int(seconds * SR), np.float32)


def compose(parts: list[np.ndarray], gap: float = 0.8) -> np.ndarray:
    """Recordings in a row, each normalised, with ``gap`` seconds of silence after each."""
    pieces = [pause(0.3)]
    for part in parts:
        pieces += [normalise(part), pause(gap)]
    return np.concatenate(pieces).astype(np.float32)


def fixture_clip(name: str) -> np.ndarray:
    """A recording of tests/fixtures as samples."""
    return load_samples(FIXTURES / name)


async def ask_offline(
    registry: Registry,
    tmp_path: Path,
    samples: np.ndarray,
    question: str,
    choices: Sequence[str] = (),
    strategy: str = "react",
) -> tuple[ev.Answer, list[ev.Event]]:
    """The answer and every event of one finished run (asserts that it finished)."""
    path = tmp_path / f"clip_{random.random():.9f}.wav"
    sf.write(path, samples, SR, subtype="PCM_16")
    store = AudioStore(tmp_path / "audio")
    request = RunRequest(
        question,
        [store.add_file(path)],
        registry.planner("offline"),
        registry.tools(),
        choices=list(choices),
        strategy=strategy,
    )
    events = [e async for e in run_question(request, store=store, similarity=registry.similarity)]
    assert events[-1].type == "run_finished", events[-1]
    return next(e for e in events if isinstance(e, ev.Answer)), events
