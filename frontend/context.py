"""What every handler of the main page shares: the service, the page object, the catalogue
as offered, the conversations deleted but still undoable, and the live follows. Each event
reads and acts as the owner of its request (``reads``, ``owned``): one visitor's handler
never sees another's data.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from backend.access.auth import owner_from_request
from backend.service import AgentService
from backend.service.owned import OwnedService
from frontend.catalogue import Catalogue
from frontend.page import Page
from frontend.reads import ConversationReads


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


@dataclass
class PageContext:
    service: AgentService
    page: Page
    catalogue: Catalogue
    # conversations deleted but still undoable: id -> the timer that deletes them for good
    pending_deletes: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    follows: Follows = field(default_factory=Follows)

    def owned(self, request: Any) -> OwnedService:
        """The service as the owner of ``request`` sees it (None: the local owner)."""
        return OwnedService(self.service, owner_from_request(request))

    def reads(self, request: Any) -> ConversationReads:
        return ConversationReads(self.owned(request))

    @property
    def hidden(self) -> set[str]:
        """Conversations left out of every view: deleted, still undoable."""
        return set(self.pending_deletes)
