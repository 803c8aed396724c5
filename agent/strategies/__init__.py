"""Strategies: each published method as a small policy over the shared loop machinery.

- ``react`` (AudioToolAgent): reason, call any tools, cross-check disagreements, answer.
- ``caption_first`` (the compact two-tool agent): caption first, then caption/ask tools.
- ``refine`` (AudioGenie-Reasoner): a caption document refined up to 3 times, then answer.
- ``evidence`` (EChO-Agent): type dispatch, evidence list, two answers and a verifier.
"""

from __future__ import annotations

from agent.strategies.base import Strategy


def all_strategies() -> dict[str, Strategy]:
    from agent.strategies.caption_first import CaptionFirst
    from agent.strategies.evidence import EvidenceStrategy
    from agent.strategies.react import React
    from agent.strategies.refine import Refine

    return {s.name: s for s in (React(), CaptionFirst(), Refine(), EvidenceStrategy())}


def get_strategy(name: str) -> Strategy:
    strategies = all_strategies()
    if name not in strategies:
        raise KeyError(f"Unknown strategy '{name}'. Known: {', '.join(strategies)}.")
    return strategies[name]


STRATEGY_LABELS = {
    "react": "AudioToolAgent (react: reason, call tools, cross-check)",
    "caption_first": "Compact caption-first agent (caption + ask, budget 4)",
    "refine": "AudioGenie-Reasoner (caption document refined up to 3 times)",
    "evidence": "EChO-Agent (type dispatch, evidence list, two answers, verifier)",
}
