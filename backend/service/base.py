"""What every part of ``AgentService`` (``backend.service``) stands on: the state it is built
with, and the owner-checked lookups that answer 404 alike for a missing id and someone
else's."""

from __future__ import annotations

from collections.abc import Callable

from agent.audio import AudioStore
from agent.doctor import SharedChecks
from agent.registry import Registry
from backend.access.clients import ClientDirectory
from backend.access.upload_quota import UploadQuota
from backend.errors import ServiceError
from backend.host.settings import Settings
from backend.runs.manager import RunManager, Ticket
from storage import SqlToolCache, Store
from storage.cleanup import Purged
from storage.schemas import AudioInfo, ConversationInfo, RunInfo
from storage.upload_files import UploadFiles


class ServiceBase:
    """The attributes ``AgentService.__init__`` sets, which its parts (``backend.service.*``)
    share, and the lookups they all use."""

    settings: Settings
    store: Store
    registry: Registry
    audio: AudioStore
    cache: SqlToolCache
    model_checks: SharedChecks
    runs: RunManager
    _tickets: dict[str, Ticket]  # admitted, by first run id, until started
    clients: ClientDirectory
    upload_files: UploadFiles
    upload_quota: UploadQuota
    deletion_hooks: list[Callable[[Purged], object]]

    def audio_or_404(self, audio_id: str, *, owner: str) -> AudioInfo:
        """``owner``'s recording; 404 alike for a missing id and someone else's."""
        info = self.store.recordings.get_audio(audio_id, owner)
        if info is None:
            raise ServiceError(f"No audio {audio_id}.", status=404)
        return info

    def conversation_or_404(self, conversation_id: str, *, owner: str) -> ConversationInfo:
        """``owner``'s conversation; 404 alike for a missing id and someone else's."""
        conv = self.store.conversations.get_conversation(conversation_id, owner)
        if conv is None:
            raise ServiceError(f"No conversation {conversation_id}.", status=404)
        return conv

    def run_or_404(self, run_id: str, *, owner: str) -> RunInfo:
        """A run of ``owner``'s conversations; 404 alike for a missing id and someone else's."""
        info = self.store.runs.get_run(run_id, owner)
        if info is None:
            raise ServiceError(f"No run {run_id}.", status=404)
        return info
