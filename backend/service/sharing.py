"""``AgentService``'s share links: read-only links to a conversation, of which only the
token's hash is kept."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from backend.errors import ServiceError
from backend.service.lookups import OwnerLookups
from storage import Store
from storage.schemas import AudioInfo, ConversationInfo


class ShareService:
    """The share links part of ``AgentService``, and what a link shows."""

    def __init__(self, store: Store, lookups: OwnerLookups) -> None:
        self.store = store
        self._lookups = lookups

    def share(self, conversation_id: str, *, owner: str) -> str:
        """A new read-only share link token (replacing an older one); only its hash is kept."""
        self._lookups.conversation_or_404(conversation_id, owner=owner)
        token = secrets.token_urlsafe(24)  # 192 bits
        self.store.shares.set_share(conversation_id, share_hash(token))
        return token

    def unshare(self, conversation_id: str, *, owner: str) -> bool:
        self._lookups.conversation_or_404(conversation_id, owner=owner)
        return self.store.shares.revoke_share(conversation_id)

    def share_is_valid(self, token: str, conversation_id: str) -> bool:
        """Whether ``token`` still opens ``conversation_id`` (one primary-key read): what a
        shared view checks on each event, so that stopping sharing ends open views."""
        if not token:
            return False
        return self.store.shares.shared_conversation_id(share_hash(token)) == conversation_id

    def shared_conversation(self, token: str) -> ConversationInfo:
        """The conversation a share token opens; 404 for an unknown or revoked token."""
        conversation_id = (
            self.store.shares.shared_conversation_id(share_hash(token)) if token else None
        )
        conv = (
            self.store.conversations.get_conversation(conversation_id) if conversation_id else None
        )
        if conv is None:
            raise ServiceError("No such share link (it may have been revoked).", status=404)
        return conv

    def shared_export(self, token: str) -> dict[str, Any]:
        """The export of the conversation a share token opens (its owner's file names)."""
        conv = self.shared_conversation(token)
        return self.store.export.conversation_export(conv.id, conv.owner)

    def shared_recording(self, audio_id: str, export: dict[str, Any]) -> AudioInfo | None:
        """The stored recording ``audio_id`` if ``export`` (a ``shared_export``) lists it."""
        if not any(a["id"] == audio_id for a in export["audio"]):
            return None
        return self.store.recordings.get_audio(audio_id)


def share_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
