"""The app's use cases, shared by the REST/SSE routes and the Gradio UI.

The service stores uploads and questions and starts runs in the run manager
(``backend.runs.manager``), which owns them: it stores every event before anyone sees it, so a run
cut short is still there up to its last event, and a client that goes away only stops
following it.

``AgentService`` is composed here of its parts, one module each: uploads
(``backend.service.uploads``), conversations (``backend.service.conversations``), questions
(``backend.service.questions``), runs (``backend.service.runs``) and share links
(``backend.service.sharing``), all on ``backend.service.base``; compare mode's summary is
``backend.service.compare_summary``. The folder also holds the conversation titles
(``titles``), the expiry of old history and uploads (``retention``) and the owner-scoped view
of the service that the UI reads through (``owned``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agent.answer import says_it_cannot_tell
from agent.audio import SAMPLE_RATE, AudioStore
from agent.doctor import SharedChecks
from agent.registry import Registry
from agent.strategies import compared_strategies, default_strategy, strategy_labels
from backend.access.clients import ClientDirectory
from backend.access.upload_quota import UploadQuota, disk_free
from backend.errors import ServiceError
from backend.host import space
from backend.host.settings import Settings
from backend.runs.manager import RunManager, Ticket
from backend.service.compare_summary import CompareSummary, summary_row
from backend.service.conversations import (
    SUMMARY_EVENT_TYPES,
    ConversationService,
    MessageView,
    RunView,
)
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


class AgentService(
    UploadService,
    ConversationService,
    QuestionService,
    RunService,
    ShareService,
):
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
        self._tickets: dict[str, Ticket] = {}  # admitted, by first run id, until started
        self.clients = ClientDirectory()  # each owner's last client address (limits)
        self.upload_files = UploadFiles(store)  # the page's uploads, counted per owner
        self.upload_quota = UploadQuota(  # per owner and per address (backend.access.upload_quota)
            per_hour=settings.limits.uploads_per_hour,
            stored_bytes=int(settings.limits.stored_mb_per_owner * 1024 * 1024),
            stored_bytes_of=self.stored_bytes,
            address_limits=settings.client_limits,
            free_bytes=disk_free(settings.data_dir),
            min_free_bytes=int(settings.min_free_disk_mb * 1024 * 1024),
        )
        # Called with what a deletion removed, before the recordings' files go (the UI adds
        # the removal of its temporary copies and exports: frontend/files.py).
        self.deletion_hooks: list[Callable[[Purged], object]] = []

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
