"""The local tools' warm-up state in the settings drawer's tool list: each local tool
"warming up", "ready" or "failed" (with why), refreshed by a timer until the warm-up is over
(``backend.host.warm_up``). A tool that is still warming up can be used: its first call
waits for its model."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from backend.host import warm_up

REFRESH_S = 2.0
MARKS = {"ready": "✓", "warming up": "…", "failed": "✗", "waiting": "·"}


def states_html(status: dict[str, Any], tools: list[dict[str, Any]]) -> str:
    """One line per local tool offered (``tools``: the catalogue's available tools); empty
    when the models are not warmed up in this process (they load at their first call)."""
    if not status.get("started"):
        return ""
    reasons = status.get("reasons") or {}
    states = status.get("tools") or {}
    rows = []
    for tool in tools:
        state = states.get(tool["name"])
        if state is None:
            continue  # a remote tool (or one without a local model)
        why = "; ".join(reasons.values()) if state == "failed" else ""
        title = f' title="{html.escape(why)}"' if why else ""
        rows.append(
            f'<li data-tool="{html.escape(tool["name"])}" data-state="{html.escape(state)}"{title}>'
            f'<span aria-hidden="true">{MARKS.get(state, "")}</span> '
            f"{html.escape(tool['label'] or tool['name'])}: {html.escape(state)}</li>"
        )
    if not rows:
        return ""
    heading = "Local models: ready" if status.get("done") else "Local models warming up"
    return f'<p class="tool-states-heading">{heading}</p><ul>{"".join(rows)}</ul>'


def refresh(tools: list[dict[str, Any]]) -> tuple[str, Any]:
    """The states now, and the timer: on while the warm-up goes on."""
    status = warm_up.status()
    running = bool(status.get("started")) and not status.get("done")
    return states_html(status, tools), gr.Timer(active=running)
