"""A URL per conversation: ``/c/{id}`` is the page itself, opened on that conversation.

The Gradio page lives at ``/``; ``ConversationPaths`` (pure ASGI) serves ``/c/{id}`` as ``/``,
and the files the page then asks for relative to that address (``/c/assets/...``) as the
root's. The page reads the id from its address (``frontend/page.js``) and opens the
conversation through the same owner-scoped handler as a click in the sidebar, so another
owner's id reads as one that does not exist. The page keeps its address on the open
conversation as it changes, and back/forward open the conversation of the address again.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

PREFIX = "/c/"
_PAGE = re.compile(r"/c/([A-Za-z0-9_-]{1,64})/?")


def conversation_path(conversation_id: str | None) -> str:
    """The page's address for a conversation ("/" for none)."""
    return f"{PREFIX}{conversation_id}" if conversation_id else "/"


def conversation_id_of(path: str | None) -> str | None:
    """The conversation an address names (``/c/{id}``), None for any other address."""
    match = _PAGE.fullmatch(path or "")
    return match.group(1) if match else None


class ConversationPaths:
    """Serves ``/c/{id}`` as the page at ``/`` and ``/c/<file>`` as ``/<file>``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            root = str(scope.get("root_path", "") or "")
            path = str(scope.get("path", "/"))
            prefixed = bool(root) and path.startswith(root)
            inner = path[len(root) :] if prefixed else path
            if inner.startswith(PREFIX):
                target = "/" if _PAGE.fullmatch(inner) else inner[len(PREFIX) - 1 :]
                full = (root if prefixed else "") + target
                scope = {**scope, "path": full, "raw_path": full.encode()}
        await self.app(scope, receive, send)
