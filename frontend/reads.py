"""The read side of the page, for one owner: what the main page, the shared view and the live
follower show, as plain values. No Gradio in here: the page turns these into component
updates (``frontend.views``), the shared view into its own.

Every read goes through ``backend.service.owned.OwnedService``, so another owner's conversation, run
or recording is simply not there. The reads block (database, decoding): call them in a
thread from async handlers.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go

from agent import events as ev
from backend.service import (
    SAMPLE_RATE,
    AudioInfo,
    ConversationInfo,
    MessageInfo,
    MessageView,
    RunView,
)
from backend.service.owned import OwnedService
from frontend import compare_view, history, timeline, trace_calls

log = logging.getLogger(__name__)

FULL_TRACES = 3  # the chat shows the whole trace of the last questions, the answer of the rest
RUN_LABEL_CHARS = 48


@dataclass
class Trace:
    """The table of one run's calls and its totals line."""

    rows: list[list[str]] = field(default_factory=list)
    totals: str = ""
    stopped: bool = False  # the run was stopped: its unfinished calls read "stopped"


@dataclass
class OpenedConversation:
    """A stored conversation as it is opened: read in a fixed number of queries."""

    conversation: ConversationInfo
    views: list[MessageView]
    runs: list[tuple[str, str]]  # (label, run id) of every run, oldest first
    latest: RunView | None  # the newest run
    live: bool  # the latest question's runs are still going
    recordings: dict[str, AudioInfo]  # the recordings its questions used, by id

    @property
    def partial(self) -> bool:
        """Some runs were read without their trace (``RunView.complete`` False)."""
        return any(not r.complete for v in self.views for r in v.runs)

    @property
    def latest_compare(self) -> MessageView | None:
        """The newest question asked of several runs side by side, if any."""
        return next((v for v in reversed(self.views) if len(v.runs) > 1), None)


def trace_of(events: Sequence[ev.Event]) -> Trace:
    """The trace table and totals of one run's events (those seen so far, while it runs)."""
    if not events:
        return Trace()
    stopped = any(isinstance(e, ev.RunFailed) and e.kind == "cancelled" for e in events)
    return Trace(trace_calls.trace_rows(events), trace_calls.trace_totals(events), stopped)


def run_choices(views: Sequence[MessageView]) -> list[tuple[str, str]]:
    """(label, run id) for every run of the conversation: "2. Which sound… · offline · react"."""
    options = []
    number = 0
    for view in views:
        for run in view.runs:
            number += 1
            question = " ".join(view.message.text.split())
            if len(question) > RUN_LABEL_CHARS:
                question = question[: RUN_LABEL_CHARS - 1] + "…"
            options.append(
                (f"{number}. {question} · {run.info.planner} · {run.info.strategy}", run.info.id)
            )
    return options


class ConversationReads:
    """What one owner may see, read for the page."""

    def __init__(self, service: OwnedService) -> None:
        self.service = service
        self.data = service.data

    @property
    def owner(self) -> str:
        return self.service.owner

    # -- the sidebar --------------------------------------------------------------------------
    def history_entries(self, hidden: Collection[str] = ()) -> list[history.Entry]:
        """The owner's conversations, newest first, with their recordings' names and whether a
        run is still going (three queries); ``hidden``: left out (deleted, still undoable)."""
        conversations = [c for c in self.data.list_conversations() if c.id not in hidden]
        ids = [c.id for c in conversations]
        names = self.data.conversation_audio_names(ids)
        running = self.data.running_conversations(ids)
        return history.entries(conversations, names, running)

    # -- one conversation ---------------------------------------------------------------------
    def conversation(self, conversation_id: str | None) -> ConversationInfo | None:
        return self.data.get_conversation(conversation_id) if conversation_id else None

    def opened(
        self, conversation_id: str | None, *, full_last: int | None = FULL_TRACES
    ) -> OpenedConversation | None:
        """The conversation with the whole trace of its last ``full_last`` questions (None:
        of all) and the summary of earlier ones; None when the owner has no such one."""
        conversation = self.conversation(conversation_id)
        if conversation is None:
            return None
        views = self.service.conversation_view(conversation.id, full_last=full_last)
        latest = next((r for v in reversed(views) for r in reversed(v.runs)), None)
        question = next((v for v in reversed(views) if v.runs), None)
        live = question is not None and any(r.info.status == "running" for r in question.runs)
        return OpenedConversation(
            conversation, views, run_choices(views), latest, live, self.recordings(views)
        )

    def views(self, conversation_id: str, *, events: bool = True) -> list[MessageView]:
        return self.service.conversation_view(conversation_id, events=events)

    def recordings(self, views: Sequence[MessageView]) -> dict[str, AudioInfo]:
        """The recordings of the conversation's questions (one query, whatever its length)."""
        return self.data.audio_infos([v.message.audio_id for v in views if v.message.audio_id])

    def latest_audio(self, conversation_id: str | None) -> AudioInfo | None:
        """The recording a follow-up question uses (two small reads)."""
        audio_id = self.service.latest_audio_id(conversation_id) if conversation_id else None
        return self.data.get_audio(audio_id) if audio_id else None

    def audio(self, audio_id: str | None) -> AudioInfo | None:
        return self.data.get_audio(audio_id) if audio_id else None

    def last_question(self, conversation_id: str | None) -> MessageInfo | None:
        """The conversation's latest question (to edit or ask again)."""
        if self.conversation(conversation_id) is None:
            return None
        messages = self.data.list_messages(conversation_id or "")
        return next((m for m in reversed(messages) if m.role == "user"), None)

    # -- one run ------------------------------------------------------------------------------
    def run_events(self, run_id: str | None) -> list[ev.Event]:
        return self.data.run_events(run_id) if run_id else []

    def run_of(self, conversation_id: str, run_id: str | None) -> list[ev.Event]:
        """The events of a run of this conversation ([] for any other run id)."""
        if not run_id:
            return []
        views = self.views(conversation_id, events=False)
        if all(r.info.id != run_id for v in views for r in v.runs):
            return []
        return self.data.run_events(run_id)

    def timeline_figure(self, events: Sequence[ev.Event], short: bool = False) -> go.Figure | None:
        """The run's recording with the spans its tools reported; None without a recording.
        The figure carries the recording's id (``layout.meta.audio``): the page moves a
        playhead across it while that recording plays."""
        started = next((e for e in events if isinstance(e, ev.RunStarted)), None)
        if started is None or not started.audio_ids:
            return None
        ref = self.service.audio.get(started.audio_ids[0])
        if ref is None:
            return None
        try:
            samples = self.service.audio.samples(ref)
            label = compare_view.contender_label(
                compare_view.planner_label_of(events), started.strategy
            )
            title = label if short else f"{label} · {ref.name or 'recording'}"
            figure = timeline.timeline_figure(
                samples,
                SAMPLE_RATE,
                timeline.tracks_from_events(events),
                title=title,
                compact=short,
                colours=timeline.catalogue_colours(self.service.catalogue()),
            )
        except Exception:  # a figure must never break the page
            log.exception("could not draw the timeline of run %s", started.run_id)
            return None
        figure.update_layout(meta={"audio": ref.id})
        return figure

    def run_audio(self, events: Sequence[ev.Event]) -> AudioInfo | None:
        """The recording a run was asked about."""
        started = next((e for e in events if isinstance(e, ev.RunStarted)), None)
        return self.audio(started.audio_ids[0]) if started and started.audio_ids else None
