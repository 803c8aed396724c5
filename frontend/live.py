"""Following runs that the server owns from the page: a reopened conversation whose latest
question is still being answered shows its stored events, then the live ones until the run
ends (after a reload, or from another tab). Runs belong to the server (``backend.runs.manager``):
leaving the page only stops following them; only Stop ends them early.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from frontend import stored_view, throttle, views
from frontend.context import PageContext, session_of

MISSING = "That conversation does not exist (it may have been deleted)."


async def open_and_follow(
    ctx: PageContext, conversation_id: str | None, request: Any
) -> AsyncIterator[views.Updates]:
    """Open a conversation (the owner's own only); while its latest question's runs are live,
    follow them. An id that is not the owner's (or no longer exists) opens a new
    conversation and says so. Of two opens in one tab, the later one is shown, whichever
    was read first.

    The conversation is read and rendered once, in a thread; each update while following
    renders only the latest question again, after the messages before it."""
    page, reads = ctx.page, ctx.reads(request)
    session = session_of(request)
    token = ctx.follows.begin(session)
    try:
        opened = await asyncio.to_thread(reads.opened, conversation_id)
        if opened is None or opened.conversation.id in ctx.hidden:
            missing = bool(conversation_id)
            empty = await asyncio.to_thread(views.empty, page, reads, ctx.hidden, missing=missing)
            if ctx.follows.current(session, token):  # a later open in this tab wins
                if missing:
                    gr.Warning(MISSING)
                yield empty
            return
        first = await asyncio.to_thread(views.opened, page, reads, opened, ctx.hidden)
        if not ctx.follows.current(session, token):
            return  # another conversation was opened in this tab meanwhile: it is shown
        yield first
        if not opened.live:
            return
        all_views = opened.views
        latest = max(i for i, v in enumerate(all_views) if v.runs)
        live = [r for r in all_views[latest].runs if r.info.status == "running"]
        before = all_views[:latest]
        head = await asyncio.to_thread(views.chat_messages, before, opened.recordings)
        previous = stored_view.last_audio(before)
        after = {r.info.id: (r.events[-1].seq if r.events else 0) for r in live}
        by_id = {r.info.id: r for r in live}
        compare = len(all_views[latest].runs) > 1

        def update() -> views.Updates:
            tail = views.chat_messages(all_views[latest:], opened.recordings, previous)
            out: views.Updates = {page.chatbot: [*head, *tail]}
            if compare:
                out.update(views.stored_compare(page, reads, opened))
            else:
                out.update(views.live_trace(page, live[0].events))
            return out

        async for batch in throttle.batches(reads.service.follow(list(by_id), after)):
            if not ctx.follows.current(session, token):
                return  # another conversation was opened in this tab
            for event in batch:
                by_id[event.run_id].events.append(event)
            yield update()
        if ctx.follows.current(session, token):  # the stored end: answer, totals, timeline
            final = await asyncio.to_thread(reads.opened, opened.conversation.id)
            if final is not None:
                yield await asyncio.to_thread(views.opened, page, reads, final, ctx.hidden)
    finally:
        ctx.follows.end(session, token)
