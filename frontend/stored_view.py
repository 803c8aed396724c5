"""A stored conversation as chat messages: each question with its runs' traces (or their
summaries, when read without them), compared runs under their headings with a summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent import events as ev
from backend.service import CompareSummary, MessageView, RunView
from frontend.answer_text import md_escape, plural
from frontend.compare_view import (
    contender_label,
    planner_label_of,
    render_compare_summary,
    stored_summary_row,
)
from frontend.render import Message, panel, render_run, render_user

TRACE_NOT_LOADED = (
    "This earlier answer's reasoning and tool calls were not loaded with the conversation, so "
    "that a long one opens fast: **Show all traces** (under the chat) "
    "loads them here; the **Trace** tab shows the calls and timeline of "
    "any run."
)


def render_summary(run: RunView) -> list[Message]:
    """An earlier run read without its trace (``RunView.complete`` False: only its start,
    answer and end): one closed panel that says what it did and where its trace is, then
    its answer (or failure) as when it was live."""
    info = run.info
    title = f"Trace: {plural(info.calls, 'tool call')}, not loaded"
    notice = panel(title, TRACE_NOT_LOADED, "done", ident=f"{info.id}:trace")
    return [notice, *render_run(run.events)]


def render_run_view(run: RunView) -> list[Message]:
    """A stored run: its whole trace, or its summary when only that was read."""
    return render_run(run.events) if run.complete else render_summary(run)


def last_audio(views: Sequence[MessageView]) -> str | None:
    """The recording of the last message in ``views`` that has one."""
    return next((v.message.audio_id for v in reversed(views) if v.message.audio_id), None)


def render_conversation(
    views: Sequence[MessageView],
    audio_labels: Mapping[str, str] | None = None,
    previous_audio: str | None = None,
    audio_urls: Mapping[str, str] | None = None,
) -> list[Message]:
    """A stored conversation: each question with the full trace of its runs, as when live
    (or their summary, for runs read without their trace).

    ``audio_labels`` maps audio ids to a label ("dog.wav (5.0 s)"); the label is shown on a
    question whose audio differs from the previous question's (``previous_audio``: that of
    the question before ``views``, when they are the end of a conversation), as a player
    when ``audio_urls`` has the recording's address. Stored
    assistant messages repeat the runs' answers, so they are only shown for a question
    without an answer event.
    """
    labels = audio_labels or {}
    messages: list[Message] = []
    answered = False
    for view in views:
        info = view.message
        if info.role == "user":
            audio = None
            if info.audio_id and info.audio_id != previous_audio:
                audio = labels.get(info.audio_id, "recording")
                previous_audio = info.audio_id
            url = (audio_urls or {}).get(info.audio_id or "") if audio else None
            messages.append(render_user(info.text, info.choices, audio, url))
            if len(view.runs) > 1:  # compare mode: each run under its heading, then a summary
                messages.extend(render_compare(view.runs))
                answered = True  # the summary replaces the stored headline
                continue
            answered = False
            for run in view.runs:
                messages.extend(render_run_view(run))
                answered = answered or any(isinstance(e, ev.Answer) for e in run.events)
        elif not answered:
            messages.append({"role": "assistant", "content": md_escape(info.text)})
    return messages


def render_compare(runs: Sequence[RunView]) -> list[Message]:
    """Sibling runs of one question, one after another, each under a heading; then a summary."""
    messages: list[Message] = []
    for number, run in enumerate(runs, 1):
        label = contender_label(planner_label_of(run.events, run.info.planner), run.info.strategy)
        heading = f"**Run {number} of {len(runs)}: {md_escape(label)}**"
        messages.append({"role": "assistant", "content": heading})
        messages.extend(render_run_view(run))
    summary = CompareSummary.from_rows([stored_summary_row(r) for r in runs])
    messages.append(render_compare_summary(summary))
    return messages
