"""The sidebar's list of past conversations as HTML: grouped by day, each entry with its
title, the names of its recordings and a relative date.

A conversation with a run still going shows a spinner (and says "answering" to a screen
reader). The list's root carries the open conversation's id (``data-open``): the page keeps
the address bar on ``/c/{id}`` from it (``frontend/history.js``).

The list is one ARIA listbox (one Tab stop; the arrow keys move inside it, Enter opens) and
is filtered by the search box in the browser (``frontend/page.js``), on the ``data-search``
text of each entry. Everything shown is escaped here. Nothing here talks to Gradio or the
database.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from backend.service import ConversationInfo

EMPTY_TEXT = "No conversations yet. Ask a question and it appears here."
SPINNER = '<span class="conv-spinner" aria-hidden="true"></span>'


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    audio_names: tuple[str, ...]
    updated_at: datetime
    running: bool = False  # a run of it is still going


def entries(
    conversations: Sequence[ConversationInfo],
    audio_names: Mapping[str, Sequence[str]],
    running: Collection[str] = (),
) -> list[Entry]:
    return [
        Entry(c.id, c.title, tuple(audio_names.get(c.id, ())), c.updated_at, c.id in running)
        for c in conversations
    ]


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def relative_date(moment: datetime, now: datetime) -> str:
    """ "just now", "5 min ago", "3 h ago", "yesterday", "4 days ago", "12 Nov", "12 Nov 2024"."""
    moment, now = _utc(moment), _utc(now)
    seconds = (now - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    days = (now.date() - moment.date()).days
    if days == 0:
        return f"{int(seconds // 3600)} h ago"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    if moment.year == now.year:
        return f"{moment.day} {moment:%b}"
    return f"{moment.day} {moment:%b %Y}"


def day_label(moment: datetime, now: datetime) -> str:
    """The heading of the day group an entry belongs to."""
    moment, now = _utc(moment), _utc(now)
    days = (now.date() - moment.date()).days
    if days <= 0:
        return "Today"
    if days == 1:
        return "Yesterday"
    if days < 7:
        return f"{moment:%A}, {moment.day} {moment:%b}"
    if moment.year == now.year:
        return f"{moment.day} {moment:%B}"
    return f"{moment.day} {moment:%B %Y}"


def subtitle(entry: Entry, now: datetime) -> str:
    """The line under the title: the recordings' names and the relative date."""
    names = list(entry.audio_names)
    parts = []
    if names:
        parts.append(names[0] + (f" +{len(names) - 1}" if len(names) > 1 else ""))
    parts.append(relative_date(entry.updated_at, now))
    return " · ".join(parts)


def history_html(
    items: Sequence[Entry],
    selected: str | None = None,
    now: datetime | None = None,
    *,
    missing: bool = False,
    pending: bool = False,
) -> str:
    """The listbox: day groups, newest first (``items`` are in that order). ``missing``: the
    conversation the address asked for does not exist (for this owner): the page replaces
    the address instead of adding a history entry. ``pending``: the page's first list, before
    the server has said what is open (the address is left alone)."""
    now = now or datetime.now(UTC)
    root = f' data-open="{html.escape(selected or "")}"' + (' data-missing="1"' if missing else "")
    root += ' data-pending="1"' if pending else ""
    if not items:
        empty = f'<p class="conv-empty">{html.escape(EMPTY_TEXT)}</p>'
        return f'<div class="conv-root"{root}>{empty}</div>'
    focus_id = selected if any(i.id == selected for i in items) else items[0].id
    groups: list[tuple[str, list[Entry]]] = []
    for item in items:
        label = day_label(item.updated_at, now)
        if not groups or groups[-1][0] != label:
            groups.append((label, []))
        groups[-1][1].append(item)
    out = [f'<div class="conv-root"{root}>',
           '<div class="conv-list" role="listbox" aria-label="Past conversations">']  # fmt: skip
    for number, (label, group) in enumerate(groups):
        heading = f"conv-day-{number}"
        out.append(f'<div class="conv-group" role="group" aria-labelledby="{heading}">')
        out.append(f'<div class="conv-day" id="{heading}">{html.escape(label)}</div>')
        for item in group:
            sub = subtitle(item, now)
            search = " ".join([item.title, *item.audio_names]).casefold()
            chosen = item.id == selected
            spinner = SPINNER if item.running else ""
            answering = '<span class="sr-only"> (answering)</span>' if item.running else ""
            out.append(
                f'<div class="conv-item" role="option" id="conv-{html.escape(item.id)}"'
                f' data-id="{html.escape(item.id)}" data-search="{html.escape(search)}"'
                f' aria-selected="{"true" if chosen else "false"}"'
                f' tabindex="{0 if item.id == focus_id else -1}"'
                f' title="{html.escape(item.title)}"'
                f' data-running="{"1" if item.running else "0"}">'
                f'<span class="conv-title">{spinner}{html.escape(item.title)}{answering}</span>'
                f'<span class="conv-meta">{html.escape(sub)}</span></div>'
            )
        out.append("</div>")
    out.append("</div>")
    out.append('<p class="conv-nomatch" hidden>No conversation matches the search.</p>')
    out.append("</div>")
    return "".join(out)
