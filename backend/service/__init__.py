"""The app's use cases, shared by the REST/SSE routes and the Gradio UI.

The service stores uploads and questions and starts runs in the run manager
(``backend.runs.manager``), which owns them: it stores every event before anyone sees it, so a run
cut short is still there up to its last event, and a client that goes away only stops
following it.

``AgentService`` is composed here of its parts, one module each, reached as its attributes:
``uploads`` (``backend.service.uploads``), ``conversations``
(``backend.service.conversations``), ``questions`` (``backend.service.questions``),
``running`` (``backend.service.runs``) and ``sharing`` (``backend.service.sharing``). Each
is given in its constructor the collaborators it works with (the store, the run manager,
the owner-checked lookups of ``backend.service.lookups``, another part) and owns its own
state; no part reads another's private fields. Compare mode's summary is
``backend.service.compare_summary``.

One way to reach the data: the HTTP fronts (``backend.http``) and the UI (``frontend``) go
through the service, never through ``service.store``: its use cases (these methods, which
check the owner they are given), and for plain reads of one owner's rows the per-owner view
``service.data_of(owner)`` (``backend.service.owned_data``; the UI's ``OwnedService.data``),
the only owner-scoped reader of stored rows. ``tests/test_composition.py`` holds the fronts to it.

The folder also holds the conversation titles (``titles``) and the expiry of old history and
uploads (``retention``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from agent import events as ev
from agent.answer import says_it_cannot_tell
from agent.audio import SAMPLE_RATE, AudioStore
from agent.doctor import SharedChecks
from agent.registry import Registry
from agent.strategies import compared_strategies, default_strategy, strategy_labels
from backend.access.clients import ClientDirectory
from backend.errors import ServiceError
from backend.host import space
from backend.host.settings import Settings
from backend.runs.manager import RunManager
from backend.service.compare_summary import CompareSummary, summary_row
from backend.service.conversations import (
    SUMMARY_EVENT_TYPES,
    ConversationService,
    MessageView,
    RunView,
)
from backend.service.lookups import OwnerLookups
from backend.service.owned_data import OwnedData
from backend.service.questions import AskRequest, QuestionService, StartedQuestion
from backend.service.runs import RunService
from backend.service.sharing import ShareService, share_hash
from backend.service.uploads import UploadService
from storage import SqlToolCache, Store
from storage.cleanup import Purged
from storage.schemas import AudioInfo, ConversationInfo, MessageInfo
from storage.upload_files import UploadFiles

# Importable from here, as before the parts had modules of their own (frontend, tests). The
# frontend reaches storage and the agent only through these (and the events): the records
# the service hands out, and the few facts of the agent the page shows (tests/test_import_graph.py).
__all__ = [
    "SAMPLE_RATE",
    "SUMMARY_EVENT_TYPES",
    "AgentService",
    "AskRequest",
    "AudioInfo",
    "CompareSummary",
    "ConversationInfo",
    "MessageInfo",
    "MessageView",
    "Purged",
    "RunView",
    "ServiceError",
    "StartedQuestion",
    "compared_strategies",
    "default_strategy",
    "says_it_cannot_tell",
    "share_hash",
    "strategy_labels",
    "summary_row",
]


class AgentService:
    """The app's use cases (see the module doc), composed of its parts, each given what it
    works with and owning its own state: ``uploads`` (and the upload quota),
    ``conversations`` (and the deletion hooks), ``questions`` (and the tickets of questions
    admitted but not started), ``running`` and ``sharing``; ``runs`` is the run manager.

    The use cases are also reachable here by name (``service.upload(...)``,
    ``service.prepare(...)``): each is its part's method, not a copy."""

    def __init__(self, settings: Settings, store: Store, registry: Registry) -> None:
        self.settings = settings
        self.store = store
        self.registry = registry
        self.audio = AudioStore(
            settings.data_dir / "audio",
            max_bytes=int(settings.max_upload_mb * 1024 * 1024),
            max_seconds=settings.max_audio_minutes * 60,
        )
        self.cache = SqlToolCache(store.tool_cache)
        self.model_checks = SharedChecks()  # the doctor's real calls, at most once per ttl
        self.runs = RunManager(
            store,
            audio=self.audio,
            cache=self.cache,
            similarity=registry.similarity,
            limits=settings.run_limits(),
            worker_id=settings.worker_id,
            heartbeat_s=settings.heartbeat_s,
            lease_s=settings.lease_s,
            stall_s=settings.stall_s,
            warm_up=settings.warm_up,  # the run path, in the background
            warm_planners=registry.build_planners,
        )
        self.clients = ClientDirectory()  # each owner's last client address (limits)
        self.upload_files = UploadFiles(store)  # the page's uploads, counted per owner
        lookups = OwnerLookups(store)

        self.uploads = UploadService(settings, store, self.audio, self.upload_files)
        self.questions = QuestionService(
            settings, store, registry, self.audio, self.runs, self.clients, lookups
        )
        self.running = RunService(store, registry, self.runs, self.questions.take_ticket)
        self.conversations = ConversationService(
            settings, store, self.audio, self.upload_files, lookups, self.running
        )
        self.sharing = ShareService(store, lookups)

        # What the upload routes' middleware counts (backend.access.upload_quota), and what
        # a deletion calls before the recordings' files go (the UI adds its own: frontend/files.py).
        self.upload_quota = self.uploads.quota
        self.deletion_hooks = self.conversations.deletion_hooks

        # The use cases by name, as the HTTP fronts and the UI call them.
        self.audio_or_404 = lookups.audio_or_404
        self.conversation_or_404 = lookups.conversation_or_404
        self.run_or_404 = lookups.run_or_404
        self.stored_bytes = self.uploads.stored_bytes
        self.upload = self.uploads.upload
        self.upload_file = self.uploads.upload_file
        self.upload_page_file = self.uploads.upload_page_file
        self.delete_conversation = self.conversations.delete_conversation
        self.prune_stale = self.conversations.prune_stale
        self.conversation_view = self.conversations.conversation_view
        self.latest_audio_id = self.questions.latest_audio_id
        self.start_question = self.questions.start_question
        self.prepare = self.questions.prepare
        self.prepare_many = self.questions.prepare_many
        self.start_runs = self.running.start_runs
        self.follow = self.running.follow
        self.stop_runs = self.running.stop_runs
        self.live_runs = self.running.live_runs
        self.stream = self.running.stream
        self.stream_many = self.running.stream_many
        self.compare_summary = self.running.compare_summary
        self.message_summary = self.running.message_summary
        self.share = self.sharing.share
        self.unshare = self.sharing.unshare
        self.share_is_valid = self.sharing.share_is_valid
        self.shared_conversation = self.sharing.shared_conversation
        self.shared_export = self.sharing.shared_export
        self.shared_recording = self.sharing.shared_recording

    def data_of(self, owner: str) -> OwnedData:
        """``owner``'s stored rows (``backend.service.owned_data``): how the fronts read them."""
        return OwnedData(self.store, owner)

    async def ask(
        self, conversation_id: str, ask: AskRequest, *, owner: str
    ) -> AsyncIterator[ev.Event]:
        """A question prepared and its run followed (``prepare``, then ``stream``)."""
        request, _ = self.prepare(conversation_id, ask, owner=owner)
        async for event in self.stream(conversation_id, request):
            yield event

    def space_notices(self) -> list[str]:
        """On a Hugging Face Space: temporary history, a missing secret (backend/host/space.py)."""
        return space.space_notices(os.environ, self.settings.data_dir)

    def storage_notice(self) -> str | None:
        """On a Space without persistent storage: the notice that history is temporary."""
        return space.temporary_history_notice(os.environ, self.settings.data_dir)

    def close(self) -> None:
        """Shutdown: live runs end as interrupted, their events kept."""
        self.runs.close()

    def catalogue(self) -> dict[str, Any]:
        return self.registry.catalogue()
