"""Compare: one row per contender run (from its events while they stream, or its stored
totals), the headline that says whether the runs agree (or only guessed), and the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent import events as ev
from backend.service import CompareSummary, RunView
from backend.service import summary_row as stored_row
from frontend.answer_text import md_escape
from frontend.render import Message
from frontend.run_state import fold

COMPARE_COLUMNS = [
    "planner", "strategy", "answer", "confidence", "calls", "time", "cost", "tokens",
]  # fmt: skip


def short_label(label: str) -> str:
    """The label without its parenthesis, for narrow headings ("Offline rule planner")."""
    return label.split(" (", 1)[0].strip() or label


def contender_label(planner_label: str, strategy: str) -> str:
    return f"{short_label(planner_label)} · {strategy}"


def planner_label_of(events: Sequence[ev.Event], default: str = "") -> str:
    started = next((e for e in events if isinstance(e, ev.RunStarted)), None)
    if started is None:
        return default
    return started.planner_label or started.planner


def summary_row(
    events: Sequence[ev.Event],
    *,
    run_id: str = "",
    planner: str = "",
    strategy: str = "",
    planner_label: str = "",
) -> dict[str, Any]:
    """One run of a comparison from its events (while they stream): the keys of the rows of
    ``backend.service.CompareSummary``; ``status`` is "running" until the run ends. The
    keyword arguments describe a run that has no event yet."""
    state = fold(events)
    started = state.started
    answer = state.answer
    row: dict[str, Any] = {
        "run_id": run_id or (events[0].run_id if events else ""),
        "planner": started.planner if started else planner,
        "planner_label": planner_label_of(events, planner_label or planner),
        "strategy": started.strategy if started else strategy,
        "answer": (answer.choice or answer.text.strip() or None) if answer else None,
        "confidence": answer.confidence if answer else None,
        "guess": bool(answer and answer.guess),
        "without_tools": bool(answer and answer.without_tools),
        "status": "running",
        "calls": sum(1 for c in state.calls.values() if c.result is not None),
        "tokens": sum(
            e.usage.input_tokens + e.usage.output_tokens
            for e in events
            if isinstance(e, ev.Thought | ev.ToolResultEvent)
        ),
        "cost": sum(e.cost for e in events if isinstance(e, ev.Thought | ev.ToolResultEvent)),
        "wall_s": None,
    }
    if state.finished is not None:
        f = state.finished
        row.update(status=f.status, calls=f.calls, tokens=f.input_tokens + f.output_tokens,
                   cost=f.cost, wall_s=f.wall_s)  # fmt: skip
    elif state.failed is not None:
        kind = state.failed.kind
        row["status"] = kind if kind in ("cancelled", "interrupted") else "failed"
        if state.last_at is not None and started is not None:
            row["wall_s"] = (state.last_at - started.at).total_seconds()
    return row


def stored_summary_row(run: RunView) -> dict[str, Any]:
    """One run of a comparison from its stored totals (a reopened conversation)."""
    answer = next((e for e in run.events if isinstance(e, ev.Answer)), None)
    return stored_row(run.info, planner_label_of(run.events, run.info.planner), answer)


def compare_rows(summary: CompareSummary) -> list[list[str]]:
    """The summary table (columns ``COMPARE_COLUMNS``), one row per run; a run that did not end
    well says so in its answer cell."""
    rows = []
    for run in summary.runs:
        wall, status = run.get("wall_s"), run["status"]
        answer = run.get("answer") or ("…" if status == "running" else "(no answer)")
        if run.get("answer") and run.get("guess"):
            answer = f"best guess: {answer}"
        if run.get("answer") and run.get("without_tools"):
            answer += " (no tool called: a text-only guess)"
        if status not in ("ok", "running"):
            answer += f" ({status})"
        confidence = run.get("confidence")
        rows.append(
            [
                short_label(run.get("planner_label") or run["planner"]),
                run["strategy"],
                answer,
                f"{confidence:.2f}" if confidence is not None else "",
                str(run.get("calls") or 0),
                f"{wall:.1f} s" if wall is not None else "",
                f"${run.get('cost') or 0.0:.4f}",
                f"{run.get('tokens') or 0:,}",
            ]
        )
    return rows


def compare_headline(summary: CompareSummary) -> str:
    """One Markdown line: whether the runs agree and the majority answer."""
    n = len(summary.runs)
    running = sum(1 for r in summary.runs if r["status"] == "running")
    if running:
        return f"**{n - running} of {n} runs finished.**"
    votes = " · ".join(f"{md_escape(_clip(a, 60))}: {c}" for a, c in summary.votes.items())
    sure = _confidences(summary)
    if summary.agreement and summary.majority and summary.all_guessed:
        return (
            f"**All {n} runs guessed; they agree on a guess:** best guess "
            f"{md_escape(summary.majority)} ({sure})"
        )
    if summary.agreement and summary.majority:
        guessed = f"; {summary.guessed} of them as a best guess" if summary.guessed else ""
        extra = f" ({sure}{guessed})" if sure or guessed else ""
        return f"**All {n} runs agree:** {md_escape(summary.majority)}{extra}"
    if summary.majority:
        count = summary.votes[summary.majority]
        lead = "**All runs guessed, and disagree.**" if summary.all_guessed else (
            "**The runs disagree.**")  # fmt: skip
        return (
            f"{lead} Majority answer: **{md_escape(summary.majority)}** "
            f"({count} of {n} runs; votes {votes})"
        )
    if summary.all_guessed:
        return f"**All {n} runs guessed, and no answer has a majority** (votes {votes})"
    if not summary.votes:
        return f"**None of the {n} runs gave an answer.**"
    return f"**No majority** among {n} runs (votes {votes})"


def _confidences(summary: CompareSummary) -> str:
    """Each run's confidence, in run order ("confidence 0.25 · 0.25 · 0.31")."""
    values = [r.get("confidence") for r in summary.runs]
    if all(v is None for v in values):
        return ""
    return "confidence " + " · ".join("–" if v is None else f"{v:.2f}" for v in values)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def compare_table_md(summary: CompareSummary) -> str:
    header = "| " + " | ".join(COMPARE_COLUMNS) + " |"
    rule = "|" + "---|" * len(COMPARE_COLUMNS)
    body = [
        "| " + " | ".join(md_escape(cell) for cell in row) + " |" for row in compare_rows(summary)
    ]
    return "\n".join([header, rule, *body])


def render_compare_summary(summary: CompareSummary) -> Message:
    """The comparison's result as a chat message: the headline and a table of the runs."""
    content = (
        f"**Comparison of {len(summary.runs)} runs**\n\n{compare_headline(summary)}\n\n"
        + compare_table_md(summary)
    )
    return {"role": "assistant", "content": content}
