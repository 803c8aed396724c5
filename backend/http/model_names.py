"""Model names for other programs: a preset, or ``planner/strategy``.

The OpenAI-compatible API lists them (``GET /v1/models``) and takes one as ``model``; the MCP
server's ``answer_audio_question`` takes one as ``preset``. A name is

- a preset of the catalogue (``offline``, ``audiotoolagent_closed``, ...): its planner and
  tools with the ``react`` strategy, or
- ``planner/strategy`` (``offline/react``, ``gpt/refine``, ...): that planner with every
  available tool, as the page's default selection.

Only available ones are listed; a known but unavailable name is refused with the reason (the
variable to set), an unknown one with the names that exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.registry import Registry
from agent.strategies import default_strategy


@dataclass(frozen=True)
class ModelChoice:
    """What a model name selects."""

    id: str
    planner: str
    strategy: str
    tools: list[str] | None  # None: every available tool
    label: str

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "planner": self.planner,
                "strategy": self.strategy, "tools": self.tools}  # fmt: skip


class UnknownModel(LookupError):
    """A model name that selects nothing usable; the message says why and what exists."""


def available_models(registry: Registry) -> list[ModelChoice]:
    """Presets first, then every available planner with each strategy."""
    catalogue = registry.catalogue()
    strategies = {s["name"]: s["label"] for s in catalogue["strategies"] if s["available"]}
    models = [
        ModelChoice(p["name"], p["planner"], default_strategy(), list(p["tools"]), p["label"])
        for p in catalogue["presets"]
        if p["available"]
    ]
    for planner in catalogue["planners"]:
        if not planner["available"]:
            continue
        for strategy, label in strategies.items():
            models.append(
                ModelChoice(
                    f"{planner['name']}/{strategy}",
                    planner["name"],
                    strategy,
                    None,
                    f"{planner['label'] or planner['name']} · {label}",
                )
            )
    return models


def default_model(registry: Registry) -> ModelChoice:
    """The first listed: the first available preset, else the default planner with react."""
    models = available_models(registry)
    if not models:
        raise UnknownModel("No planner is available; check the catalogue file.")
    return models[0]


def resolve_model(registry: Registry, name: str | None) -> ModelChoice:
    """The choice a model name makes (``None`` or empty: ``default_model``)."""
    name = (name or "").strip()
    if not name:
        return default_model(registry)
    models = available_models(registry)
    for model in models:
        if model.id == name:
            return model
    raise UnknownModel(_why_not(registry, name, models))


def _why_not(registry: Registry, name: str, models: list[ModelChoice]) -> str:
    catalogue = registry.catalogue()
    known = ", ".join(m.id for m in models[:12]) + (", ..." if len(models) > 12 else "")
    listing = f"Available models: {known} (GET /v1/models lists them all)."
    planner_name, slash, strategy = name.partition("/")
    if slash:
        planner = next((p for p in catalogue["planners"] if p["name"] == planner_name), None)
        strategies = [s["name"] for s in catalogue["strategies"]]
        if planner is not None and not planner["available"]:
            return f"The model '{name}' is not available: {planner['reason']}."
        if planner is not None and strategy not in strategies:
            return (
                f"The model '{name}' does not exist: '{strategy}' is no strategy "
                f"(strategies: {', '.join(strategies)})."
            )
    preset = next((p for p in catalogue["presets"] if p["name"] == name), None)
    if preset is not None and not preset["available"]:
        return f"The model '{name}' is not available: {preset['reason']}."
    if not slash and any(p["name"] == name for p in catalogue["planners"]):
        return (
            f"The model '{name}' does not exist: name a planner with a strategy, such as "
            f"'{name}/{default_strategy()}', or a preset. {listing}"
        )
    return f"The model '{name}' does not exist. {listing}"
