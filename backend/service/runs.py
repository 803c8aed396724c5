"""``AgentService``'s runs: prepared runs handed to the run manager (``backend.runs.manager``),
followed, stopped, and compared when siblings answer one question."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from agent import events as ev
from agent.context import RunRequest
from agent.registry import Registry
from backend.errors import ServiceError
from backend.runs.manager import RunManager, RunRefused, Ticket
from backend.service.compare_summary import CompareSummary, summary_row
from storage import Store
from storage.models import DEFAULT_OWNER
from storage.schemas import RunInfo


class RunService:
    """The runs part of ``AgentService``. ``take_ticket``: the admission of a prepared
    question (the questions part keeps them until its runs start)."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        manager: RunManager,
        take_ticket: Callable[[str], Ticket | None],
    ) -> None:
        self.store = store
        self.registry = registry
        self._manager = manager
        self._take_ticket = take_ticket

    def start_runs(
        self,
        conversation_id: str,
        requests: list[RunRequest],
        *,
        owner: str | None = None,
        answer_message: bool = True,
    ) -> list[str]:
        """Hand prepared runs to the run manager; returns at once with their ids.

        ``owner``: whose runs (limits, tool cache); default the conversation's owner.

        When they have all ended, the answer becomes the assistant's message (one run), or
        the comparison's headline does (sibling runs; not when one was stopped).
        ``answer_message=False``: add neither."""

        def on_end(infos: list[RunInfo]) -> None:
            if not answer_message or not infos:
                return
            if len(requests) == 1:
                info = infos[0]
                if info.answer_text is not None:
                    text = info.answer_choice or info.answer_text
                    self.store.messages.add_message(conversation_id, "assistant", text)
            elif not any(i.status in ("cancelled", "interrupted") for i in infos):
                summary = self.compare_summary([i.id for i in infos])
                self.store.messages.add_message(conversation_id, "assistant", summary.headline)

        if owner is None:
            conv = self.store.conversations.get_conversation(conversation_id)
            owner = conv.owner if conv is not None else DEFAULT_OWNER
        ticket = self._take_ticket(requests[0].run_id) if requests else None
        try:
            return self._manager.start(requests, owner=owner, ticket=ticket, on_end=on_end)
        except RunRefused as exc:
            raise ServiceError(str(exc), status=exc.status, retry_after=exc.retry_after_s) from exc

    def follow(
        self, run_ids: list[str], after: int | dict[str, int] = 0
    ) -> AsyncIterator[ev.Event]:
        """Stored events of runs after ``after``, then live ones until they all end."""
        return self._manager.follow(run_ids, after)

    def stop_runs(self, run_ids: list[str]) -> list[str]:
        """Stop live runs (status cancelled); returns those that were live here."""
        return [run_id for run_id in run_ids if self._manager.stop(run_id)]

    def live_runs(self, conversation_id: str) -> list[RunInfo]:
        """Runs of the conversation's latest question that are still running."""
        for message in reversed(self.store.messages.list_messages(conversation_id)):
            if message.role == "user":
                return [
                    r for r in self.store.runs.runs_for_message(message.id) if r.status == "running"
                ]
        return []

    async def stream(
        self, conversation_id: str, request: RunRequest, *, answer_message: bool = True
    ) -> AsyncIterator[ev.Event]:
        """Start a prepared request and follow it; every event is stored before it is
        yielded. Leaving early only stops following: the run goes on (``stop_runs`` ends it).

        ``answer_message``: add the answer as the assistant's message (compare mode adds one
        summary message for all sibling runs instead)."""
        run_ids = self.start_runs(conversation_id, [request], answer_message=answer_message)
        async for event in self.follow(run_ids):
            yield event

    async def stream_many(
        self, conversation_id: str, requests: list[RunRequest]
    ) -> AsyncIterator[ev.Event]:
        """Start sibling requests at once and follow them; their events interleave."""
        run_ids = self.start_runs(conversation_id, requests)
        async for event in self.follow(run_ids):
            yield event

    def compare_summary(self, run_ids: list[str]) -> CompareSummary:
        """Each sibling run's answer (its confidence, and whether it was a best guess), cost
        and time; whether they agree; the majority."""
        answers = self.store.runs.events_for_runs(run_ids, ("answer",))
        rows = []
        for run_id in run_ids:
            info = self.store.runs.get_run(run_id)
            if info is None:
                continue
            answer = next((e for e in answers.get(run_id, []) if isinstance(e, ev.Answer)), None)
            label = self.registry.entry_label("planner", info.planner)
            rows.append(summary_row(info, label, answer))
        return CompareSummary.from_rows(rows)

    def message_summary(self, message_id: str, *, owner: str) -> CompareSummary:
        runs = self.store.runs.runs_for_message(message_id, owner)
        if not runs:
            raise ServiceError(f"No runs for message {message_id}.", status=404)
        return self.compare_summary([r.id for r in runs])
