"""A question on its way, shared by asking (``frontend.asking``) and comparing
(``frontend.comparing``): started by the service, the conversation before it rendered once,
what the page shows as soon as it is accepted and when it has been answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import gradio as gr

from agent import events as ev
from backend.service import AskRequest, MessageView, StartedQuestion
from backend.service.owned import OwnedService
from frontend import render, stored_view, views
from frontend.context import PageContext
from frontend.page_sidebar import render_export_link
from frontend.reads import FULL_TRACES, ConversationReads, run_choices

RUNNING_LABEL_CHARS = 48


def internal_failure(run_id: str, events: list[ev.Event], exc: BaseException) -> ev.RunFailed:
    """The end of a run whose following broke (shown; the service stored the real end)."""
    return ev.RunFailed(
        run_id=run_id,
        seq=(events[-1].seq + 1) if events else 1,
        kind="internal_error",
        message=f"{type(exc).__name__}: {exc}",
    )


class Started:
    """A started question with the conversation before it, rendered once: each update of
    the answer only adds the new run's messages to ``prefix`` and ``user`` (blocking)."""

    def __init__(self, reads: ConversationReads, question: StartedQuestion) -> None:
        self.question = question
        self.conversation_id = question.conversation_id
        # the whole trace of the questions before this one that a reopened page shows whole
        now = reads.service.conversation_view(question.conversation_id, full_last=FULL_TRACES + 1)
        self.before = [v for v in now if v.message.id != question.message.id]
        self.recordings = reads.recordings(now)
        self.prefix = views.chat_messages(self.before, self.recordings)
        audio_id = question.message.audio_id
        info = (
            self.recordings.get(audio_id or "")
            if audio_id != stored_view.last_audio(self.before)
            else None
        )
        self.user = render.render_user(
            question.message.text,
            question.message.choices,
            render.audio_label(info.name or "recording", info.duration_s) if info else None,
            views.audio_url(info.id) if info else None,
        )
        self.partial = any(not r.complete for v in self.before for r in v.runs)
        conversation = reads.conversation(question.conversation_id)
        self.title = conversation.title if conversation else ""
        self.latest_audio = reads.latest_audio(question.conversation_id)
        self.runs = run_choices([*self.before, MessageView(question.message)])


async def start(
    owned: OwnedService,
    conversation_id: str | None,
    ask: AskRequest,
    pairs: list[tuple[str | None, str]],
) -> Started:
    """The question stored and its runs prepared (ServiceError: nothing stored), and the
    conversation before it read and rendered; all in a thread."""

    def begin() -> Started:
        question = owned.start_question(conversation_id, ask, pairs)
        return Started(ConversationReads(owned), question)

    return await asyncio.to_thread(begin)


def started_view(ctx: PageContext, reads: ConversationReads, started: Started) -> views.Updates:
    """What changes as soon as a question is accepted (blocking: reads the sidebar)."""
    page = ctx.page
    c, s = page.composer, page.sidebar
    first = started.question.requests[0]
    text = " ".join(started.question.message.text.split())[:RUNNING_LABEL_CHARS]
    return {
        page.conversation: started.conversation_id,
        **views.attachment(page, None),  # asked with it: from now on the conversation's
        **views.audio_note(page, started.latest_audio),
        c.question: "",
        c.choices: gr.update(value=[], choices=[], visible=False),
        c.status: views.status(""),
        c.mic_panel: gr.update(visible=False),
        # the send button gives way to Stop while it runs (page.css); its name stays "Ask"
        # or "Compare N runs", which the Chat and Compare tabs set
        c.ask_btn: gr.update(interactive=False),
        c.stop_btn: gr.update(interactive=True),
        c.retry_btn: gr.update(interactive=False),
        page.full_btn: gr.update(visible=started.partial),
        s.rename_box: gr.update(value=started.title),
        s.export: render_export_link(started.conversation_id),
        s.delete_confirm: gr.update(visible=False),
        s.share_link: gr.update(value="", visible=False),
        **views.conversation_list(page, reads, started.conversation_id, ctx.hidden),
        page.trace.run_select: gr.update(
            choices=[*started.runs, (f"Running: {text}", first.run_id)], value=first.run_id
        ),
    }


def finished_view(
    ctx: PageContext,
    reads: ConversationReads,
    conversation_id: str,
    run_id: str,
    events: Sequence[ev.Event],
) -> views.Updates:
    """What changes when a question has been answered (or failed); ``events`` are the run's,
    as followed (blocking: call it in a thread)."""
    page = ctx.page
    conv = reads.conversation(conversation_id)
    all_views = reads.views(conversation_id, events=False)
    return {
        **views.conversation_list(page, reads, conversation_id, ctx.hidden),
        page.sidebar.rename_box: gr.update(value=conv.title if conv else ""),
        page.trace.run_select: gr.update(choices=run_choices(all_views), value=run_id),
        **views.trace(page, reads, events),
        page.composer.stop_btn: gr.update(interactive=False),
        page.composer.retry_btn: gr.update(interactive=True),
    }
