"""The table of a run's tool calls as HTML that reads on any screen: a table on a wide one,
one card per call on a phone (``page.css`` lays each row out as a card, every cell with its
column's name from ``data-label``). Everything shown is escaped here; no Gradio.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from frontend.trace_calls import TRACE_COLUMNS

EMPTY = "No tool calls yet. Pick a run above, or ask a question."


def trace_table(rows: Sequence[Sequence[str]], caption: str = "Tool calls of the run") -> str:
    """One row per call (columns ``trace_calls.TRACE_COLUMNS``)."""
    if not rows:
        return f'<p class="trace-empty">{html.escape(EMPTY)}</p>'
    head = "".join(f'<th scope="col">{html.escape(c)}</th>' for c in TRACE_COLUMNS)
    body = []
    for row in rows:
        cells = []
        for column, value in zip(TRACE_COLUMNS, row, strict=False):
            kind = ' class="trace-stopped"' if value in ("stopped", "no result") else ""
            cells.append(
                f'<td data-label="{html.escape(column)}"{kind}>{html.escape(value or "")}</td>'
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<div class="trace-wrap"><table class="trace-table">'
        f'<caption class="sr-only">{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
