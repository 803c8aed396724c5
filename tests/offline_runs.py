"""One question run through the offline planner on a clip composed in a test, as the app runs it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from agent import events as ev
from agent.audio import AudioStore
from agent.registry import Registry
from agent.run import RunRequest, run_question

SR = 16_000


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
