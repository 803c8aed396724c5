"""Handlers that change the open conversation: rename, delete (asked first in the sidebar;
the chat's trash icon deletes at once) with Undo for ``UNDO_S`` seconds, and share links
(Share makes a new read-only link and ends the old one; Stop sharing ends it).

The undo window starts when the page shows the Undo bar, not when the server hides the
conversation: the bar's timer (started in the browser as the bar appears) ends the deletion,
so a bar shown late by a loaded queue still gives its full window. ``UNDO_BACKSTOP_S`` ends
it without the page (closed before its timer fired).
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

import gradio as gr

from backend.access.body_limits import check_title
from backend.http.sharing import SHARED_PAGE
from backend.service import ServiceError
from frontend import answer_text, views
from frontend.context import PageContext
from frontend.page_sidebar import UNDO_S, render_export_link

UNDO_BACKSTOP_S = 120.0  # the deletion ends without the page's timer after this long

COPY_JS = """(link) => {
  if (link && navigator.clipboard) { navigator.clipboard.writeText(link).catch(() => {}); }
  return link;
}"""


class ConversationActions:
    def __init__(self, ctx: PageContext) -> None:
        self.ctx = ctx

    # -- rename -------------------------------------------------------------------------------
    def rename(
        self, conversation_id: str | None, title: str, request: gr.Request | None = None
    ) -> views.Updates:
        page, reads = self.ctx.page, self.ctx.reads(request)
        if reads.conversation(conversation_id) is None:
            gr.Warning("Open a conversation first.")
            return views.unchanged(page.sidebar.export)
        try:
            title = check_title((title or "").strip(), reads.service.settings.limits)
        except ServiceError as exc:
            gr.Warning(html.escape(str(exc)))
            return views.unchanged(page.sidebar.export)
        reads.data.rename_conversation(conversation_id or "", title)
        return {
            **views.conversation_list(page, reads, conversation_id, self.ctx.hidden),
            page.sidebar.export: render_export_link(conversation_id),
        }

    # -- delete and undo ----------------------------------------------------------------------
    def ask_delete(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> views.Updates:
        """Delete in the sidebar, step 1: ask to confirm."""
        s, reads = self.ctx.page.sidebar, self.ctx.reads(request)
        conv = reads.conversation(conversation_id)
        if conv is None:
            gr.Warning("Open a conversation first.")
            return {s.delete_confirm: gr.update(visible=False)}
        return {
            s.delete_confirm: gr.update(visible=True),
            s.delete_question: (
                f"Delete **{answer_text.md_escape(conv.title)}**? You can undo it for "
                f"{UNDO_S:.0f} seconds."
            ),
        }

    async def delete(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> views.Updates:
        """Delete (confirmed, or the chat's trash icon): hidden at once, gone for good when the
        Undo bar's timer ends (``undo_expired``) unless Undo is pressed first."""
        page, reads = self.ctx.page, self.ctx.reads(request)
        conv = await asyncio.to_thread(reads.conversation, conversation_id)
        if conv is None:
            gr.Warning("Open a conversation first.")
            return {page.sidebar.delete_confirm: gr.update(visible=False)}
        loop = asyncio.get_running_loop()  # the deletion (files too) in a thread, not here
        owned = reads.service
        self.ctx.pending_deletes[conv.id] = loop.call_later(
            UNDO_S + UNDO_BACKSTOP_S, loop.run_in_executor, None, self.finish_delete, owned, conv.id
        )
        u = page.undo_bar
        return {
            **await asyncio.to_thread(views.empty, page, reads, self.ctx.hidden),
            page.undo: conv.id,
            u.bar: gr.update(visible=True),
            u.text: f"Deleted **{answer_text.md_escape(conv.title)}**.",
            u.timer: gr.Timer(UNDO_S + 0.5, active=True),
        }

    def finish_delete(self, owned: Any, conversation_id: str) -> None:
        if self.ctx.pending_deletes.pop(conversation_id, None) is not None:
            owned.delete_conversation(conversation_id)

    async def undo(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> views.Updates:
        page, reads = self.ctx.page, self.ctx.reads(request)
        mine = await asyncio.to_thread(reads.conversation, conversation_id)
        handle = self.ctx.pending_deletes.get(conversation_id or "") if mine else None
        hide = self.hidden_bar()
        if handle is None or mine is None:
            gr.Warning("Too late: that conversation is deleted.")
            return {**hide, **await asyncio.to_thread(views.empty, page, reads, self.ctx.hidden)}
        handle.cancel()
        del self.ctx.pending_deletes[mine.id]
        gr.Info("Conversation restored.")
        opened = await asyncio.to_thread(reads.opened, mine.id)
        assert opened is not None
        return {
            **await asyncio.to_thread(views.opened, page, reads, opened, self.ctx.hidden),
            **hide,
        }

    async def undo_expired(
        self, conversation_id: str | None, request: gr.Request | None = None
    ) -> views.Updates:
        """The Undo bar's timer: its window (counted from when it was shown) is over, so the
        deletion ends now (an Undo processed first has already taken it back)."""
        reads = self.ctx.reads(request)
        mine = await asyncio.to_thread(reads.conversation, conversation_id)  # None: not theirs
        handle = self.ctx.pending_deletes.get(mine.id) if mine is not None else None
        if mine is not None and handle is not None:
            handle.cancel()
            await asyncio.to_thread(self.finish_delete, reads.service, mine.id)
        return self.hidden_bar()

    def hidden_bar(self) -> views.Updates:
        u = self.ctx.page.undo_bar
        return {
            u.bar: gr.update(visible=False),
            u.timer: gr.Timer(active=False),
            self.ctx.page.undo: None,
        }

    # -- share links --------------------------------------------------------------------------
    def share(self, conversation_id: str | None, request: gr.Request | None = None) -> Any:
        """Share: a new read-only link (the old one stops working), shown and copied."""
        owned = self.ctx.owned(request)
        if not conversation_id or owned.data.get_conversation(conversation_id) is None:
            gr.Warning("Open or start a conversation first, then share it.")
            return gr.update(value="", visible=False)
        token = owned.share(conversation_id)
        base = ""
        inner = getattr(request, "request", None)
        if inner is not None and hasattr(inner, "base_url"):
            base = str(inner.base_url).rstrip("/")
        gr.Info("Share link copied: anyone with it can read this conversation.")
        return gr.update(value=f"{base}{SHARED_PAGE}/{token}", visible=True)

    def unshare(self, conversation_id: str | None, request: gr.Request | None = None) -> Any:
        """Stop sharing: the link ends, also for anyone who has it open."""
        owned = self.ctx.owned(request)
        if not conversation_id or owned.data.get_conversation(conversation_id) is None:
            return gr.update(value="", visible=False)
        if owned.unshare(conversation_id):
            gr.Info("Sharing stopped: the link no longer opens this conversation.")
        else:
            gr.Info("This conversation has no share link.")
        return gr.update(value="", visible=False)
