"""Following runs that the server owns from the page: a reopened conversation whose latest
question is still being answered shows its stored events, then the live ones until the run
ends (after a reload, or from another tab). Runs belong to the server (``backend.runs``):
leaving the page only stops following them; only Stop ends them early.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agent import events as ev
from frontend import render

if TYPE_CHECKING:
    from frontend.ui import _Ui

UPDATE_EVERY_S = 0.1  # at most this often for planner text deltas; structure always at once


class Follows:
    """The latest follow of each browser session: opening another conversation (or the same
    one again) ends the earlier follow, so it never draws over what is shown."""

    def __init__(self) -> None:
        self._latest: dict[str, int] = {}
        self._count = 0

    def begin(self, session: str) -> int:
        self._count += 1
        self._latest[session] = self._count
        return self._count

    def current(self, session: str, token: int) -> bool:
        return self._latest.get(session) == token

    def end(self, session: str, token: int) -> None:
        if self._latest.get(session) == token:
            del self._latest[session]


def session_of(request: Any) -> str:
    return str(getattr(request, "session_hash", None) or id(request))


async def open_and_follow(
    ui: _Ui, follows: Follows, conversation_id: str | None, request: Any
) -> AsyncIterator[dict[Any, Any]]:
    """Open a conversation; while its latest question's runs are live, follow them.

    The conversation is read and rendered once, in a thread; each update while following
    renders only the latest question again, after the messages before it."""
    session = session_of(request)
    token = follows.begin(session)
    try:
        opened, views = await asyncio.to_thread(ui.opened, conversation_id)
        yield opened
        latest = next((i for i in range(len(views) - 1, -1, -1) if views[i].runs), None)
        if latest is None:
            return
        live = [r for r in views[latest].runs if r.info.status == "running"]
        if not live:
            return
        c = ui.components
        labels = await asyncio.to_thread(ui.audio_labels, views)
        before = views[:latest]
        head = await asyncio.to_thread(render.render_conversation, before, labels)
        after = {r.info.id: (r.events[-1].seq if r.events else 0) for r in live}
        by_id = {r.info.id: r for r in live}
        compare = len(views[latest].runs) > 1

        def update() -> dict[Any, Any]:
            tail = render.render_conversation(views[latest:], labels, render.last_audio(before))
            out: dict[Any, Any] = {c["chatbot"]: [*head, *tail]}
            if compare:
                out.update(ui.stored_compare(views))
            else:
                rows, totals = ui.trace(live[0].events)
                out.update({c["trace_df"]: rows, c["trace_totals"]: totals})
            return out

        last = time.monotonic()
        async for event in ui.service.follow(list(by_id), after):
            if not follows.current(session, token):
                return  # another conversation was opened in this tab
            by_id[event.run_id].events.append(event)
            now = time.monotonic()
            if not isinstance(event, ev.PlannerDelta) or now - last >= UPDATE_EVERY_S:
                last = now
                yield update()
        if follows.current(session, token):  # the stored end: answer, totals
            yield await asyncio.to_thread(ui.open_conversation, conversation_id)
    finally:
        follows.end(session, token)
