"""Handlers of the composer: the recording (attached or recorded, checked at once), asking
(Enter or the send button; compare mode when the Compare tab is open), an example of the
first screen, Retry, Edit, Stop.

A question is started by the service (``AgentService.start_question``: a conversation is
made for a first question and removed again when the question is refused) and its run is
followed live through ``frontend.throttle``; compare mode is ``frontend.comparing``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from agent import events as ev
from backend.service import AskRequest, ServiceError
from frontend import comparing, examples, questions, render, throttle, views
from frontend.catalogue import contenders, default_strategy
from frontend.context import PageContext
from frontend.reads import ConversationReads

STOP_WAIT_S = 5.0  # after Stop, how long to wait for the runs to store their end


class AskingHandlers:
    def __init__(self, ctx: PageContext) -> None:
        self.ctx = ctx

    # -- the recording ------------------------------------------------------------------------
    async def attach(self, path: str | None, request: gr.Request) -> views.Updates:
        """A file attached (or recorded): stored and checked at once (format, length, size,
        quota), so a bad one is said now, not at Ask. Only a file the page's upload route
        kept for this owner (``backend.access.gradio_files`` refuses the others before this
        runs)."""
        page = self.ctx.page
        if not path:
            return views.unchanged(page.attachment)
        owned = self.ctx.owned(request)
        try:
            info = await asyncio.to_thread(owned.upload_page_file, path)
        except ServiceError as exc:
            refused = views.problem(page, str(exc), "Not attached")
            return {**refused, **views.attachment(page, None), page.composer.mic: None}
        return {
            **views.attachment(page, info),
            page.composer.status: views.status(""),  # an old "Not asked" line goes
            page.composer.mic_panel: gr.update(visible=False),
            page.composer.mic: None,
        }

    def remove_attachment(self) -> views.Updates:
        return views.attachment(self.ctx.page, None)

    # -- asking -------------------------------------------------------------------------------
    async def submit(
        self,
        mode: str | None,
        conversation_id: str | None,
        audio_id: str | None,
        question: str,
        choices: list[str] | None,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None,
        compare_planners: list[str] | None,
        compare_strategies: list[str] | None,
        request: gr.Request,
    ) -> AsyncIterator[views.Updates]:
        """Ask (Chat tab) or compare (Compare tab): the send button and Enter follow the tab."""
        ask = AskRequest(
            question=question or "",
            choices=list(choices or []),
            audio_id=audio_id,
            tools=list(tools or []),
        )
        if mode == "compare":
            pairs = contenders(compare_planners, compare_strategies)
            updates = comparing.compare(self.ctx, conversation_id, ask, pairs, request)
        else:
            pair = (planner or None, strategy or default_strategy())
            updates = self.ask(conversation_id, ask, pair, request)
        async for update in updates:
            yield update

    async def example(
        self,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None,
        request: gr.Request,
        evt: gr.SelectData,
    ) -> AsyncIterator[views.Updates]:
        """An example of the first screen: its recording and question, asked at once."""
        chosen = examples.example(evt.index if isinstance(evt.index, int) else None)
        if chosen is None:
            return
        owned = self.ctx.owned(request)
        try:
            info = await asyncio.to_thread(owned.upload_file, chosen.path)
        except ServiceError as exc:
            yield views.problem(self.ctx.page, str(exc))
            return
        ask = AskRequest(chosen.question, list(chosen.choices), info.id, tools=list(tools or []))
        pair = (planner or None, strategy or default_strategy())
        async for update in self.ask(None, ask, pair, request):
            yield update

    async def ask(
        self,
        conversation_id: str | None,
        ask: AskRequest,
        pair: tuple[str | None, str],
        request: gr.Request | None,
    ) -> AsyncIterator[views.Updates]:
        page, owned = self.ctx.page, self.ctx.owned(request)
        reads = ConversationReads(owned)
        try:
            started = await questions.start(owned, conversation_id, ask, [pair])
        except ServiceError as exc:
            yield views.problem(page, str(exc))
            return
        run = started.question.requests[0]
        events: list[ev.Event] = []

        def chat() -> views.Updates:
            messages = [*started.prefix, started.user, *render.render_run(events)]
            return {page.chatbot: messages, **views.live_trace(page, events)}

        first = await asyncio.to_thread(questions.started_view, self.ctx, reads, started)
        yield {
            **chat(),
            **first,
            page.tabs: gr.Tabs(selected="chat"),
            page.trace.timeline: None,
            page.trace.player: "",
        }
        try:
            stream = owned.stream(started.conversation_id, run)
            async for batch in throttle.batches(stream):
                events.extend(batch)
                yield chat()
        except Exception as exc:  # shown in the chat; the service has stored the run's end
            events.append(questions.internal_failure(run.run_id, events, exc))
        finished = await asyncio.to_thread(
            questions.finished_view,
            self.ctx,
            reads,
            started.conversation_id,
            run.run_id,
            list(events),
        )
        yield {
            **chat(),
            **finished,
            page.composer.ask_btn: gr.update(value="Ask", interactive=True),
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
        request: gr.Request,
    ) -> AsyncIterator[views.Updates]:
        """Ask the last question again (same text, choices and recording) as a new turn."""
        reads = self.ctx.reads(request)
        message = await asyncio.to_thread(reads.last_question, conversation_id)
        if message is None:
            yield views.problem(self.ctx.page, "There is no question to retry yet.")
            return
        async for update in self.submit(
            mode,
            conversation_id,
            None,
            message.text,
            list(message.choices),
            planner,
            tools,
            strategy,
            compare_planners,
            compare_strategies,
            request,
        ):
            yield update

    def edit(self, conversation_id: str | None, request: gr.Request | None = None) -> Any:
        """Put the last question and its choices back in the composer, to change and send."""
        c, reads = self.ctx.page.composer, self.ctx.reads(request)
        message = reads.last_question(conversation_id)
        if message is None:
            gr.Warning("There is no question to edit yet.")
            return views.unchanged(c.question)
        chips = list(message.choices)
        return {
            c.question: message.text,
            c.choices: gr.update(value=chips, choices=chips, visible=bool(chips)),
        }

    # -- stop and idle ------------------------------------------------------------------------
    async def stop(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> views.Updates:
        """After Stop: stop the conversation's live runs (they belong to the server), wait
        until they have stored their end, then show them."""
        reads = self.ctx.reads(request)
        stopped = await asyncio.to_thread(self.stop_live, reads, conversation_id)
        if stopped is None:
            return views.unchanged(self.ctx.page.conversation)
        deadline = time.monotonic() + STOP_WAIT_S
        while stopped and time.monotonic() < deadline:
            runs = await asyncio.to_thread(lambda: [reads.data.get_run(r) for r in stopped])
            if all(run is None or run.status != "running" for run in runs):
                break
            await asyncio.sleep(0.1)
        opened = await asyncio.to_thread(reads.opened, conversation_id)
        if opened is None:
            return views.unchanged(self.ctx.page.conversation)
        return await asyncio.to_thread(views.opened, self.ctx.page, reads, opened, self.ctx.hidden)

    @staticmethod
    def stop_live(reads: ConversationReads, conversation_id: str | None) -> list[str] | None:
        """Stop the conversation's live runs; the runs of its latest question, to wait for
        (None: no such conversation)."""
        if reads.conversation(conversation_id) is None or conversation_id is None:
            return None
        reads.service.stop_runs([r.id for r in reads.service.live_runs(conversation_id)])
        asked = [v for v in reads.views(conversation_id, events=False) if v.runs]
        return [r.info.id for r in asked[-1].runs] if asked else []

    def idle(
        self,
        mode: str | None = None,
        planners: list[str] | None = None,
        strategies: list[str] | None = None,
    ) -> tuple[Any, ...]:
        """Ask and Retry enabled again and Stop disabled: nothing runs."""
        return (
            gr.update(value=send_label(mode, planners, strategies), interactive=True),
            gr.update(interactive=False),
            gr.update(interactive=True),
        )


def send_label(mode: str | None, planners: list[str] | None, strategies: list[str] | None) -> str:
    """The send button's name (its accessible label; it is drawn as an icon)."""
    if mode != "compare":
        return "Ask"
    return f"Compare {len(contenders(planners, strategies))} runs"
