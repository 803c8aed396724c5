"""One owner's stored rows: the one way the HTTP fronts (``backend.http``) and the UI
(``frontend``) read them (``AgentService.data_of(owner)``, ``OwnedService.data``).

``OwnedData`` has the ``Store`` reads and writes the fronts use with the owner bound: another
owner's conversation, run or recording is simply not there (None, an empty list), as for an
id that does not exist. The fronts never reach ``service.store`` (tests/test_composition.py);
what is not a plain read of one owner's rows is a use case of the service
(``backend.service``), which checks the owner it is given.
"""

from __future__ import annotations

from typing import Any

from agent.events import Event
from storage import Store
from storage.models import DEFAULT_TITLE
from storage.schemas import AudioInfo, ConversationInfo, MessageInfo, RunInfo


class OwnedData:
    """``Store`` reads and writes the fronts use, limited to one owner's data."""

    def __init__(self, store: Store, owner: str) -> None:
        self._store = store
        self.owner = owner

    def list_conversations(self) -> list[ConversationInfo]:
        return self._store.conversations.list_conversations(self.owner)

    def create_conversation(self, title: str = DEFAULT_TITLE) -> ConversationInfo:
        return self._store.conversations.create_conversation(title, owner=self.owner)

    def get_conversation(self, conversation_id: str) -> ConversationInfo | None:
        return self._store.conversations.get_conversation(conversation_id, self.owner)

    def rename_conversation(self, conversation_id: str, title: str) -> ConversationInfo | None:
        return self._store.conversations.rename_conversation(conversation_id, title, self.owner)

    def delete_conversation(self, conversation_id: str) -> bool:
        return self._store.conversations.delete_conversation(conversation_id, self.owner)

    def conversation_export(self, conversation_id: str) -> dict[str, Any]:
        return self._store.export.conversation_export(conversation_id, self.owner)

    def get_audio(self, audio_id: str) -> AudioInfo | None:
        return self._store.recordings.get_audio(audio_id, self.owner)

    def audio_infos(self, audio_ids: Any) -> dict[str, AudioInfo]:
        return self._store.recordings.audio_infos(audio_ids, self.owner)

    def get_run(self, run_id: str) -> RunInfo | None:
        return self._store.runs.get_run(run_id, self.owner)

    def runs_for_message(self, message_id: str) -> list[RunInfo]:
        return self._store.runs.runs_for_message(message_id, self.owner)

    def run_events(self, run_id: str, after: int = 0) -> list[Event]:
        """The run's events (after seq ``after``); none of another owner's run."""
        if self._store.runs.get_run(run_id, self.owner) is None:
            return []
        return self._store.runs.run_events(run_id, after)

    def list_messages(self, conversation_id: str) -> list[MessageInfo]:
        if self.get_conversation(conversation_id) is None:
            return []
        return self._store.messages.list_messages(conversation_id)

    def count_messages(self, conversation_id: str) -> int:
        if self.get_conversation(conversation_id) is None:
            return 0
        return self._store.messages.count_messages(conversation_id)

    def conversation_audio_names(self, conversation_ids: Any) -> dict[str, list[str]]:
        mine = {c.id for c in self.list_conversations()}
        return self._store.conversations.conversation_audio_names(
            c for c in conversation_ids if c in mine
        )

    def running_conversations(self, conversation_ids: Any) -> set[str]:
        mine = {c.id for c in self.list_conversations()}
        return self._store.conversations.running_conversations(
            c for c in conversation_ids if c in mine
        )

    def is_shared(self, conversation_id: str) -> bool:
        return self.get_conversation(conversation_id) is not None and self._store.shares.is_shared(
            conversation_id
        )
