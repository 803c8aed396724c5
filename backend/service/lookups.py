"""The owner-checked lookups every part of ``AgentService`` (``backend.service``) uses: 404
alike for a missing id and someone else's."""

from __future__ import annotations

from backend.errors import ServiceError
from storage import Store
from storage.schemas import AudioInfo, ConversationInfo, RunInfo


class OwnerLookups:
    """One owner's recording, conversation or run, or a 404 ``ServiceError``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def audio_or_404(self, audio_id: str, *, owner: str) -> AudioInfo:
        """``owner``'s recording; 404 alike for a missing id and someone else's."""
        info = self._store.recordings.get_audio(audio_id, owner)
        if info is None:
            raise ServiceError(f"No audio {audio_id}.", status=404)
        return info

    def conversation_or_404(self, conversation_id: str, *, owner: str) -> ConversationInfo:
        """``owner``'s conversation; 404 alike for a missing id and someone else's."""
        conv = self._store.conversations.get_conversation(conversation_id, owner)
        if conv is None:
            raise ServiceError(f"No conversation {conversation_id}.", status=404)
        return conv

    def run_or_404(self, run_id: str, *, owner: str) -> RunInfo:
        """A run of ``owner``'s conversations; 404 alike for a missing id and someone else's."""
        info = self._store.runs.get_run(run_id, owner)
        if info is None:
            raise ServiceError(f"No run {run_id}.", status=404)
        return info
