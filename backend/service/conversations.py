"""``AgentService``'s conversations: deleted with what only they used, pruned after the
retention period, and read back with their runs in a fixed number of queries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agent import events as ev
from agent.audio import AudioStore
from backend.host.settings import Settings
from backend.service.lookups import OwnerLookups
from backend.service.runs import RunService
from storage import Store
from storage.cleanup import Purged, purge_conversation, stale_conversations
from storage.schemas import MessageInfo, RunInfo
from storage.upload_files import UploadFiles

log = logging.getLogger(__name__)

# What a run's answer needs shown without its trace: who answered, the answer, the totals.
SUMMARY_EVENT_TYPES = ("run_started", "answer", "run_finished", "run_failed")


@dataclass
class RunView:
    info: RunInfo
    events: list[ev.Event]
    complete: bool = True  # False: only its SUMMARY_EVENT_TYPES events were read


@dataclass
class MessageView:
    message: MessageInfo
    runs: list[RunView] = field(default_factory=list)


class ConversationService:
    """The conversations part of ``AgentService``; owns the ``deletion_hooks``."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        audio: AudioStore,
        upload_files: UploadFiles,
        lookups: OwnerLookups,
        running: RunService,
    ) -> None:
        self.settings = settings
        self.store = store
        self.audio = audio
        self.upload_files = upload_files
        self._lookups = lookups
        self._running = running  # a deleted conversation's live runs are stopped first
        # Called with what a deletion removed, before the recordings' files go (the UI adds
        # the removal of its temporary copies and exports: frontend/files.py).
        self.deletion_hooks: list[Callable[[Purged], object]] = []

    def delete_conversation(self, conversation_id: str) -> Purged | None:
        """Delete a conversation with what only it used: the recordings no other conversation
        (of any owner) references, their files, their cached tool results, and (through
        ``deletion_hooks``) the UI's temporary files and exports. None if it did not exist."""
        running = self._running
        running.stop_runs([r.id for r in running.live_runs(conversation_id)])  # nothing to write to
        purged = purge_conversation(self.store, conversation_id)
        if purged is None:
            return None
        for hook in self.deletion_hooks:
            try:
                hook(purged)
            except Exception:  # the database rows are gone already; report, keep going
                log.exception("cleanup after deleting conversation %s failed", conversation_id)
        for info in purged.audio:
            self.audio.delete(info.id)
        self.upload_files.forget_missing(purged.owner)  # page uploads the hooks removed
        return purged

    def prune_stale(self, now: datetime | None = None) -> list[str]:
        """Delete conversations untouched for ``settings.retention_days`` (as
        ``delete_conversation`` does); returns their ids. Nothing when retention is off."""
        days = self.settings.retention_days
        if not days or days <= 0:
            return []
        cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
        pruned = []
        for conversation_id in stale_conversations(self.store, cutoff):
            if self.delete_conversation(conversation_id) is not None:
                pruned.append(conversation_id)
        return pruned

    def conversation_view(
        self,
        conversation_id: str,
        *,
        owner: str,
        events: bool = True,
        full_last: int | None = None,
        last_messages: int | None = None,
    ) -> list[MessageView]:
        """Messages with their runs, in a fixed number of queries (not one per message).

        ``last_messages=N``: only the last N messages (a page from the end, for clients that
        open a long conversation).
        ``events=False``: run rows only (a list of runs, a new question), which does not
        grow with the length of the runs' traces. ``full_last=N``: every event of the runs
        of the last N questions, and of earlier runs only their summary (start, answer,
        end: ``RunView.complete`` False), so that the events read do not grow with the
        number of questions."""
        self._lookups.conversation_or_404(conversation_id, owner=owner)
        messages = self.store.messages.list_messages(conversation_id, last_messages)
        first = messages[0].position if messages and last_messages is not None else None
        runs = self.store.runs.conversation_runs(conversation_id, first)
        asked = [m.id for m in messages if m.role == "user"]
        full = set(asked if full_last is None else asked[max(0, len(asked) - full_last) :])
        stored: dict[str, list[ev.Event]] = {}
        if events:
            stored = self.store.runs.events_for_runs(r.id for m in full for r in runs.get(m, []))
            rest = [r.id for m in asked if m not in full for r in runs.get(m, [])]
            stored.update(self.store.runs.events_for_runs(rest, SUMMARY_EVENT_TYPES))
        views = []
        for message in messages:
            infos = runs.get(message.id, []) if message.role == "user" else []
            complete = not events or message.id in full
            run_views = [RunView(i, stored.get(i.id, []), complete) for i in infos]
            views.append(MessageView(message, run_views))
        return views
