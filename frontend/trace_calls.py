"""The Trace tab's table of tool calls and its line of totals, from a run's events."""

from __future__ import annotations

from collections.abc import Sequence

from agent import events as ev
from frontend.answer_text import input_tokens_text, md_escape, plural
from frontend.run_state import fold, stopped

TRACE_COLUMNS = ["tool", "model", "time (s)", "cached", "error", "tokens", "cost ($)"]


def trace_rows(events: Sequence[ev.Event]) -> list[list[str]]:
    """One row per tool call (columns ``TRACE_COLUMNS``); a running call has empty cells."""
    state = fold(events)
    rows = []
    for kind, key in state.order:
        if kind != "call":
            continue
        call, result = state.calls[key].call, state.calls[key].result
        if result is None:
            time = "stopped" if stopped(state) else "no result" if state.ended else "running…"
            rows.append([call.tool, call.model or "", time, "", "", "", ""])
            continue
        tokens = f"{result.usage.input_tokens + result.usage.output_tokens:,}"
        if result.usage.cache_read_tokens:
            tokens += f" ({result.usage.cache_read_tokens:,} cached)"
        rows.append(
            [
                call.tool,
                call.model or "",
                f"{result.duration_s:.2f}",
                "yes" if result.cached else "",
                result.error or "",
                tokens,
                f"{result.cost:.4f}",
            ]
        )
    return rows


def trace_totals(events: Sequence[ev.Event]) -> str:
    """Totals of a run as one Markdown line (from ``run_finished`` when there is one)."""
    state = fold(events)
    results = [c.result for c in state.calls.values() if c.result is not None]
    tool_time = sum(r.duration_s for r in results)
    errors = sum(1 for r in results if r.error)
    cached = sum(1 for r in results if r.cached)
    parts = [plural(len(state.calls), "tool call")]
    if errors:
        parts.append(f"{errors} failed")
    if cached:
        parts.append(f"{cached} cached")
    parts.append(f"tool time {tool_time:.2f} s")
    if state.finished is not None:
        f = state.finished
        parts += [
            f"wall {f.wall_s:.1f} s",
            f"tokens {input_tokens_text(f.input_tokens, f.cache_read_tokens)} · "
            f"{f.output_tokens:,} out",
            f"cost ${f.cost:.4f}",
            f"status {f.status}",
        ]
    elif stopped(state):
        parts.append("status cancelled (stopped)")
    elif state.failed is not None:
        parts.append(f"failed ({state.failed.kind})")
    elif events:
        parts.append("running")
    if state.started is not None:
        parts.append(state.started.planner_label or state.started.planner)
    return "**Totals:** " + " · ".join(md_escape(p) for p in parts)
