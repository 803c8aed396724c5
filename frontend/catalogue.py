"""What the settings panel offers, from the service's catalogue: planners, tools, presets and
strategies that are available, the defaults, the unavailable ones with what enables them,
and the pairs a comparison runs. Plain values and Markdown; no Gradio.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from frontend import answer_text, compare_view

MAX_CONTENDERS = 4  # runs in one comparison


def checks_markdown(checks: list[Any]) -> str:
    """The doctor's rows (agent.doctor.Check) as a list: entry, model, state, what to do."""
    if not checks:
        return "No remote planner or tool is configured."
    states = {
        "works": "works",
        "shuts_down": "works, but shuts down on {date}",
        "not_offered": "not offered to this key",
        "cannot_reach": "cannot reach",
        "error": "error",
        "skipped": "not configured",
    }
    lines = []
    for c in checks:
        state = states[c.status].format(date=c.shutdown_date)
        detail = f": {answer_text.md_escape(c.detail)}" if c.detail else ""
        lines.append(
            f"- **{answer_text.md_escape(c.name)}** ({c.kind}, "
            f"`{answer_text.md_escape(c.model)}`): *{state}*{detail}"
        )
    return "\n".join(lines)


def unavailable_table(catalogue: dict[str, list[dict[str, Any]]]) -> str:
    """The planners, tools and presets that cannot be used here, each with how to enable it
    (lists, not a table: the reasons are long and the column is narrow)."""
    parts = []
    for title, key in (("Planners", "planners"), ("Tools", "tools"), ("Presets", "presets")):
        lines = [
            f"- **{answer_text.md_escape(entry['label'] or entry['name'])}**: "
            f"{answer_text.md_escape(entry.get('reason') or 'unavailable')}"
            for entry in catalogue.get(key, [])
            if not entry["available"]
        ]
        if lines:
            parts.append(f"**{title}**\n\n" + "\n".join(lines))
    if not parts:
        return "Every configured planner, tool and preset is available."
    return "\n\n".join(parts)


def strategy_labels() -> dict[str, str]:
    """The agent's registered strategies (when a catalogue lists none)."""
    from backend.service import strategy_labels as registered

    return registered()


def default_strategy() -> str:
    """The strategy a question uses when none is picked (the registry's default)."""
    from backend.service import default_strategy as registered

    return registered()


def strategy_choices(catalogue: dict[str, Any]) -> list[tuple[str, str]]:
    """The strategies to offer: from the catalogue when it lists them, else the agent's own."""
    entries = catalogue.get("strategies")
    if entries:  # short labels: the dropdown is narrow (the full one is its info line)
        return [
            (f"{compare_view.short_label(e.get('label') or e['name'])} · {e['name']}", e["name"])
            for e in entries
            if e.get("available", True)
        ]
    return [(f"{label.split(' (')[0]} · {name}", name) for name, label in strategy_labels().items()]


def strategy_info(catalogue: dict[str, Any], name: str | None) -> str:
    """What the picked strategy does (its full label), for the line under the dropdown."""
    entries = {e["name"]: e for e in catalogue.get("strategies") or []}
    label = (entries.get(name or "") or {}).get("label") or strategy_labels().get(name or "")
    return f"{label}." if label else "The method the planner follows."


def contenders(
    planners: Sequence[str] | None, strategies: Sequence[str] | None
) -> list[tuple[str, str]]:
    """Every (planner, strategy) pair of the picks, planner by planner, at most MAX_CONTENDERS."""
    pairs = list(itertools.product(planners or [], strategies or []))
    return pairs[:MAX_CONTENDERS]


def planner_note(entry: dict[str, Any] | None) -> str:
    """Who answers: the planner in full, its model and what it is."""
    if entry is None:
        return "**No planner is available;** see *Unavailable planners, tools and presets*."
    text = f"Planner: **{entry['label'] or entry['name']}**"
    if entry.get("model"):
        text += f" · `{entry['model']}`"
    if entry.get("description"):
        text += f". {entry['description']}"
    return text


@dataclass
class Catalogue:
    """The catalogue as the page offers it, with its defaults."""

    raw: dict[str, Any]
    planners: dict[str, dict[str, Any]]  # every planner by name (labels of unavailable ones too)
    available_planners: list[dict[str, Any]]
    available_tools: list[dict[str, Any]]
    presets: list[dict[str, Any]]
    strategies: list[tuple[str, str]]  # (label, name)

    @classmethod
    def of(cls, catalogue: dict[str, Any]) -> Catalogue:
        return cls(
            raw=catalogue,
            planners={p["name"]: p for p in catalogue["planners"]},
            available_planners=[p for p in catalogue["planners"] if p["available"]],
            available_tools=[t for t in catalogue["tools"] if t["available"]],
            presets=[p for p in catalogue.get("presets", []) if p["available"]],
            strategies=strategy_choices(catalogue),
        )

    @property
    def strategy_names(self) -> list[str]:
        return [name for _, name in self.strategies]

    @property
    def default_planner(self) -> str | None:
        return self.available_planners[0]["name"] if self.available_planners else None

    @property
    def default_tools(self) -> list[str]:
        """The available tools ticked for a new question: not those the catalogue leaves off
        by default (web search, which would send the question to a search engine)."""
        return [t["name"] for t in self.available_tools if t.get("default_selected", True)]

    @property
    def default_strategy(self) -> str | None:
        names = self.strategy_names
        flagged = [s["name"] for s in self.raw.get("strategies") or [] if s.get("default")]
        chosen = next((n for n in flagged if n in names), None) or default_strategy()
        return chosen if chosen in names else (names[0] if names else None)

    @property
    def default_compare_strategies(self) -> list[str]:
        names = self.strategy_names
        flagged = [s["name"] for s in self.raw.get("strategies") or [] if s.get("compared")]
        if not flagged:  # a catalogue without the flags: the registry's
            from backend.service import compared_strategies

            flagged = compared_strategies()
        return [s for s in flagged if s in names] or names[:2]

    def planner_label(self, name: str | None) -> str:
        entry = self.planners.get(name or "")
        return (entry["label"] or entry["name"]) if entry else (name or "default planner")

    def matching_preset(self, planner: str | None, tools: Sequence[str] | None) -> str | None:
        chosen = set(tools or [])
        for preset in self.presets:
            if preset["planner"] == planner and set(preset["tools"]) == chosen:
                return preset["name"]
        return None

    def preset(self, name: str | None) -> tuple[str, list[str]] | None:
        """A preset's planner and its tools that are available here."""
        preset = next((p for p in self.presets if p["name"] == name), None)
        if preset is None:
            return None
        available = {t["name"] for t in self.available_tools}
        return preset["planner"], [t for t in preset["tools"] if t in available]

    def compare_note(self, planners: Sequence[str] | None, strategies: Sequence[str] | None) -> str:
        pairs = contenders(planners, strategies)
        total = len(planners or []) * len(strategies or [])
        if len(pairs) < 2:
            return (
                "Every pair of the planners and strategies picked here answers the question: "
                f"pick pairs that make 2 to {MAX_CONTENDERS} runs (e.g. one planner, two "
                "strategies)."
            )
        text = f"**{len(pairs)} runs side by side:** " + ", ".join(
            compare_view.contender_label(self.planner_label(p), s) for p, s in pairs
        )
        if total > len(pairs):
            text += f" (the first {MAX_CONTENDERS} of {total} pairs)"
        return text + ". Send the question to compare them."
