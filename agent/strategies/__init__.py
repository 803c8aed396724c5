"""Strategies: each published method as a small policy over the shared loop machinery.

- ``react`` (AudioToolAgent): reason, call any tools, cross-check disagreements, answer.
- ``caption_first`` (the compact two-tool agent): caption first, then caption/ask tools.
- ``refine`` (AudioGenie-Reasoner): a caption document refined up to 3 times, then answer.
- ``evidence`` (EChO-Agent): type dispatch, evidence list, two answers and a verifier.

Each registers itself with ``@strategy(label)`` (``agent.strategies.base``); installed
packages add more through the ``audio_agent.strategies`` entry-point group
(``agent.plugins``). Everything that lists strategies reads the functions below.
"""

from __future__ import annotations

from typing import Any

from agent.plugins import STRATEGIES_GROUP, registry
from agent.strategies.base import Strategy, StrategyInfo, strategy

__all__ = [
    "Strategy",
    "StrategyInfo",
    "all_strategies",
    "compared_strategies",
    "default_strategy",
    "get_strategy",
    "strategy",
    "strategy_infos",
    "strategy_labels",
    "strategy_names",
]


def strategy_infos() -> dict[str, StrategyInfo]:
    """Every registered strategy by name: the default first, then built-ins, then plugins."""
    infos = registry(STRATEGIES_GROUP).items()
    return dict(sorted(infos.items(), key=lambda item: not item[1].default))


def strategy_names() -> list[str]:
    return list(strategy_infos())


def strategy_labels() -> dict[str, str]:
    return {name: info.label for name, info in strategy_infos().items()}


def default_strategy() -> str:
    """The strategy a question uses when none is named."""
    infos = strategy_infos()
    return next((n for n, i in infos.items() if i.default), next(iter(infos), ""))


def compared_strategies() -> list[str]:
    """The strategies a comparison of strategies starts with."""
    return [n for n, i in strategy_infos().items() if i.compared]


def all_strategies() -> dict[str, Strategy]:
    return {name: info.factory() for name, info in strategy_infos().items()}


def get_strategy(name: str) -> Strategy:
    infos = strategy_infos()
    if name not in infos:
        raise KeyError(f"Unknown strategy '{name}'. Known: {', '.join(infos)}.")
    return infos[name].factory()


def __getattr__(name: str) -> Any:
    """``STRATEGY_LABELS`` as before (read from the registry when asked for)."""
    if name == "STRATEGY_LABELS":
        return strategy_labels()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
