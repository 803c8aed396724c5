"""The service as one owner sees it (what the Gradio handlers use).

``OwnedService(service, owner)`` has the service's methods with ``owner`` bound, and its
``data`` (``backend.service.owned_data``: the one way the fronts read stored rows) and
``audio`` are scoped the same way: another owner's conversation, run or recording is simply
not there (None, an empty list, or a 404 ServiceError, as for an id that does not exist).
Methods not listed here are not reachable through it, so a handler cannot read unscoped data
by accident.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from agent.audio import AudioRef, AudioStore
from backend.service import (
    AgentService,
    AskRequest,
    CompareSummary,
    MessageView,
    StartedQuestion,
)
from storage import Store
from storage.schemas import AudioInfo, ConversationInfo, RunInfo


class OwnedAudio:
    """The audio store through one owner's references (their file names, nobody else's)."""

    def __init__(self, audio: AudioStore, store: Store, owner: str) -> None:
        self._audio = audio
        self._store = store
        self.owner = owner
        self.max_bytes = audio.max_bytes

    def get(self, audio_id: str) -> AudioRef | None:
        info = self._store.recordings.get_audio(audio_id, self.owner)
        ref = self._audio.get(audio_id) if info is not None else None
        return dataclasses.replace(ref, name=info.name) if ref and info else None

    def samples(self, ref: AudioRef) -> Any:
        return self._audio.samples(ref)


class OwnedService:
    """``AgentService`` for one owner (see the module doc)."""

    def __init__(self, service: AgentService, owner: str) -> None:
        self._service = service
        self.owner = owner
        self.data = service.data_of(owner)
        self.audio = OwnedAudio(service.audio, service.store, owner)
        self.settings = service.settings
        self.registry = service.registry

    def catalogue(self) -> dict[str, Any]:
        return self._service.catalogue()

    def upload(self, data: bytes, name: str = "") -> AudioInfo:
        return self._service.upload(data, name, owner=self.owner)

    def upload_file(self, path: Any) -> AudioInfo:
        return self._service.upload_file(path, owner=self.owner)

    def upload_page_file(self, path: str) -> AudioInfo:
        return self._service.upload_page_file(path, owner=self.owner)

    def conversation_or_404(self, conversation_id: str) -> ConversationInfo:
        return self._service.conversation_or_404(conversation_id, owner=self.owner)

    def conversation_view(
        self, conversation_id: str, *, events: bool = True, full_last: int | None = None
    ) -> list[MessageView]:
        return self._service.conversation_view(
            conversation_id, owner=self.owner, events=events, full_last=full_last
        )

    def latest_audio_id(self, conversation_id: str) -> str | None:
        if self.data.get_conversation(conversation_id) is None:
            return None
        return self._service.latest_audio_id(conversation_id)

    def start_question(
        self,
        conversation_id: str | None,
        ask: AskRequest,
        contenders: list[tuple[str | None, str]],
    ) -> StartedQuestion:
        return self._service.start_question(conversation_id, ask, contenders, owner=self.owner)

    def prepare(self, conversation_id: str, ask: AskRequest) -> Any:
        return self._service.prepare(conversation_id, ask, owner=self.owner)

    def prepare_many(
        self, conversation_id: str, ask: AskRequest, contenders: list[tuple[str | None, str]]
    ) -> Any:
        return self._service.prepare_many(conversation_id, ask, contenders, owner=self.owner)

    def live_runs(self, conversation_id: str) -> list[RunInfo]:
        if self.data.get_conversation(conversation_id) is None:
            return []
        return self._service.live_runs(conversation_id)

    def stop_runs(self, run_ids: list[str]) -> list[str]:
        return self._service.stop_runs([r for r in run_ids if self.data.get_run(r) is not None])

    def mine(self, run_ids: list[str]) -> list[str]:
        """Those of ``run_ids`` that are this owner's."""
        return [r for r in run_ids if self.data.get_run(r) is not None]

    async def follow(self, run_ids: list[str], after: Any = 0) -> AsyncIterator[Any]:
        """``AgentService.follow`` for this owner's runs (checked in a thread: the database
        is never read on the event loop)."""
        mine = await asyncio.to_thread(self.mine, run_ids)
        async for event in self._service.follow(mine, after):
            yield event

    async def stream(
        self, conversation_id: str, request: Any, *, answer_message: bool = True
    ) -> AsyncIterator[Any]:
        """``AgentService.stream`` for this owner's conversation; the checks and the start in
        a thread."""
        async for event in self.stream_many(conversation_id, [request], answer_message):
            yield event

    async def stream_many(
        self, conversation_id: str, requests: list[Any], answer_message: bool = True
    ) -> AsyncIterator[Any]:
        """``AgentService.stream_many`` for this owner's conversation (see ``stream``)."""

        def start() -> list[str]:
            self.conversation_or_404(conversation_id)
            return self._service.start_runs(
                conversation_id, requests, owner=self.owner, answer_message=answer_message
            )

        run_ids = await asyncio.to_thread(start)
        async for event in self._service.follow(run_ids):
            yield event

    def compare_summary(self, run_ids: list[str]) -> CompareSummary:
        mine = [r for r in run_ids if self.data.get_run(r) is not None]
        return self._service.compare_summary(mine)

    def message_summary(self, message_id: str) -> CompareSummary:
        return self._service.message_summary(message_id, owner=self.owner)

    def delete_conversation(self, conversation_id: str) -> Any:
        """Delete this owner's conversation with what only it used; None if not theirs."""
        if self.data.get_conversation(conversation_id) is None:
            return None
        return self._service.delete_conversation(conversation_id)

    def share(self, conversation_id: str) -> str:
        return self._service.share(conversation_id, owner=self.owner)

    def unshare(self, conversation_id: str) -> bool:
        return self._service.unshare(conversation_id, owner=self.owner)
