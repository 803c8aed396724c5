"""Command-line options that name strategies, with choices and defaults from the registry
(so a plugin's strategy is offered by every CLI: the agent's, the bench's)."""

from __future__ import annotations

import argparse

from agent.strategies import default_strategy, strategy_labels, strategy_names


def add_strategy_option(parser: argparse.ArgumentParser, flag: str = "--strategy") -> None:
    """``--strategy NAME``: one of the registered strategies, the default one if not given."""
    labels = strategy_labels()
    parser.add_argument(
        flag,
        default=default_strategy(),
        choices=list(labels),
        help="; ".join(f"{name}: {label}" for name, label in labels.items()),
    )


def add_strategies_option(parser: argparse.ArgumentParser, flag: str = "--strategies") -> None:
    """``--strategies NAME ...``: some of the registered strategies, all of them if not given."""
    names = strategy_names()
    parser.add_argument(flag, nargs="+", default=names, choices=names)
