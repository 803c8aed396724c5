"""``AgentService``'s questions: a question checked, admitted and stored with its title and
its runs in one transaction, ready for the run manager."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from agent.audio import AudioStore
from agent.context import PriorTurn, RunRequest, is_paid
from agent.planners.base import Planner
from agent.registry import Registry, UnavailableError
from agent.strategies import default_strategy, strategy_names
from agent.tools.base import Tool
from backend.access.body_limits import Text, check_question
from backend.access.clients import ClientDirectory
from backend.errors import ServiceError
from backend.host.settings import Settings
from backend.runs.manager import RunManager, RunRefused, Ticket
from backend.service.lookups import OwnerLookups
from backend.service.titles import distinct, plain_title
from storage import Store
from storage.models import DEFAULT_TITLE
from storage.schemas import MessageInfo


@pydantic_dataclass
class AskRequest:
    """A question as a client asks it: the body of ``POST .../ask`` (validated by FastAPI), what
    the page, ``/v1`` and MCP build, and what the service turns into the runs' ``RunRequest``s
    (which hold the resolved planner, tools and audio instead of their names). One type from
    the HTTP body to the run; a pydantic dataclass, so it is validated wherever it is made."""

    question: Text
    choices: list[Text] = field(default_factory=list)
    audio_id: Text | None = None  # default: the conversation's latest audio
    planner: Text | None = None
    tools: list[Text] | None = None
    strategy: Text = field(default_factory=default_strategy)  # the registry's default
    budget: Annotated[int | None, Field(ge=1, le=100)] = None


@dataclass
class StartedQuestion:
    """A question accepted and stored, its runs prepared (``AgentService.start_question``)."""

    conversation_id: str
    created: bool  # the conversation was made for this question
    requests: list[RunRequest]
    message: MessageInfo


class QuestionService:
    """The asking part of ``AgentService``. Owns the tickets of questions admitted and
    stored but not started yet (``take_ticket``: the runs part starts them)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        registry: Registry,
        audio: AudioStore,
        manager: RunManager,
        clients: ClientDirectory,
        lookups: OwnerLookups,
    ) -> None:
        self.settings = settings
        self.store = store
        self.registry = registry
        self.audio = audio
        self._manager = manager  # admission before anything is stored
        self._clients = clients  # each owner's last client address
        self._lookups = lookups
        self._tickets: dict[str, Ticket] = {}  # admitted, by first run id, until started

    def take_ticket(self, run_id: str) -> Ticket | None:
        """The admission of the question whose first run is ``run_id``, handed over once."""
        return self._tickets.pop(run_id, None)

    def latest_audio_id(self, conversation_id: str) -> str | None:
        return self.store.messages.latest_audio_id(conversation_id)

    def history(self, conversation_id: str) -> list[PriorTurn]:
        """The planner's view of earlier questions and answers: one query."""
        return [
            PriorTurn(question, answer, choices)
            for question, choices, answer in self.store.runs.prior_turns(conversation_id)
        ]

    def start_question(
        self,
        conversation_id: str | None,
        ask: AskRequest,
        contenders: list[tuple[str | None, str]],
        *,
        owner: str,
    ) -> StartedQuestion:
        """Store a question in ``owner``'s conversation, or in a new one when there is none
        (``conversation_id`` None, or not theirs), and prepare its runs (``prepare_many``:
        every check, admission). A conversation made here is deleted again when the question
        is refused, so a refused first question leaves nothing behind (ServiceError)."""
        conv = (
            self.store.conversations.get_conversation(conversation_id, owner)
            if conversation_id
            else None
        )
        created = conv is None
        if conv is None:
            conv = self.store.conversations.create_conversation(owner=owner)
        try:
            requests, message = self.prepare_many(conv.id, ask, contenders, owner=owner)
        except BaseException:
            if created:
                self.store.conversations.delete_conversation(conv.id, owner)
            raise
        return StartedQuestion(conv.id, created, requests, message)

    def prepare(
        self,
        conversation_id: str,
        ask: AskRequest,
        *,
        owner: str,
        address: str | None = None,
        planner: Planner | None = None,
        tools: list[Tool] | None = None,
    ) -> tuple[RunRequest, MessageInfo]:
        """Validate a question and record it; raises ServiceError before anything streams.

        ``planner`` / ``tools``: ready-made ones instead of ``ask.planner`` / ``ask.tools``
        from the catalogue (a tool called directly by another program: backend.http.client_runs)."""
        requests, message = self.prepare_many(
            conversation_id,
            ask,
            [(ask.planner, ask.strategy)],
            owner=owner,
            address=address,
            planners=None if planner is None else [planner],
            tools=tools,
        )
        return requests[0], message

    def prepare_many(
        self,
        conversation_id: str,
        ask: AskRequest,
        contenders: list[tuple[str | None, str]],
        *,
        owner: str,
        address: str | None = None,
        planners: list[Planner] | None = None,
        tools: list[Tool] | None = None,
    ) -> tuple[list[RunRequest], MessageInfo]:
        """One question for several (planner, strategy) pairs: sibling runs of one message.

        Admission (queue, per-owner and per-address limits; ``address`` default: where the
        owner was last seen) is checked before anything is stored: ServiceError 429 with a
        Retry-After header when refused."""
        conv = self._lookups.conversation_or_404(conversation_id, owner=owner)
        question = ask.question.strip()
        if not question:
            raise ServiceError("Type a question first.")
        choices = [c.strip() for c in ask.choices if c and c.strip()]
        check_question(question, choices, self.settings.limits)
        if len(choices) == 1:
            raise ServiceError("Give at least two answer choices, or none.")
        if not contenders:
            raise ServiceError("Pick at least one planner.")
        known = strategy_names()
        for _, strategy in contenders:
            if strategy not in known:
                raise ServiceError(
                    f"Unknown strategy '{strategy}'. Known: {', '.join(sorted(known))}."
                )
        audio_id = ask.audio_id or self.latest_audio_id(conversation_id)
        if not audio_id:
            raise ServiceError("Upload or record audio first.")
        ref = self.audio.get(audio_id)
        owned = self.store.recordings.get_audio(audio_id, owner)
        if ref is None or owned is None:
            raise ServiceError(f"Unknown audio {audio_id}; upload it again.", status=404)
        ref = dataclasses.replace(ref, name=owned.name)  # this owner's file name, no other
        try:
            if tools is None:
                tools = self.registry.tools(ask.tools)
            if planners is None:
                planners = [
                    self.registry.planner(name or self.registry.default_planner())
                    for name, _ in contenders
                ]
        except UnavailableError as exc:
            raise ServiceError(str(exc)) from exc
        try:
            ticket = self._manager.admit(
                owner,
                len(planners),
                paid=any(map(is_paid, planners)),
                address=address or self._clients.address_of(owner),
            )
        except RunRefused as exc:
            raise ServiceError(str(exc), status=exc.status, retry_after=exc.retry_after_s) from exc
        try:
            title = None
            if conv.title == DEFAULT_TITLE:
                title = self._title(conversation_id, question, owned.name, owner)
            requests, message = self._record(
                conversation_id, question, choices, audio_id, ref, tools, planners, contenders,
                ask.budget, title,
            )  # fmt: skip
        except BaseException:
            self._manager.release(ticket)
            raise
        self._tickets[requests[0].run_id] = ticket
        return requests, message

    def _title(self, conversation_id: str, question: str, audio_name: str, owner: str) -> str:
        """The name of a conversation still without a title: its first question and its
        recording, distinct from the owner's other titles (``backend.service.titles``)."""
        plain = plain_title(question, audio_name)
        return distinct(plain, self.store.conversations.titles_from(owner, plain, conversation_id))

    def _record(
        self,
        conversation_id: str,
        question: str,
        choices: list[str],
        audio_id: str,
        ref: Any,
        tools: list[Any],
        planners: list[Any],
        contenders: list[tuple[str | None, str]],
        budget: int | None,
        title: str | None,
    ) -> tuple[list[RunRequest], MessageInfo]:
        """The question, its title and its runs stored in one transaction."""
        history = self.history(conversation_id)
        requests = [
            RunRequest(
                question=question,
                choices=choices,
                audio=[ref],
                planner=planner,
                tools=tools,
                history=history,
                strategy=strategy,
                budget=budget or self.settings.budget,
                tool_timeout_s=self.settings.tool_timeout_s,
            )
            for planner, (_, strategy) in zip(planners, contenders, strict=True)
        ]
        message, _ = self.store.messages.add_question(
            conversation_id,
            question,
            choices,
            audio_id,
            [(r.run_id, r.planner.name, r.strategy) for r in requests],
            [t.name for t in tools],
            group_id=uuid.uuid4().hex if len(contenders) > 1 else None,
            worker_id=self._manager.worker_id,
            title=title,
        )
        return requests, message
