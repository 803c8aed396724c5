"""The Gradio Blocks UI: a thin translation of the service's events into chat messages.

Layout: a sidebar with past conversations (search, grouped by day; open, rename, delete with
undo, export), closed by default on narrow screens; two tabs, the chat, where every planner
turn and tool call of a run appears live as a collapsible panel, and compare mode, where
several (planner, strategy) pairs answer the same question in columns side by side, then a
summary; under them the input as in any chat: the conversation's recording (a player with a
download link), a new recording, the question (Enter sends, Shift+Enter adds a line) and the
answer choices; beside them (below on phones) the preset, planner, strategy and tool
toggles; at the bottom, the trace of an answer: an interactive timeline of the time spans its
tools reported (click to play from there) and a table of its calls.
All rendering lives in ``frontend.render`` (chat messages, tables), ``frontend.timeline``
(the figure) and ``frontend.history`` (the sidebar list) and is shared by live runs and
reopened ones; ``page.css``, ``page.js`` and ``history.js`` beside this file are the page's
styles and behaviour.
"""

from __future__ import annotations

import asyncio
import copy
import html
import itertools
import logging
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from agent import events as ev
from agent.audio import SAMPLE_RATE
from agent.run import RunRequest
from backend import hf_oauth
from backend.auth import owner_from_request
from backend.errors import ServiceError
from backend.limits import check_question, check_title
from backend.owned import OwnedService
from backend.service import (
    AgentService,
    AskRequest,
    CompareSummary,
    MessageView,
    RunView,
)
from frontend import benchmarks_tab, files, history, live, render, shared_view, timeline
from storage.schemas import AudioInfo, MessageInfo

log = logging.getLogger(__name__)

TITLE = "Ask about audio"
DEFAULT_STRATEGY = "react"
UPDATE_EVERY_S = 0.1  # at most this often for planner text deltas; structure always at once
FULL_TRACES = 3  # the chat shows the whole trace of the last questions, the answer of the rest
FORMATS = "wav, mp3, ogg, flac, m4a, webm"
MAX_CONTENDERS = 4  # runs in one comparison
DEFAULT_COMPARE_STRATEGIES = ("react", "evidence")

UNDO_S = 8.0  # a deleted conversation can be brought back for this long
HELP_HTML = (
    "Upload or record audio and ask a question (answer choices optional, one per line): the "
    "planner's reasoning and every tool call stream into the chat. <b>Compare</b> runs several "
    "planners or strategies at once."
)
INPUT_HINT = "**Enter** sends · **Shift+Enter** adds a line"

# Gradio 6 takes page CSS only in launch()/mount_gradio_app(); so that build_ui alone makes the
# page tidy, the header component injects it into <head> (and runs the page's script).
_HERE = Path(__file__).parent
CSS = (_HERE / "page.css").read_text()
PAGE_JS = (_HERE / "page.js").read_text()
HISTORY_JS = (_HERE / "history.js").read_text()


def parse_choices(text: str | None) -> list[str]:
    """Answer choices typed one per line; blank lines are ignored."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


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
        detail = f": {render.md_escape(c.detail)}" if c.detail else ""
        lines.append(
            f"- **{render.md_escape(c.name)}** ({c.kind}, `{render.md_escape(c.model)}`): "
            f"*{state}*{detail}"
        )
    return "\n".join(lines)


def unavailable_table(catalogue: dict[str, list[dict[str, Any]]]) -> str:
    """The planners, tools and presets that cannot be used here, each with how to enable it
    (lists, not a table: the reasons are long and the column is narrow)."""
    parts = []
    for title, key in (("Planners", "planners"), ("Tools", "tools"), ("Presets", "presets")):
        lines = [
            f"- **{render.md_escape(entry['label'] or entry['name'])}**: "
            f"{render.md_escape(entry.get('reason') or 'unavailable')}"
            for entry in catalogue.get(key, [])
            if not entry["available"]
        ]
        if lines:
            parts.append(f"**{title}**\n\n" + "\n".join(lines))
    if not parts:
        return "Every configured planner, tool and preset is available."
    return "\n\n".join(parts)


def strategy_choices(catalogue: dict[str, Any]) -> list[tuple[str, str]]:
    """The strategies to offer: from the catalogue when it lists them, else the agent's own."""
    entries = catalogue.get("strategies")
    if entries:  # short labels: the dropdown is narrow (the full one is its info line)
        return [
            (f"{render.short_label(e.get('label') or e['name'])} · {e['name']}", e["name"])
            for e in entries
            if e.get("available", True)
        ]
    try:
        from agent.strategies import STRATEGY_LABELS
    except ImportError:
        return []
    return [(f"{label.split(' (')[0]} · {name}", name) for name, label in STRATEGY_LABELS.items()]


def strategy_info(catalogue: dict[str, Any], name: str | None) -> str:
    """What the picked strategy does (its full label), for the line under the dropdown."""
    entries = {e["name"]: e for e in catalogue.get("strategies") or []}
    label = (entries.get(name or "") or {}).get("label")
    if not label:
        try:
            from agent.strategies import STRATEGY_LABELS

            label = STRATEGY_LABELS.get(name or "")
        except ImportError:
            label = None
    return f"{label}." if label else "The method the planner follows."


def contenders(planners: Sequence[str] | None, strategies: Sequence[str] | None) -> list[tuple]:
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
class _Started:
    """A question that passed validation and was stored, with what the view needs."""

    conversation_id: str
    requests: list[RunRequest]
    message: MessageInfo
    views: list[MessageView]  # the conversation before this question
    prefix: list[render.Message]  # those views rendered
    user: render.Message  # this question rendered
    uploaded: dict[str, Any]


class _Ui:
    """The handlers, bound to one service."""

    async def check_models(self) -> str:
        """The "Check models" button: the doctor's checks as a list (shared by every visitor
        and repeated at most every few minutes: each check is a small paid call)."""
        return checks_markdown(await self.agent.model_checks.get(self.agent.registry))

    def __init__(self, service: AgentService) -> None:
        self.agent = service
        # Scoped to one owner; each handler rescopes to its request's owner (scoped()).
        self.service: Any = OwnedService(service, owner_from_request(None))
        self.store: Any = self.service.store
        self.follows = live.Follows()
        catalogue = service.catalogue()
        self.catalogue = catalogue
        self.planners = {p["name"]: p for p in catalogue["planners"]}
        self.available_planners = [p for p in catalogue["planners"] if p["available"]]
        self.available_tools = [t for t in catalogue["tools"] if t["available"]]
        self.presets = [p for p in catalogue.get("presets", []) if p["available"]]
        self.strategies = strategy_choices(catalogue)
        self.components: dict[str, Any] = {}
        # conversations deleted but still undoable: id -> the timer that deletes them
        self.pending_deletes: dict[str, asyncio.TimerHandle] = {}

    def scoped(self, request: gr.Request | None) -> _Ui:
        """These handlers for the owner of ``request`` (backend.auth, backend.owned)."""
        return self if request is None else self.for_owner(owner_from_request(request))

    def for_owner(self, owner: str) -> _Ui:
        view = copy.copy(self)
        view.service = OwnedService(self.agent, owner)
        view.store = view.service.store
        return view

    # -- helpers ------------------------------------------------------------------------------
    def history_entries(self) -> list[history.Entry]:
        conversations = [
            c for c in self.store.list_conversations() if c.id not in self.pending_deletes
        ]
        names = self.store.conversation_audio_names(c.id for c in conversations)
        return history.entries(conversations, names)

    def list_update(self, selected: str | None) -> str:
        """The sidebar's list (HTML), with ``selected`` marked as the open conversation."""
        return history.history_html(self.history_entries(), selected)

    def audio_labels(self, views: list[MessageView]) -> dict[str, str]:
        """A label for each recording of the conversation (one query, whatever its length)."""
        ids = [v.message.audio_id for v in views if v.message.audio_id]
        infos = self.store.audio_infos(ids)
        return {
            a: render.audio_label(infos[a].name, infos[a].duration_s) if a in infos else "recording"
            for a in ids
        }

    def latest_audio(self, conversation_id: str | None) -> AudioInfo | None:
        """The recording a follow-up question uses (two small reads)."""
        audio_id = self.service.latest_audio_id(conversation_id) if conversation_id else None
        return self.store.get_audio(audio_id) if audio_id else None

    def audio_note(self, info: AudioInfo | None) -> str:
        if info is None:
            return ""
        return (
            f"A follow-up question uses **{render.md_escape(info.name or 'recording')}** "
            "unless you give another recording below."
        )

    def player_html(self, info: AudioInfo | None) -> str:
        """The conversation's recording as a compact player with a download link ("" without
        one); the timelines play it from the time clicked."""
        if info is None:
            return ""
        url = f"/api/audio/{html.escape(info.id)}"
        name = html.escape(render.audio_label(info.name or "recording", info.duration_s))
        return (
            f'<span class="chip-name">Recording: {name}</span>'
            f'<audio controls preload="metadata" src="{url}" '
            f'aria-label="Play the recording {name}"></audio>'
            f'<a href="{url}" download>Download audio</a>'
            '<span class="chip-status" role="status" aria-live="polite"></span>'
        )

    def audio_views(self, conversation_id: str | None) -> dict[Any, Any]:
        """The player, the note under it, and the new-recording box (open without one)."""
        c = self.components
        info = self.latest_audio(conversation_id)
        player = self.player_html(info)
        return {
            c["player"]: gr.update(value=player, visible=bool(player)),
            c["audio_note"]: self.audio_note(info),
            c["audio_box"]: gr.Accordion(
                label="Use another recording" if player else f"Recording ({FORMATS})",
                open=not player,
            ),
        }

    def run_choices(self, views: list[MessageView]) -> list[tuple[str, str]]:
        options = []
        number = 0
        for view in views:
            for run in view.runs:
                number += 1
                question = view.message.text.strip().replace("\n", " ")
                if len(question) > 48:
                    question = question[:47] + "…"
                label = f"{number}. {question} · {run.info.planner} · {run.info.strategy}"
                options.append((label, run.info.id))
        return options

    def trace(self, events: list[ev.Event]) -> tuple[list[list[str]], str]:
        rows = render.trace_rows(events)
        return rows, render.trace_totals(events) if events else ""

    def timeline_figure(self, events: Sequence[ev.Event], short: bool = False) -> go.Figure | None:
        """The run's audio with the spans its tools reported; None without audio."""
        started = next((e for e in events if isinstance(e, ev.RunStarted)), None)
        if started is None or not started.audio_ids:
            return None
        ref = self.service.audio.get(started.audio_ids[0])
        if ref is None:
            return None
        try:
            samples = self.service.audio.samples(ref)
            label = render.contender_label(render.planner_label_of(events), started.strategy)
            title = label if short else f"{label} · {ref.name or 'recording'} · tool time spans"
            return timeline.timeline_figure(
                samples, SAMPLE_RATE, timeline.tracks_from_events(events), title=title,
                compact=short,
            )  # fmt: skip
        except Exception:  # a figure must never break the page
            log.exception("could not draw the timeline of run %s", started.run_id)
            return None

    def run_detail(
        self, run_id: str | None, events: list[ev.Event] | None = None
    ) -> dict[Any, Any]:
        """The trace table, totals and timeline of one stored run (its ``events``, when they
        are at hand)."""
        c = self.components
        if events is None:
            events = self.store.run_events(run_id) if run_id else []
        rows, totals = self.trace(events)
        return {
            c["trace_df"]: rows,
            c["trace_totals"]: totals,
            c["timeline"]: self.timeline_figure(events),
        }

    def latest_detail(self, run: RunView | None) -> dict[Any, Any]:
        if run is None:
            return self.run_detail(None)
        return self.run_detail(run.info.id, run.events if run.complete else None)

    def planner_label(self, name: str | None) -> str:
        entry = self.planners.get(name or "")
        return (entry["label"] or entry["name"]) if entry else (name or "default planner")

    def compare_note(self, planners: list[str] | None, strategies: list[str] | None) -> str:
        pairs = contenders(planners, strategies)
        total = len(planners or []) * len(strategies or [])
        if len(pairs) < 2:
            return (
                "Every pair of the planners and strategies picked here answers the question "
                f"below: pick pairs that make 2 to {MAX_CONTENDERS} runs (e.g. one planner, "
                "two strategies)."
            )
        text = f"**{len(pairs)} runs side by side:** " + ", ".join(
            render.contender_label(self.planner_label(p), s) for p, s in pairs
        )
        if total > len(pairs):
            text += f" (the first {MAX_CONTENDERS} of {total} pairs)"
        return text + f". Press **Compare {len(pairs)} runs**."

    def button_label(
        self, mode: str | None, planners: list[str] | None, strategies: list[str] | None
    ) -> str:
        if mode != "compare":
            return "Ask"
        return f"Compare {len(contenders(planners, strategies))} runs"

    def matching_preset(self, planner: str | None, tools: list[str] | None) -> str | None:
        chosen = set(tools or [])
        for preset in self.presets:
            if preset["planner"] == planner and set(preset["tools"]) == chosen:
                return preset["name"]
        return None

    # -- compare view ---------------------------------------------------------------------------
    def compare_columns(
        self, columns: Sequence[tuple[str, list[render.Message]]]
    ) -> dict[Any, Any]:
        """The column chatbots: (label, messages) per run; unused columns hidden."""
        c = self.components
        height = 440 if len(columns) <= 2 else 340
        update: dict[Any, Any] = {c["compare_rows"][1]: gr.update(visible=len(columns) > 2)}
        for index, chat in enumerate(c["compare_chats"]):
            plot, heading = c["compare_plots"][index], c["compare_headings"][index]
            if index < len(columns):
                label, messages = columns[index]
                update[chat] = gr.update(value=messages, label=label, visible=True, height=height)
                text = f"**Run {index + 1}:** {render.md_escape(label)}"
                update[heading] = gr.update(value=text, visible=True)
            else:
                update[chat] = gr.update(value=[], visible=False)
                update[plot] = gr.update(value=None, visible=False)
                update[heading] = gr.update(value="", visible=False)
        return update

    def compare_timelines(self, runs: Sequence[Sequence[ev.Event]]) -> dict[Any, Any]:
        """One timeline under each compare column (hidden for a run without audio)."""
        update: dict[Any, Any] = {}
        for index, plot in enumerate(self.components["compare_plots"]):
            figure = self.timeline_figure(runs[index], short=True) if index < len(runs) else None
            update[plot] = gr.update(value=figure, visible=figure is not None)
        return update

    def compare_summary_view(self, summary: CompareSummary | None) -> dict[Any, Any]:
        """The headline (agreement, majority) and the table of the runs, above the columns."""
        text = ""
        if summary is not None:
            text = f"{render.compare_headline(summary)}\n\n{render.compare_table_md(summary)}"
        return {self.components["compare_summary"]: text}

    def stored_compare(self, views: list[MessageView]) -> dict[Any, Any]:
        """The compare tab for a reopened conversation: its latest comparison, if any."""
        view = next((v for v in reversed(views) if len(v.runs) > 1), None)
        if view is None:
            return {**self.compare_columns([]), **self.compare_summary_view(None)}
        columns = [
            (
                render.contender_label(
                    render.planner_label_of(r.events, r.info.planner), r.info.strategy
                ),
                render.render_run(r.events),
            )
            for r in view.runs
        ]
        summary = CompareSummary.from_rows([render.stored_summary_row(r) for r in view.runs])
        return {
            **self.compare_columns(columns),
            **self.compare_timelines([r.events for r in view.runs]),
            **self.compare_summary_view(summary),
        }

    # -- handlers -----------------------------------------------------------------------------
    def on_load(self, request: gr.Request | None = None) -> dict[str, Any]:
        self = self.scoped(request)
        return self.list_update(None)

    def open_conversation(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """The view of a stored conversation (blocking: the async handlers call it in a
        thread, ``opened``)."""
        return self.scoped(request).opened(conversation_id)[0]

    def opened(self, conversation_id: str | None) -> tuple[dict[Any, Any], list[MessageView]]:
        """A stored conversation's view and what it was made from, in a fixed number of
        queries: the whole trace of the last FULL_TRACES questions, the summary of earlier
        ones (``render.render_summary``). No view ([]) when it does not exist."""
        c = self.components
        conv = self.store.get_conversation(conversation_id) if conversation_id else None
        if conv is None:
            gr.Warning("That conversation no longer exists.")
            return self.new_conversation(), []
        views = self.service.conversation_view(conv.id, full_last=FULL_TRACES)
        runs = self.run_choices(views)
        latest = next((r for v in reversed(views) for r in reversed(v.runs)), None)
        question = next((v for v in reversed(views) if v.runs), None)
        live = question is not None and any(r.info.status == "running" for r in question.runs)
        return {
            c["conv_state"]: conv.id,
            c["uploaded_state"]: {"conversation": conv.id, "path": None},
            c["chatbot"]: render.render_conversation(views, self.audio_labels(views)),
            c["full_btn"]: gr.update(visible=any(not r.complete for v in views for r in v.runs)),
            c["audio"]: None,
            **self.audio_views(conv.id),
            c["rename_box"]: gr.update(value=conv.title),
            c["export_btn"]: export_link(conv.id),
            c["run_select"]: gr.update(choices=runs, value=runs[-1][1] if runs else None),
            **self.latest_detail(latest),
            c["status"]: _status(""),
            c["delete_confirm"]: gr.update(visible=False),
            # Stop only while a run is going (one followed after a reload, say)
            c["stop_btn"]: gr.update(interactive=live),
            **self.stored_compare(views),
        }, views

    def show_all_traces(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """The "Show all traces" button: the chat with every run's whole trace (read now)."""
        self = self.scoped(request)
        c = self.components
        if not conversation_id or self.store.get_conversation(conversation_id) is None:
            return {c["full_btn"]: gr.update(visible=False)}
        views = self.service.conversation_view(conversation_id)
        return {
            c["chatbot"]: render.render_conversation(views, self.audio_labels(views)),
            c["full_btn"]: gr.update(visible=False),
        }

    async def pick_conversation(
        self, request: gr.Request, evt: gr.EventData
    ) -> AsyncIterator[dict[Any, Any]]:
        """A click (or Enter) on an entry of the sidebar's list: open it, and follow a run
        that is still going."""
        self = self.scoped(request)
        conversation_id = (getattr(evt, "_data", None) or {}).get("id")
        marked = False
        async for update in self.open_live(conversation_id, request):
            if not marked:
                listed = await asyncio.to_thread(self.list_update, conversation_id)
                update = {**update, self.components["conv_list"]: listed}
                marked = True
            yield update

    def new_conversation(self) -> dict[Any, Any]:
        c = self.components
        return {
            c["conv_state"]: None,
            c["uploaded_state"]: None,
            c["chatbot"]: [],
            c["audio"]: None,
            **self.audio_views(None),
            c["rename_box"]: gr.update(value=""),
            c["export_btn"]: export_link(None),
            c["full_btn"]: gr.update(visible=False),
            c["run_select"]: gr.update(choices=[], value=None),
            c["trace_df"]: [],
            c["trace_totals"]: "",
            c["timeline"]: None,
            c["status"]: _status(""),
            c["delete_confirm"]: gr.update(visible=False),
            c["stop_btn"]: gr.update(interactive=False),
            **self.compare_columns([]),
            **self.compare_summary_view(None),
        }

    def new_and_list(self, request: gr.Request | None = None) -> dict[Any, Any]:
        self = self.scoped(request)
        return {**self.new_conversation(), self.components["conv_list"]: self.list_update(None)}

    def select_run(self, run_id: str | None, request: gr.Request | None = None) -> dict[Any, Any]:
        self = self.scoped(request)
        return self.run_detail(run_id)

    def rename(
        self, conversation_id: str | None, title: str, request: gr.Request | None = None
    ) -> tuple[Any, ...]:
        self = self.scoped(request)
        title = (title or "").strip()
        if not conversation_id:
            gr.Warning("Open a conversation first.")
            return gr.skip(), gr.skip()
        try:
            title = check_title(title, self.service.settings.limits)
        except ServiceError as exc:
            gr.Warning(html.escape(str(exc)))
            return gr.skip(), gr.skip()
        self.store.rename_conversation(conversation_id, title)
        return self.list_update(conversation_id), export_link(conversation_id)

    def ask_delete(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """Delete, step 1: ask to confirm."""
        self = self.scoped(request)
        c = self.components
        conv = self.store.get_conversation(conversation_id) if conversation_id else None
        if conv is None:
            gr.Warning("Open a conversation first.")
            return {c["delete_confirm"]: gr.update(visible=False)}
        return {
            c["delete_confirm"]: gr.update(visible=True),
            c["delete_question"]: (
                f"Delete **{render.md_escape(conv.title)}**? You can undo it for "
                f"{UNDO_S:.0f} seconds."
            ),
        }

    async def delete(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """Delete, step 2 (confirmed): hidden at once, gone for good after UNDO_S seconds
        unless Undo is pressed first."""
        self = self.scoped(request)
        c = self.components
        conv = await asyncio.to_thread(self.store.get_conversation, conversation_id or "")
        if conv is None or conversation_id is None:
            gr.Warning("Open a conversation first.")
            return {c["delete_confirm"]: gr.update(visible=False)}
        loop = asyncio.get_running_loop()  # the deletion (files too) in a thread, not here
        self.pending_deletes[conversation_id] = loop.call_later(
            UNDO_S, loop.run_in_executor, None, self.finish_delete, conversation_id
        )
        return {
            **await asyncio.to_thread(self.new_and_list),
            c["undo_state"]: conversation_id,
            c["undo_bar"]: gr.update(visible=True),
            c["undo_text"]: f"Deleted **{render.md_escape(conv.title)}**.",
            c["undo_timer"]: gr.Timer(UNDO_S + 0.5, active=True),
        }

    def finish_delete(self, conversation_id: str) -> None:
        if self.pending_deletes.pop(conversation_id, None) is not None:
            self.service.delete_conversation(conversation_id)

    async def undo_delete(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        self = self.scoped(request)
        c = self.components
        handle = self.pending_deletes.pop(conversation_id or "", None)
        hide = {
            c["undo_bar"]: gr.update(visible=False),
            c["undo_timer"]: gr.Timer(active=False),
            c["undo_state"]: None,
        }
        if handle is None or conversation_id is None:
            gr.Warning("Too late: that conversation is deleted.")
            return {**hide, c["conv_list"]: await asyncio.to_thread(self.list_update, None)}
        handle.cancel()
        gr.Info("Conversation restored.")
        return {
            **await asyncio.to_thread(self.open_conversation, conversation_id),
            **hide,
            c["conv_list"]: await asyncio.to_thread(self.list_update, conversation_id),
        }

    def undo_expired(self) -> dict[Any, Any]:
        c = self.components
        return {
            c["undo_bar"]: gr.update(visible=False),
            c["undo_timer"]: gr.Timer(active=False),
            c["undo_state"]: None,
        }

    def last_question(self, conversation_id: str | None) -> MessageInfo | None:
        if not conversation_id or self.store.get_conversation(conversation_id) is None:
            return None
        return next(
            (m for m in reversed(self.store.list_messages(conversation_id)) if m.role == "user"),
            None,
        )

    def edit_last(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """Put the last question and its choices back in the input, to change and send."""
        self = self.scoped(request)
        c = self.components
        message = self.last_question(conversation_id)
        if message is None:
            gr.Warning("There is no question to edit yet.")
            return {}
        return {
            c["question"]: message.text,
            c["choices"]: "\n".join(message.choices),
            c["choices_box"]: gr.Accordion(open=bool(message.choices)),
        }

    async def retry(
        self,
        mode: str | None,
        conversation_id: str | None,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None,
        compare_planners: list[str] | None,
        compare_strategies: list[str] | None,
        request: gr.Request | None = None,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Ask the last question again (same text, choices and recording) as a new turn."""
        self = self.scoped(request)
        message = await asyncio.to_thread(self.last_question, conversation_id)
        if message is None:
            yield self.problem("There is no question to retry yet.")
            return
        async for update in self.submit(
            mode, conversation_id, {"conversation": conversation_id, "path": None}, None,
            message.text, "\n".join(message.choices), planner, tools, strategy,
            compare_planners, compare_strategies,
        ):  # fmt: skip
            yield update

    def on_planner(self, name: str | None) -> str:
        return planner_note(self.planners.get(name or ""))

    def on_preset(self, name: str | None) -> tuple[Any, ...]:
        preset = next((p for p in self.presets if p["name"] == name), None)
        if preset is None:
            return gr.skip(), gr.skip()
        available = {t["name"] for t in self.available_tools}
        tools = [t for t in preset["tools"] if t in available]
        return gr.update(value=preset["planner"]), gr.update(value=tools)

    def on_selection(self, planner: str | None, tools: list[str] | None) -> dict[str, Any]:
        """A planner or tool picked by hand: the preset shows whether it still matches."""
        return gr.update(value=self.matching_preset(planner, tools))

    def on_tab(
        self, mode: str, planners: list[str] | None, strategies: list[str] | None
    ) -> tuple[Any, ...]:
        return mode, gr.update(value=self.button_label(mode, planners, strategies))

    def on_contenders(
        self, mode: str | None, planners: list[str] | None, strategies: list[str] | None
    ) -> tuple[Any, ...]:
        # Only in the compare tab: the pickers mount (and may fire) when that tab is first
        # shown, racing its select event, which must win.
        label = self.button_label(mode, planners, strategies) if mode == "compare" else None
        return (
            self.compare_note(planners, strategies),
            gr.update(value=label) if label else gr.skip(),
        )

    def idle(
        self,
        mode: str | None = None,
        planners: list[str] | None = None,
        strategies: list[str] | None = None,
    ) -> tuple[Any, ...]:
        """Ask and Retry are enabled again and Stop disabled: nothing runs."""
        return (
            gr.update(value=self.button_label(mode, planners, strategies), interactive=True),
            gr.update(interactive=False),
            gr.update(interactive=True),
        )

    def problem(self, message: str) -> dict[Any, Any]:
        gr.Warning(html.escape(message))
        return {self.components["status"]: _status(f"**Not asked:** {render.md_escape(message)}")}

    async def start(
        self,
        conversation_id: str | None,
        uploaded: dict[str, Any] | None,
        audio_path: str | None,
        question: str,
        choices_text: str,
        tools: list[str] | None,
        pairs: list[tuple[str | None, str]],
    ) -> _Started:
        """Upload the audio if it is new, open a conversation if needed, store the question
        and prepare its runs; ServiceError (nothing stored) if it cannot be asked. The
        database work runs in a thread, never on the event loop."""
        if not (question or "").strip():
            raise ServiceError("Type a question first.")
        # Lengths first: a huge question is refused before any upload is decoded.
        check_question(question.strip(), parse_choices(choices_text), self.service.settings.limits)
        audio_id: str | None = None
        if audio_path and not (
            uploaded
            and uploaded.get("conversation") == conversation_id
            and uploaded.get("path") == audio_path
        ):
            info = await asyncio.to_thread(self.service.upload_file, audio_path)
            audio_id = info.id
        ask = AskRequest(
            question=question,
            choices=parse_choices(choices_text),
            audio_id=audio_id,
            tools=list(tools or []),
        )
        record = self.record_question
        return await asyncio.to_thread(record, conversation_id, ask, pairs, audio_path)

    def record_question(
        self,
        conversation_id: str | None,
        ask: AskRequest,
        pairs: list[tuple[str | None, str]],
        audio_path: str | None = None,
    ) -> _Started:
        """Store the question (in a new conversation if needed) and prepare its runs. The
        conversation before it is read as it is opened (``opened``: a fixed number of
        queries, the whole trace of its last questions only) and rendered once here: each
        update of the answer only adds the new run's messages to it."""
        created = False
        if conversation_id is None or self.store.get_conversation(conversation_id) is None:
            conversation_id = self.store.create_conversation().id
            created = True
        try:
            views = self.service.conversation_view(conversation_id, full_last=FULL_TRACES)
            requests, message = self.service.prepare_many(conversation_id, ask, pairs)
        except ServiceError:
            if created:
                self.store.delete_conversation(conversation_id)
            raise
        labels = self.audio_labels([*views, MessageView(message)])
        new_audio = message.audio_id if message.audio_id != render.last_audio(views) else None
        return _Started(
            conversation_id=conversation_id,
            requests=requests,
            message=message,
            views=views,
            prefix=render.render_conversation(views, labels),
            user=render.render_user(
                message.text, message.choices, labels.get(new_audio) if new_audio else None
            ),
            uploaded={"conversation": conversation_id, "path": audio_path},
        )

    def started_view(self, started: _Started, running: str) -> dict[Any, Any]:
        """What changes as soon as a question is accepted."""
        c = self.components
        return {
            c["conv_state"]: started.conversation_id,
            c["uploaded_state"]: started.uploaded,
            c["question"]: "",
            c["choices"]: "",
            c["status"]: _status(""),
            c["audio"]: None,  # asked with it: from now on the conversation's recording
            **self.audio_views(started.conversation_id),
            c["ask_btn"]: gr.update(value=running, interactive=False),
            c["stop_btn"]: gr.update(interactive=True),
            c["retry_btn"]: gr.update(interactive=False),
            c["full_btn"]: gr.update(
                visible=any(not r.complete for v in started.views for r in v.runs)
            ),
            c["conv_list"]: self.list_update(started.conversation_id),
            c["run_select"]: gr.update(
                choices=self.run_choices([*started.views, MessageView(started.message)])
                + [
                    (f"Running: {started.message.text[:48]}", r.run_id)
                    for r in started.requests[:1]
                ],
                value=started.requests[0].run_id,
            ),
        }

    def finished_view(
        self, conversation_id: str, run_id: str, events: Sequence[ev.Event]
    ) -> dict[Any, Any]:
        """What changes when a question has been answered (or failed): ``events`` are the
        run's, as followed (blocking: call it in a thread)."""
        c = self.components
        conv = self.store.get_conversation(conversation_id)
        views = self.service.conversation_view(conversation_id, events=False)
        return {
            c["conv_list"]: self.list_update(conversation_id),
            c["rename_box"]: gr.update(value=conv.title if conv else ""),
            c["export_btn"]: export_link(conversation_id),
            c["run_select"]: gr.update(choices=self.run_choices(views), value=run_id),
            c["timeline"]: self.timeline_figure(events),
            c["stop_btn"]: gr.update(interactive=False),
            c["retry_btn"]: gr.update(interactive=True),
        }

    async def submit(
        self,
        mode: str | None,
        conversation_id: str | None,
        uploaded: dict[str, Any] | None,
        audio_path: str | None,
        question: str,
        choices_text: str,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None,
        compare_planners: list[str] | None,
        compare_strategies: list[str] | None,
        request: gr.Request | None = None,
    ) -> AsyncIterator[dict[Any, Any]]:
        """Ask (chat tab) or compare (compare tab): the button and Enter follow the tab."""
        self = self.scoped(request)
        if mode == "compare":
            pairs = contenders(compare_planners, compare_strategies)
            updates = self.compare(
                conversation_id, uploaded, audio_path, question, choices_text, tools, pairs
            )
        else:
            updates = self.ask(
                conversation_id, uploaded, audio_path, question, choices_text, planner, tools,
                strategy,
            )  # fmt: skip
        async for update in updates:
            yield update

    async def ask(
        self,
        conversation_id: str | None,
        uploaded: dict[str, Any] | None,
        audio_path: str | None,
        question: str,
        choices_text: str,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None = None,
    ) -> AsyncIterator[dict[Any, Any]]:
        c = self.components
        try:
            started = await self.start(
                conversation_id, uploaded, audio_path, question, choices_text, tools,
                [(planner or None, strategy or DEFAULT_STRATEGY)],
            )  # fmt: skip
        except ServiceError as exc:
            yield self.problem(str(exc))
            return
        request = started.requests[0]
        events: list[ev.Event] = []

        def view() -> dict[Any, Any]:
            rows, totals = self.trace(events)
            return {
                c["chatbot"]: [*started.prefix, started.user, *render.render_run(events)],
                c["trace_df"]: rows,
                c["trace_totals"]: totals,
            }

        yield {
            **view(),
            **await asyncio.to_thread(self.started_view, started, "Asking…"),
            c["tabs"]: gr.Tabs(selected="chat"),
            c["timeline"]: None,
        }
        last = time.monotonic()
        try:
            async for event in self.service.stream(started.conversation_id, request):
                events.append(event)
                now = time.monotonic()
                if not isinstance(event, ev.PlannerDelta) or now - last >= UPDATE_EVERY_S:
                    last = now
                    yield view()
        except Exception as exc:  # shown in the chat; the service has stored the run's end
            events.append(_internal_failure(request.run_id, events, exc))
        finished = await asyncio.to_thread(
            self.finished_view, started.conversation_id, request.run_id, list(events)
        )
        yield {
            **view(),
            **finished,
            c["ask_btn"]: gr.update(value=self.button_label("chat", None, None), interactive=True),
        }

    async def compare(
        self,
        conversation_id: str | None,
        uploaded: dict[str, Any] | None,
        audio_path: str | None,
        question: str,
        choices_text: str,
        tools: list[str] | None,
        pairs: list[tuple[str, str]],
    ) -> AsyncIterator[dict[Any, Any]]:
        """Several (planner, strategy) pairs on one question: one live column per run."""
        c = self.components
        if len(pairs) < 2:
            yield self.problem(
                "Pick planners and strategies that make at least two runs to compare."
            )
            return
        try:
            started = await self.start(
                conversation_id, uploaded, audio_path, question, choices_text, tools, list(pairs)
            )
        except ServiceError as exc:
            yield self.problem(str(exc))
            return
        requests = started.requests
        run_ids = [r.run_id for r in requests]
        events: dict[str, list[ev.Event]] = {run_id: [] for run_id in run_ids}
        labels = [render.contender_label(self.planner_label(p), s) for p, s in pairs]
        chats = c["compare_chats"]

        def summary() -> CompareSummary:
            return CompareSummary.from_rows(
                [
                    render.summary_row(
                        events[run_id],
                        run_id=run_id,
                        planner=p,
                        strategy=s,
                        planner_label=self.planner_label(p),
                    )
                    for run_id, (p, s) in zip(run_ids, pairs, strict=True)
                ]
            )

        def columns(indices: Sequence[int]) -> dict[Any, Any]:
            return {chats[i]: render.render_run(events[run_ids[i]]) for i in indices}

        running_note = {
            "role": "assistant",
            "content": f"_Comparing {len(pairs)} runs side by side: see the **Compare** tab._",
        }
        yield {
            **self.compare_columns([(label, []) for label in labels]),
            **self.compare_timelines([]),
            **self.compare_summary_view(summary()),
            **await asyncio.to_thread(self.started_view, started, "Comparing…"),
            c["chatbot"]: [*started.prefix, started.user, running_note],
            c["tabs"]: gr.Tabs(selected="compare"),
            c["trace_df"]: [],
            c["trace_totals"]: "",
            c["timeline"]: None,
        }
        last = time.monotonic()
        dirty: set[int] = set()
        try:
            async for event in self.service.stream_many(started.conversation_id, requests):
                if event.run_id not in events:
                    continue
                events[event.run_id].append(event)
                dirty.add(run_ids.index(event.run_id))
                now = time.monotonic()
                if not isinstance(event, ev.PlannerDelta) or now - last >= UPDATE_EVERY_S:
                    last = now
                    update = columns(sorted(dirty))
                    dirty.clear()
                    if not isinstance(event, ev.PlannerDelta):
                        update.update(self.compare_summary_view(summary()))
                    yield update
        except Exception as exc:  # shown in the columns; the service stored each run's end
            for run_id in run_ids:
                if not any(e.type in ev.TERMINAL_TYPES for e in events[run_id]):
                    events[run_id].append(_internal_failure(run_id, events[run_id], exc))
        yield await asyncio.to_thread(self.compared_view, started, events, summary())

    def compared_view(
        self, started: _Started, events: dict[str, list[ev.Event]], live: CompareSummary
    ) -> dict[Any, Any]:
        """What changes when a comparison has ended: the stored summary (``live``, made from
        the events, if the runs' rows are not all there), the columns, their timelines, and
        the chat with the comparison after the conversation before it (blocking)."""
        c = self.components
        run_ids = list(events)
        views = self.service.conversation_view(started.conversation_id, events=False)
        rows_of = next((v.runs for v in views if v.message.id == started.message.id), [])
        stored = [RunView(r.info, events.get(r.info.id, [])) for r in rows_of]
        final = (
            CompareSummary.from_rows([render.stored_summary_row(r) for r in stored])
            if len(stored) == len(run_ids)
            else live
        )
        rows, totals = self.trace(events[run_ids[0]])
        columns = [render.render_run(events[run_id]) for run_id in run_ids]
        chat = (
            render.render_compare(stored)
            if len(stored) == len(run_ids)
            else [m for column in columns for m in column]
        )
        return {
            **{c["compare_chats"][i]: column for i, column in enumerate(columns)},
            **self.compare_summary_view(final),
            **self.compare_timelines([events[run_id] for run_id in run_ids]),
            **self.finished_view(started.conversation_id, run_ids[0], events[run_ids[0]]),
            c["chatbot"]: [*started.prefix, started.user, *chat],
            c["trace_df"]: rows,
            c["trace_totals"]: totals,
            c["ask_btn"]: gr.update(value=f"Compare {len(run_ids)} runs", interactive=True),
        }

    async def open_live(
        self, conversation_id: str | None, request: gr.Request
    ) -> AsyncIterator[dict[Any, Any]]:
        """Open a conversation; a run still going (the page was reloaded) is followed live."""
        self = self.scoped(request)
        async for update in live.open_and_follow(self, self.follows, conversation_id, request):
            yield update

    async def after_stop(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> dict[Any, Any]:
        """After Stop: stop the conversation's live runs (they belong to the server), wait
        until they have stored their end, then show them."""
        self = self.scoped(request)
        stopped = await asyncio.to_thread(self.stop_live, conversation_id)
        if stopped is None:
            return gr.skip()
        deadline = time.monotonic() + 5.0
        while stopped and time.monotonic() < deadline:
            runs = await asyncio.to_thread(lambda: [self.store.get_run(r) for r in stopped])
            if all(run is None or run.status != "running" for run in runs):
                break
            await asyncio.sleep(0.1)
        return await asyncio.to_thread(self.open_conversation, conversation_id)

    def stop_live(self, conversation_id: str | None) -> list[str] | None:
        """Stop the conversation's live runs; the runs of its latest question, to wait for
        (None: no such conversation)."""
        if not conversation_id or self.store.get_conversation(conversation_id) is None:
            return None
        self.service.stop_runs([r.id for r in self.service.live_runs(conversation_id)])
        views = [v for v in self.service.conversation_view(conversation_id, events=False) if v.runs]
        return [r.info.id for r in views[-1].runs] if views else []


def _internal_failure(run_id: str, events: list[ev.Event], exc: Exception) -> ev.RunFailed:
    return ev.RunFailed(
        run_id=run_id,
        seq=(events[-1].seq + 1) if events else 1,
        kind="internal_error",
        message=f"{type(exc).__name__}: {exc}",
    )


def _status(message: str) -> dict[str, Any]:
    return gr.update(value=message, visible=bool(message))


def export_link(conversation_id: str | None) -> str:
    """The Export link: the API's export of the conversation (``GET /api/conversations/
    {id}/export``, of the visitor's own conversations only, as conversation-<id>.json), made
    when it is clicked: opening a conversation or answering in it never writes the export of
    its whole trace."""
    if not conversation_id:
        return '<span class="export-link" role="link" aria-disabled="true">Export as JSON</span>'
    url = f"/api/conversations/{html.escape(conversation_id)}/export"
    return f'<a class="export-link" href="{url}" download>Export as JSON</a>'


def build_ui(service: AgentService) -> gr.Blocks:
    ui = _Ui(service)
    if files.forget not in service.deletion_hooks:
        service.deletion_hooks.append(files.forget)
    default_planner = ui.available_planners[0]["name"] if ui.available_planners else None
    default_tools = [t["name"] for t in ui.available_tools]
    default_preset = ui.matching_preset(default_planner, default_tools)
    strategy_names = [name for _, name in ui.strategies]
    default_strategy = next(
        (n for n in strategy_names if n == DEFAULT_STRATEGY), strategy_names[0] if strategy_names
        else None,
    )  # fmt: skip
    compare_strategies = [s for s in DEFAULT_COMPARE_STRATEGIES if s in strategy_names] or (
        strategy_names[:2]
    )

    with gr.Blocks(title=TITLE, fill_width=True) as demo:
        conv_state = gr.State(None)
        uploaded_state = gr.State(None)
        mode_state = gr.State("chat")
        undo_state = gr.State(None)

        # -- sidebar: the history and what can be done with the open conversation ---------------
        with gr.Sidebar(label="Conversations", open=True, width=300, elem_id="sidebar"):
            gr.Markdown("### Conversations")
            if hf_oauth.enabled(os.environ):  # on a Space with OAuth: your history on any device
                gr.LoginButton(elem_id="hf-login")
            new_btn = gr.Button("+ New conversation", variant="secondary", size="sm")
            search = gr.Textbox(
                label="Search conversations",
                placeholder="Words of a question or a file name",
                max_lines=1,
                elem_id="conv-search",
            )
            conv_list = gr.HTML(
                history.history_html([]),
                js_on_load=HISTORY_JS,
                elem_id="conversation-list",
                apply_default_css=False,
            )
            with gr.Column(visible=False, elem_id="undo-bar") as undo_bar:
                undo_text = gr.Markdown("", elem_id="undo-text")
                undo_btn = gr.Button("Undo", size="sm", variant="primary", elem_id="undo")
            undo_timer = gr.Timer(UNDO_S, active=False)
            with gr.Accordion("This conversation", open=True, elem_id="conversation-panel"):
                rename_box = gr.Textbox(
                    label="Title", placeholder="Open a conversation to rename it", max_lines=1
                )
                # Actions on the open conversation; further ones (Share ...) go in this row.
                with gr.Row(elem_id="conversation-actions") as conversation_actions:
                    rename_btn = gr.Button("Rename", size="sm", min_width=60)
                    delete_btn = gr.Button("Delete", size="sm", min_width=60, elem_id="delete")
                with gr.Column(visible=False, elem_id="delete-confirm") as delete_confirm:
                    delete_question = gr.Markdown("")
                    with gr.Row():
                        confirm_delete_btn = gr.Button(
                            "Yes, delete", size="sm", variant="stop", elem_id="confirm-delete"
                        )
                        cancel_delete_btn = gr.Button("Cancel", size="sm", elem_id="cancel-delete")
                export_btn = gr.HTML(export_link(None), elem_id="export-json")
                shared_view.share_controls(ui, conv_state)  # Share: a read-only link

        # -- header: title, help; further header buttons (Check models ...) go in its row --------
        with gr.Row(equal_height=False, elem_id="header-row"):
            gr.HTML(
                f"<h1>{TITLE}</h1><p>{HELP_HTML}</p>",
                head=f"<style>{CSS}</style>",
                elem_id="header",
                js_on_load=PAGE_JS,
                scale=4,
            )
            with gr.Column(scale=1, min_width=160, elem_id="header-actions") as header_actions:
                pass  # header buttons (Check models ...) go here

        with gr.Row(equal_height=False, elem_id="main-row"):
            # -- the conversation and, under it, the input --------------------------------------
            with gr.Column(scale=3, min_width=320, elem_id="chat-column"):
                with gr.Tabs(selected="chat", elem_id="main-tabs") as tabs:
                    with gr.Tab("Chat", id="chat", elem_id="chat-tab") as chat_tab:
                        chatbot = gr.Chatbot(
                            label="Conversation",
                            show_label=False,
                            height=560,
                            elem_id="chat",
                            placeholder=(
                                "**No question yet.** Give a recording and a question below; "
                                "the answer forms here, step by step."
                            ),
                            feedback_options=None,
                            buttons=["copy", "copy_all"],
                            autoscroll=True,
                        )
                    with gr.Tab("Compare", id="compare", elem_id="compare-tab") as compare_tab:
                        with gr.Row(equal_height=True):
                            compare_planners = gr.Dropdown(
                                choices=[
                                    (render.short_label(p["label"] or p["name"]), p["name"])
                                    for p in ui.available_planners
                                ],
                                value=[default_planner] if default_planner else [],
                                multiselect=True,
                                label="Planners to compare",
                                elem_id="compare-planners",
                            )
                            compare_strategy_pick = gr.Dropdown(
                                choices=[(name, name) for name in strategy_names],
                                value=compare_strategies,
                                multiselect=True,
                                label="Strategies to compare",
                                elem_id="compare-strategies",
                            )
                        compare_note = gr.Markdown(
                            ui.compare_note(
                                [default_planner] if default_planner else [], compare_strategies
                            ),
                            elem_id="compare-note",
                        )
                        # the result on top, so it is seen without scrolling; the columns below
                        compare_summary = gr.Markdown("", elem_id="compare-summary")
                        compare_rows = []
                        compare_chats = []
                        compare_plots = []
                        compare_headings = []
                        for row_index in range(2):
                            with gr.Row(
                                equal_height=False,
                                visible=row_index == 0,
                                elem_classes=["compare-row"],
                            ) as row:
                                compare_rows.append(row)
                                for column in range(2):
                                    index = row_index * 2 + column
                                    with gr.Column(min_width=260):
                                        # the column's label as a heading above it: Gradio's
                                        # own label floats over the first message
                                        compare_headings.append(
                                            gr.Markdown(
                                                "",
                                                visible=False,
                                                elem_id=f"compare-heading-{index + 1}",
                                                elem_classes=["compare-heading"],
                                            )
                                        )
                                        compare_chats.append(
                                            gr.Chatbot(
                                                label=f"Run {index + 1}",
                                                show_label=False,
                                                height=440,
                                                visible=False,
                                                elem_id=f"compare-run-{index + 1}",
                                                elem_classes=["compare-column"],
                                                layout="panel",
                                                feedback_options=None,
                                                buttons=["copy"],
                                            )
                                        )
                                        compare_plots.append(
                                            gr.Plot(
                                                value=None,
                                                visible=False,
                                                show_label=False,
                                                label=f"Timeline of run {index + 1}",
                                                elem_id=f"compare-timeline-{index + 1}",
                                                elem_classes=["timeline-plot"],
                                            )
                                        )
                    benchmarks_tab.add_tab(service, demo, tabs)  # its own handlers
                player = gr.HTML("", visible=False, elem_id="player-chip", js_on_load=None)
                audio_note = gr.Markdown("", elem_id="audio-note")
                with gr.Accordion(f"Recording ({FORMATS})", open=True, elem_id="audio-box") as (
                    audio_box
                ):
                    audio = gr.Audio(
                        sources=["upload", "microphone"],
                        type="filepath",
                        label=f"Upload or record ({FORMATS})",
                        elem_id="audio-input",
                    )
                with gr.Row(equal_height=False, elem_id="ask-row"):
                    question = gr.Textbox(
                        label="Question",
                        placeholder="e.g. Which sound is this?",
                        lines=2,
                        max_lines=6,
                        elem_id="question",
                        scale=6,
                        min_width=120,
                    )
                    ask_btn = gr.Button(
                        "Ask", variant="primary", elem_id="ask", min_width=96, scale=0
                    )
                    stop_btn = gr.Button(
                        "Stop", variant="secondary", elem_id="stop", min_width=64, scale=0,
                        interactive=False,
                    )  # fmt: skip
                with gr.Row(equal_height=True, elem_id="chat-actions"):
                    gr.Markdown(INPUT_HINT, elem_id="input-hint")
                    retry_btn = gr.Button(
                        "Retry last question", size="sm", elem_id="retry", min_width=0
                    )
                    edit_btn = gr.Button(
                        "Edit last question", size="sm", elem_id="edit", min_width=0
                    )
                    full_btn = gr.Button(
                        "Show all traces", size="sm", elem_id="show-traces", min_width=0,
                        visible=False,
                    )  # fmt: skip
                with gr.Accordion(
                    "Answer choices (optional)", open=False, elem_id="choices-box"
                ) as choices_box:
                    choices = gr.Textbox(
                        label="Answer choices, one per line",
                        placeholder="Dog barking\nRain\nChurch bells\nSiren",
                        lines=3,
                        max_lines=10,
                        elem_id="choices",
                    )
                status = gr.Markdown("", elem_id="status", visible=False)

            # -- who answers and how ------------------------------------------------------------
            with gr.Column(scale=1, min_width=300, elem_id="settings-column"):
                planner_info = gr.Markdown(ui.on_planner(default_planner), elem_id="planner-note")
                preset = gr.Dropdown(
                    choices=[(p["label"], p["name"]) for p in ui.presets],
                    value=default_preset,
                    label="Preset: sets the planner and the tools",
                    interactive=bool(ui.presets),
                    elem_id="preset",
                )
                planner = gr.Dropdown(
                    choices=[(p["label"] or p["name"], p["name"]) for p in ui.available_planners],
                    value=default_planner,
                    label="Planner",
                    interactive=bool(ui.available_planners),
                    elem_id="planner",
                )
                strategy = gr.Dropdown(
                    choices=ui.strategies,
                    value=default_strategy,
                    label="Strategy",
                    info=strategy_info(ui.catalogue, default_strategy),
                    visible=bool(ui.strategies),
                    elem_id="strategy",
                )
                with gr.Accordion(f"Tools ({len(ui.available_tools)} available)", open=False):
                    tools = gr.CheckboxGroup(
                        choices=[
                            (f"{t['label'] or t['name']} · {t['name']}", t["name"])
                            for t in ui.available_tools
                        ],
                        value=default_tools,
                        label="Tools the planner may call",
                        elem_id="tools",
                    )
                with gr.Accordion("Unavailable planners, tools and presets", open=False):
                    gr.Markdown(unavailable_table(ui.catalogue), elem_id="unavailable")
                with gr.Accordion("Check models", open=False):
                    check_btn = gr.Button("Check models", size="sm", elem_id="check-models")
                    check_out = gr.Markdown(
                        "One tiny real call to each configured remote planner and tool "
                        "(a short text turn, one second of audio).",
                        elem_id="check-models-result",
                    )
                check_btn.click(ui.check_models, None, check_out)

        with gr.Accordion("Trace and timeline of an answer", open=False, elem_id="trace"):
            run_select = gr.Dropdown(
                choices=[], value=None, label="Run (latest by default)", elem_id="run-select"
            )
            timeline_plot = gr.Plot(
                value=None,
                label="Timeline: waveform, spectrogram and the time spans the tools reported",
                show_label=False,
                elem_id="timeline",
                elem_classes=["timeline-plot"],
            )
            gr.Markdown(
                "Hover a span for what the tool said; click to play the recording from there.",
                elem_id="timeline-help",
            )
            trace_df = gr.Dataframe(
                value=[],
                headers=render.TRACE_COLUMNS,
                interactive=False,
                wrap=True,
                column_widths=["15%", "20%", "9%", "8%", "28%", "10%", "10%"],
                elem_id="trace-table",
            )
            trace_totals = gr.Markdown("", elem_id="trace-totals")

        ui.components = {
            "chatbot": chatbot,
            "conv_state": conv_state,
            "uploaded_state": uploaded_state,
            "audio": audio,
            "audio_box": audio_box,
            "player": player,
            "question": question,
            "choices": choices,
            "choices_box": choices_box,
            "status": status,
            "audio_note": audio_note,
            "conv_list": conv_list,
            "rename_box": rename_box,
            "export_btn": export_btn,
            "run_select": run_select,
            "trace_df": trace_df,
            "trace_totals": trace_totals,
            "timeline": timeline_plot,
            "ask_btn": ask_btn,
            "stop_btn": stop_btn,
            "retry_btn": retry_btn,
            "full_btn": full_btn,
            "tabs": tabs,
            "delete_confirm": delete_confirm,
            "delete_question": delete_question,
            "undo_state": undo_state,
            "undo_bar": undo_bar,
            "undo_text": undo_text,
            "undo_timer": undo_timer,
            "search": search,
            "header_actions": header_actions,
            "conversation_actions": conversation_actions,
            "compare_rows": compare_rows,
            "compare_chats": compare_chats,
            "compare_plots": compare_plots,
            "compare_headings": compare_headings,
            "compare_summary": compare_summary,
        }
        lists = ("compare_rows", "compare_chats", "compare_plots", "compare_headings")
        layout_only = (
            "search",
            "header_actions",
            "conversation_actions",
            "delete_question",
            "undo_text",
        )
        compare_outputs = [
            *compare_rows, *compare_chats, *compare_plots, *compare_headings, compare_summary,
        ]  # fmt: skip
        view_outputs = [
            conv_state, uploaded_state, chatbot, audio, audio_box, player, audio_note, rename_box,
            export_btn, run_select, trace_df, trace_totals, timeline_plot, status, delete_confirm,
            stop_btn, full_btn,
            *compare_outputs,
        ]  # fmt: skip
        run_outputs = [
            *[v for k, v in ui.components.items() if k not in lists + layout_only],
            *compare_rows,
            *compare_chats,
            *compare_plots,
            *compare_headings,
        ]
        contender_inputs = [compare_planners, compare_strategy_pick]

        demo.load(ui.on_load, outputs=conv_list)
        # a generator: follows a run still going; any number at once (it mostly waits)
        open_event = conv_list.click(
            ui.pick_conversation,
            outputs=[*view_outputs, conv_list],
            concurrency_limit=None,
        )
        new_btn.click(ui.new_and_list, outputs=[*view_outputs, conv_list], cancels=[open_event])
        chatbot.clear(ui.new_and_list, outputs=[*view_outputs, conv_list])  # its trash icon
        rename_btn.click(
            ui.rename, inputs=[conv_state, rename_box], outputs=[conv_list, export_btn]
        )
        rename_box.submit(
            ui.rename, inputs=[conv_state, rename_box], outputs=[conv_list, export_btn]
        )
        delete_btn.click(
            ui.ask_delete, inputs=conv_state, outputs=[delete_confirm, delete_question]
        )
        cancel_delete_btn.click(lambda: gr.update(visible=False), outputs=delete_confirm)
        undo_outputs = [undo_state, undo_bar, undo_text, undo_timer]
        confirm_delete_btn.click(
            ui.delete, inputs=conv_state, outputs=[*view_outputs, conv_list, *undo_outputs]
        )
        undo_btn.click(
            ui.undo_delete, inputs=undo_state, outputs=[*view_outputs, conv_list, *undo_outputs]
        )
        undo_timer.tick(ui.undo_expired, outputs=undo_outputs)
        run_select.input(
            ui.select_run, inputs=run_select, outputs=[trace_df, trace_totals, timeline_plot]
        )
        planner.change(ui.on_planner, inputs=planner, outputs=planner_info)
        strategy.change(
            lambda name: gr.update(info=strategy_info(ui.catalogue, name)),
            inputs=strategy,
            outputs=strategy,
            show_progress="hidden",
        )
        preset.input(ui.on_preset, inputs=preset, outputs=[planner, tools])
        planner.input(ui.on_selection, inputs=[planner, tools], outputs=preset)
        tools.input(ui.on_selection, inputs=[planner, tools], outputs=preset)
        full_btn.click(ui.show_all_traces, inputs=conv_state, outputs=[chatbot, full_btn])
        edit_btn.click(
            ui.edit_last, inputs=conv_state, outputs=[question, choices, choices_box]
        ).then(None, js="() => document.querySelector('#question textarea')?.focus()")

        def single_run_controls(mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
            """Compare picks its own planners and strategies: grey out the single-run ones."""
            single = mode == "chat"
            return (
                gr.update(interactive=single and bool(ui.available_planners)),
                gr.update(interactive=single),
            )

        for tab, mode in ((chat_tab, "chat"), (compare_tab, "compare")):
            tab.select(
                lambda p, s, mode=mode: (*ui.on_tab(mode, p, s), *single_run_controls(mode)),
                inputs=contender_inputs,
                outputs=[mode_state, ask_btn, planner, strategy],
            )
        for picker in contender_inputs:
            picker.change(
                ui.on_contenders,
                inputs=[mode_state, *contender_inputs],
                outputs=[compare_note, ask_btn],
            )

        ask_inputs = [
            mode_state, conv_state, uploaded_state, audio, question, choices, planner, tools,
            strategy, *contender_inputs,
        ]  # fmt: skip
        ask_options: dict[str, Any] = {
            "outputs": run_outputs,
            # the handler only follows runs; the run manager admits and queues them
            "concurrency_limit": None,
            "show_progress": "hidden",  # the chat shows progress: pending panels
            "cancels": [open_event],  # a followed run stops drawing over the new question
        }
        idle_inputs = [mode_state, *contender_inputs]
        idle_outputs = [ask_btn, stop_btn, retry_btn]
        # Enter in the question box presses Ask (page.js); Shift+Enter adds a line.
        ask_event = ask_btn.click(ui.submit, inputs=ask_inputs, **ask_options)
        ask_event.then(ui.idle, inputs=idle_inputs, outputs=idle_outputs)
        retry_inputs = [
            mode_state, conv_state, planner, tools, strategy, *contender_inputs,
        ]  # fmt: skip
        retry_event = retry_btn.click(ui.retry, inputs=retry_inputs, **ask_options)
        retry_event.then(ui.idle, inputs=idle_inputs, outputs=idle_outputs)
        # Gradio cancels after the handler of this click; the stored end is read in the next step.
        stop_btn.click(None, cancels=[ask_event, retry_event, open_event]).then(
            ui.after_stop, inputs=conv_state, outputs=view_outputs
        ).then(ui.idle, inputs=idle_inputs, outputs=idle_outputs)
    return demo
