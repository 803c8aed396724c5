"""Where the background warm-up of the local models stands, per model and per local tool:
``waiting`` (not started), ``warming up``, ``ready`` or ``failed`` (with the reason).

``agent.registry.warm_up`` records each model's state here as it goes; the API's health and
the page's tool list read ``snapshot()``. A process that never warms up (tests, the CLI)
reports ``started: False`` and every tool ``waiting``: its models load at their first call.
"""

from __future__ import annotations

import threading
from typing import Any

WAITING, WARMING, READY, FAILED = "waiting", "warming up", "ready", "failed"
# The local tools each model serves (a tool is ready when all of its models are).
MODEL_TOOLS: dict[str, tuple[str, ...]] = {
    "whisper_asr": ("transcribe",),
    "vad": ("speech_activity", "transcribe"),
    "yamnet": ("sound_events",),
    "embedding": ("sound_events",),
    "music": ("music_analysis",),
    "signal": ("signal_stats", "speakers"),
}
_ORDER = (FAILED, WARMING, WAITING, READY)  # a tool shows the first of its models' states


class WarmState:
    """Thread-safe record of one process's warm-up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, str] = dict.fromkeys(MODEL_TOOLS, WAITING)
        self._reasons: dict[str, str] = {}
        self._started = False
        self._done = False

    def begin(self) -> None:
        with self._lock:
            self._started, self._done = True, False

    def set(self, model: str, state: str, reason: str | None = None) -> None:
        with self._lock:
            self._models[model] = state
            if reason:
                self._reasons[model] = reason

    def finish(self) -> None:
        with self._lock:
            self._done = True

    def snapshot(self) -> dict[str, Any]:
        """``{"started", "done", "models": {name: state}, "tools": {name: state},
        "reasons": {model: why it failed}}``."""
        with self._lock:
            models, reasons = dict(self._models), dict(self._reasons)
            started, done = self._started, self._done
        tools: dict[str, str] = {}
        for model, names in MODEL_TOOLS.items():
            for name in names:
                now = tools.get(name, READY)
                tools[name] = min(now, models.get(model, WAITING), key=_ORDER.index)
        return {
            "started": started,
            "done": done,
            "models": models,
            "tools": tools,
            "reasons": reasons,
        }


STATE = WarmState()


def snapshot() -> dict[str, Any]:
    return STATE.snapshot()
