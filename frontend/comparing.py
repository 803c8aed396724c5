"""Compare mode: one question for several (planner, strategy) pairs, one live column per run
in the Compare tab, the summary (answers, agreement, majority, cost, time) above them, and
the comparison in the chat when it has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import gradio as gr

from agent import events as ev
from backend.service import AskRequest, CompareSummary, RunView, ServiceError
from frontend import compare_view, questions, render, stored_view, throttle, views
from frontend.context import PageContext
from frontend.questions import Started
from frontend.reads import ConversationReads


def live_summary(
    events: dict[str, list[ev.Event]], pairs: Sequence[tuple[str, str]], labels: Sequence[str]
) -> CompareSummary:
    """The comparison as it stands, from the events seen so far."""
    return CompareSummary.from_rows(
        [
            compare_view.summary_row(
                events[run_id], run_id=run_id, planner=p, strategy=s, planner_label=label
            )
            for run_id, (p, s), label in zip(events, pairs, labels, strict=True)
        ]
    )


async def compare(
    ctx: PageContext,
    conversation_id: str | None,
    ask: AskRequest,
    pairs: list[tuple[str, str]],
    request: Any,
) -> AsyncIterator[views.Updates]:
    """Several (planner, strategy) pairs on one question: one live column per run."""
    page, owned = ctx.page, ctx.owned(request)
    reads = ConversationReads(owned)
    if len(pairs) < 2:
        yield views.problem(page, "Pick planners and strategies that make at least two runs.")
        return
    try:
        started = await questions.start(owned, conversation_id, ask, list(pairs))
    except ServiceError as exc:
        yield views.problem(page, str(exc))
        return
    requests = started.question.requests
    events: dict[str, list[ev.Event]] = {r.run_id: [] for r in requests}
    run_ids = list(events)
    labels = [ctx.catalogue.planner_label(p) for p, _ in pairs]
    columns = [
        compare_view.contender_label(label, s) for label, (_, s) in zip(labels, pairs, strict=True)
    ]
    note = {
        "role": "assistant",
        "content": f"_Comparing {len(pairs)} runs side by side: see the **Compare** tab._",
    }
    first = await asyncio.to_thread(questions.started_view, ctx, reads, started)
    yield {
        **views.compare_columns(page, [(label, []) for label in columns]),
        **views.compare_timelines(page, reads, []),
        **views.compare_summary(page, live_summary(events, pairs, labels)),
        **first,
        page.chatbot: [*started.prefix, started.user, note],
        page.tabs: gr.Tabs(selected="compare"),
        **views.trace(page, reads, []),
    }
    try:
        stream = owned.stream_many(started.conversation_id, requests)
        async for batch in throttle.batches(stream):
            changed = set()
            for event in batch:
                if event.run_id in events:
                    events[event.run_id].append(event)
                    changed.add(event.run_id)
            update: views.Updates = {
                page.compare.chats[run_ids.index(r)]: render.render_run(events[r]) for r in changed
            }
            if not isinstance(batch[-1], ev.PlannerDelta):
                update.update(views.compare_summary(page, live_summary(events, pairs, labels)))
            yield update
    except Exception as exc:  # shown in the columns; the service stored each run's end
        for run_id in run_ids:
            if not any(e.type in ev.TERMINAL_TYPES for e in events[run_id]):
                events[run_id].append(questions.internal_failure(run_id, events[run_id], exc))
    summary = live_summary(events, pairs, labels)
    yield await asyncio.to_thread(compared_view, ctx, reads, started, events, summary)


def compared_view(
    ctx: PageContext,
    reads: ConversationReads,
    started: Started,
    events: dict[str, list[ev.Event]],
    live: CompareSummary,
) -> views.Updates:
    """What changes when a comparison has ended: the stored summary (``live``, made from the
    events, if the runs' rows are not all there), the columns, their timelines, and the chat
    with the comparison after the conversation before it (blocking)."""
    page = ctx.page
    run_ids = list(events)
    all_views = reads.views(started.conversation_id, events=False)
    message_id = started.question.message.id
    rows_of = next((v.runs for v in all_views if v.message.id == message_id), [])
    stored = [RunView(r.info, events.get(r.info.id, [])) for r in rows_of]
    complete = len(stored) == len(run_ids)
    final = (
        CompareSummary.from_rows([compare_view.stored_summary_row(r) for r in stored])
        if complete
        else live
    )
    columns = [render.render_run(events[run_id]) for run_id in run_ids]
    chat = stored_view.render_compare(stored) if complete else [m for c in columns for m in c]
    return {
        **{page.compare.chats[i]: column for i, column in enumerate(columns)},
        **views.compare_summary(page, final),
        **views.compare_timelines(page, reads, [events[run_id] for run_id in run_ids]),
        **questions.finished_view(
            ctx, reads, started.conversation_id, run_ids[0], events[run_ids[0]]
        ),
        page.chatbot: [*started.prefix, started.user, *chat],
        page.composer.ask_btn: gr.update(value=f"Compare {len(run_ids)} runs", interactive=True),
    }
