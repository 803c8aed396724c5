"""Handlers for moving between conversations: the page's load (the conversation of its
address, ``/c/{id}``, and the account menu), a pick in the sidebar (also back/forward),
a new conversation, the whole traces of a long one, a run picked in the Trace tab, and the
sidebar's refresh while something is answering.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from backend.access.auth import owner_from_request
from backend.access.identity import USER_PREFIX
from frontend import views
from frontend.context import PageContext
from frontend.live import open_and_follow
from frontend.routes import conversation_id_of


def account_html(owner: str, root_path: str = "") -> str:
    """The account menu of a logged-in user: the name and Log out ("" for a visitor).

    Log out is a form that POSTs to ``/logout`` (the session is ended on the server); the
    page's script falls back to a plain visit when the server only answers GET there."""
    if not owner.startswith(USER_PREFIX):
        return ""
    name = html.escape(owner[len(USER_PREFIX) :])
    action = html.escape(f"{root_path}/logout")
    return (
        '<details class="account-menu"><summary aria-label="Account: '
        f'{name}"><span class="account-avatar" aria-hidden="true">{name[:1].upper()}</span>'
        f'<span class="account-name">{name}</span></summary>'
        f'<form method="post" action="{action}" class="account-logout">'
        '<button type="submit" id="logout">Log out</button></form></details>'
    )


class ConversationHandlers:
    def __init__(self, ctx: PageContext) -> None:
        self.ctx = ctx

    def route_conversation(self, route: str | None) -> str | None:
        """The conversation an address of the page names (``/c/{id}`` under the app's root)."""
        path = route or "/"
        root = self.ctx.service.settings.root_path
        if root and path.startswith(root):
            path = path[len(root) :] or "/"
        return conversation_id_of(path)

    async def load(self, route: str | None, request: gr.Request) -> AsyncIterator[views.Updates]:
        """The page opens: the account menu, and the conversation of its address (followed
        live while it is still answering), or a new one."""
        page = self.ctx.page
        account = account_html(owner_from_request(request), self.ctx.service.settings.root_path)
        first = True
        async for update in open_and_follow(self.ctx, self.route_conversation(route), request):
            if first:
                update = {**update, page.sidebar.account: account}
                first = False
            yield update

    async def pick(self, request: gr.Request, evt: gr.EventData) -> AsyncIterator[views.Updates]:
        """A click (or Enter) on a conversation of the sidebar, or back/forward to one (the
        page's script sends its id; none: a new conversation)."""
        conversation_id = (getattr(evt, "_data", None) or {}).get("id") or None
        async for update in open_and_follow(self.ctx, conversation_id, request):
            yield update

    def new(self, request: gr.Request | None = None) -> views.Updates:
        """New conversation: an empty chat (stored once its first question is asked)."""
        reads = self.ctx.reads(request)
        return views.empty(self.ctx.page, reads, self.ctx.hidden)

    def show_all(self, conversation_id: str | None, request: gr.Request | None = None) -> Any:
        """ "Show all traces": the chat with every run's whole trace (read now)."""
        page, reads = self.ctx.page, self.ctx.reads(request)
        opened = reads.opened(conversation_id, full_last=None)
        if opened is None:
            return {page.full_btn: gr.update(visible=False)}
        return {
            page.chatbot: views.chat_messages(opened.views, opened.recordings),
            page.full_btn: gr.update(visible=False),
        }

    def select_run(self, run_id: str | None, request: gr.Request | None = None) -> views.Updates:
        """A run picked in the Trace tab (the owner's own runs only)."""
        reads = self.ctx.reads(request)
        return views.trace(self.ctx.page, reads, reads.run_events(run_id))

    async def refresh_list(self, conversation_id: str | None, request: gr.Request) -> views.Updates:
        """The sidebar again (its timer, while a conversation is answering): spinners end."""
        reads = self.ctx.reads(request)
        page, hidden = self.ctx.page, self.ctx.hidden
        return await asyncio.to_thread(
            views.conversation_list, page, reads, conversation_id, hidden
        )
