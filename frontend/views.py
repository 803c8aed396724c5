"""What the main page shows, as component updates of ``frontend.page.Page``: the translation
of the read side (``frontend.reads``) into Gradio. Each function returns a dict of updates
for the components it names; the handlers merge them. Blocking where they read (call them in
a thread from async handlers).
"""

from __future__ import annotations

import html
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import gradio as gr

from agent import events as ev
from backend.service import AudioInfo, CompareSummary, MessageView
from frontend import answer_text, compare_view, history, render, stored_view
from frontend.page import Page
from frontend.page_sidebar import render_export_link
from frontend.reads import ConversationReads, OpenedConversation, trace_of
from frontend.trace_html import trace_table

Updates = dict[Any, Any]


def audio_url(audio_id: str) -> str:
    """Where the page plays and downloads a recording of the visitor's (owner-checked)."""
    return f"/api/audio/{audio_id}"


def audio_labels(recordings: Mapping[str, AudioInfo]) -> dict[str, str]:
    return {
        a: render.audio_label(i.name or "recording", i.duration_s) for a, i in recordings.items()
    }


def chat_messages(
    views: Sequence[MessageView],
    recordings: Mapping[str, AudioInfo],
    previous_audio: str | None = None,
    url: Any = audio_url,
) -> list[render.Message]:
    """The conversation as chat messages, each new recording a player in its question."""
    return stored_view.render_conversation(
        views, audio_labels(recordings), previous_audio, {a: url(a) for a in recordings}
    )


def unchanged(component: Any) -> Updates:
    """Nothing to change (a handler whose outputs are a dict must name one of them: an
    empty dict would be taken for a value)."""
    return {component: gr.skip()}


def status(message: str) -> Any:
    return gr.update(value=message, visible=bool(message))


def problem(page: Page, message: str, what: str = "Not asked") -> Updates:
    """A question that could not be asked (or a recording not attached): a toast and the
    line in the composer, with nothing the person typed lost."""
    gr.Warning(html.escape(message))
    return {page.composer.status: status(f"**{what}:** {answer_text.md_escape(message)}")}


def conversation_list(
    page: Page,
    reads: ConversationReads,
    selected: str | None,
    hidden: Collection[str] = (),
    *,
    missing: bool = False,
) -> Updates:
    """The sidebar's list with ``selected`` marked (the address follows it), and its timer
    on while a conversation is still answering (to take its spinner away)."""
    entries = reads.history_entries(hidden)
    return {
        page.sidebar.conv_list: history.history_html(entries, selected, missing=missing),
        page.sidebar.list_timer: gr.Timer(active=any(e.running for e in entries)),
    }


def player_html(info: AudioInfo | None, url: Any = audio_url) -> str:
    """A recording as a compact player with a download link ("" without one)."""
    if info is None:
        return ""
    link = html.escape(url(info.id))
    name = html.escape(render.audio_label(info.name or "recording", info.duration_s))
    return (
        f'<span class="chip-name">{name}</span>'
        f'<audio controls preload="metadata" src="{link}" aria-label="Play {name}"></audio>'
        f'<a href="{link}" download>Download</a>'
    )


def attachment(page: Page, info: AudioInfo | None) -> Updates:
    """The recording attached for the next question, as a chip with its player."""
    c = page.composer
    return {
        page.attachment: info.id if info else None,
        c.attachment_row: gr.update(visible=info is not None),
        c.attachment: player_html(info),
    }


def audio_note(page: Page, info: AudioInfo | None) -> Updates:
    """Which recording a follow-up question uses, when nothing new is attached."""
    text = ""
    if info is not None:
        name = answer_text.md_escape(info.name or "the recording")
        text = f"Follow-ups use **{name}**; attach another to change it."
    return {page.composer.audio_note: text}


def trace(page: Page, reads: ConversationReads, events: Sequence[ev.Event]) -> Updates:
    """The Trace tab for one run: its recording, timeline, totals and table of calls."""
    t = page.trace
    found = trace_of(events)
    return {
        t.player: player_html(reads.run_audio(events)) if events else "",
        t.timeline: reads.timeline_figure(events) if events else None,
        t.totals: found.totals,
        t.table: trace_table(found.rows),
    }


def live_trace(page: Page, events: Sequence[ev.Event]) -> Updates:
    """While a run streams: its table and totals (the timeline is drawn at its end)."""
    found = trace_of(events)
    return {page.trace.totals: found.totals, page.trace.table: trace_table(found.rows)}


def compare_columns(page: Page, columns: Sequence[tuple[str, list[render.Message]]]) -> Updates:
    """The compare tab's columns: (label, messages) per run; unused ones hidden."""
    p = page.compare
    height = 440 if len(columns) <= 2 else 340
    update: Updates = {p.rows[1]: gr.update(visible=len(columns) > 2)}
    for index, chat in enumerate(p.chats):
        if index < len(columns):
            label, messages = columns[index]
            update[chat] = gr.update(value=messages, label=label, visible=True, height=height)
            text = f"**Run {index + 1}:** {answer_text.md_escape(label)}"
            update[p.headings[index]] = gr.update(value=text, visible=True)
        else:
            update[chat] = gr.update(value=[], visible=False)
            update[p.plots[index]] = gr.update(value=None, visible=False)
            update[p.headings[index]] = gr.update(value="", visible=False)
    return update


def compare_timelines(
    page: Page, reads: ConversationReads, runs: Sequence[Sequence[ev.Event]]
) -> Updates:
    """One timeline under each compare column (hidden for a run without audio)."""
    update: Updates = {}
    for index, plot in enumerate(page.compare.plots):
        figure = reads.timeline_figure(runs[index], short=True) if index < len(runs) else None
        update[plot] = gr.update(value=figure, visible=figure is not None)
    return update


def compare_summary(page: Page, summary: CompareSummary | None) -> Updates:
    text = ""
    if summary is not None:
        text = (
            f"{compare_view.compare_headline(summary)}\n\n{compare_view.compare_table_md(summary)}"
        )
    return {page.compare.summary: text}


def stored_compare(page: Page, reads: ConversationReads, opened: OpenedConversation) -> Updates:
    """The compare tab of a reopened conversation: its latest comparison, if any."""
    view = opened.latest_compare
    if view is None:
        return {**compare_columns(page, []), **compare_summary(page, None)}
    columns = [
        (
            compare_view.contender_label(
                compare_view.planner_label_of(r.events, r.info.planner), r.info.strategy
            ),
            render.render_run(r.events),
        )
        for r in view.runs
    ]
    summary = CompareSummary.from_rows([compare_view.stored_summary_row(r) for r in view.runs])
    return {
        **compare_columns(page, columns),
        **compare_timelines(page, reads, [r.events for r in view.runs]),
        **compare_summary(page, summary),
    }


def opened(
    page: Page,
    reads: ConversationReads,
    conversation: OpenedConversation,
    hidden: Collection[str] = (),
) -> Updates:
    """The whole page for a stored conversation."""
    s, c = page.sidebar, page.composer
    runs = conversation.runs
    latest = conversation.latest
    events = (
        latest.events
        if latest and latest.complete
        else reads.run_events(latest.info.id if latest else None)
    )
    cid = conversation.conversation.id
    return {
        page.conversation: cid,
        **attachment(page, None),
        page.chatbot: chat_messages(conversation.views, conversation.recordings),
        page.full_btn: gr.update(visible=conversation.partial),
        **audio_note(page, reads.latest_audio(cid)),
        c.status: status(""),
        c.stop_btn: gr.update(interactive=conversation.live),  # a run followed after a reload
        s.rename_box: gr.update(value=conversation.conversation.title),
        s.export: render_export_link(cid),
        s.delete_confirm: gr.update(visible=False),
        s.share_link: gr.update(value="", visible=False),
        **conversation_list(page, reads, cid, hidden),
        page.trace.run_select: gr.update(choices=runs, value=runs[-1][1] if runs else None),
        **trace(page, reads, events),
        **stored_compare(page, reads, conversation),
    }


def empty(
    page: Page, reads: ConversationReads, hidden: Collection[str] = (), *, missing: bool = False
) -> Updates:
    """A new conversation: nothing asked yet (``missing``: the one asked for is not there)."""
    s, c = page.sidebar, page.composer
    return {
        page.conversation: None,
        **attachment(page, None),
        page.chatbot: [],
        page.full_btn: gr.update(visible=False),
        **audio_note(page, None),
        c.status: status(""),
        c.stop_btn: gr.update(interactive=False),
        s.rename_box: gr.update(value=""),
        s.export: render_export_link(None),
        s.delete_confirm: gr.update(visible=False),
        s.share_link: gr.update(value="", visible=False),
        **conversation_list(page, reads, None, hidden, missing=missing),
        page.trace.run_select: gr.update(choices=[], value=None),
        **trace(page, reads, []),
        **compare_columns(page, []),
        **compare_summary(page, None),
    }
