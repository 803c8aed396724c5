"""The app's use cases, shared by the REST/SSE routes and the Gradio UI.

The service stores uploads and questions and starts runs in the run manager
(``backend.runs``), which owns them: it stores every event before anyone sees it, so a run
cut short is still there up to its last event, and a client that goes away only stops
following it.

Compare mode's summary of sibling runs is ``backend.compare_summary``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.audio import AudioError, AudioStore, UnsupportedFormatError, decode_bytes, sha256_bytes
from agent.context import PriorTurn, RunRequest, is_paid
from agent.doctor import SharedChecks
from agent.planners.base import Planner
from agent.registry import Registry, UnavailableError
from agent.strategies import STRATEGY_LABELS
from agent.tools.base import Tool
from backend import space
from backend.clients import ClientDirectory
from backend.compare_summary import CompareSummary, summary_row
from backend.errors import ServiceError
from backend.limits import check_question
from backend.runs import RunManager, RunRefused, Ticket
from backend.settings import Settings
from backend.titles import distinct, plain_title
from backend.uploads import UploadQuota, disk_free
from storage import SqlToolCache, Store
from storage.cleanup import Purged, purge_conversation, stale_conversations
from storage.models import DEFAULT_OWNER, DEFAULT_TITLE
from storage.repo import DECODED_BYTES_PER_S
from storage.schemas import AudioInfo, ConversationInfo, MessageInfo, RunInfo
from storage.upload_files import UploadFiles

log = logging.getLogger(__name__)


@dataclass
class AskRequest:
    question: str
    choices: list[str] = field(default_factory=list)
    audio_id: str | None = None  # default: the conversation's latest audio
    planner: str | None = None
    tools: list[str] | None = None
    strategy: str = "react"
    budget: int | None = None


# What a run's answer needs shown without its trace: who answered, the answer, the totals.
SUMMARY_EVENT_TYPES = ("run_started", "answer", "run_finished", "run_failed")


@dataclass
class StartedQuestion:
    """A question accepted and stored, its runs prepared (``AgentService.start_question``)."""

    conversation_id: str
    created: bool  # the conversation was made for this question
    requests: list[RunRequest]
    message: MessageInfo


@dataclass
class RunView:
    info: RunInfo
    events: list[ev.Event]
    complete: bool = True  # False: only its SUMMARY_EVENT_TYPES events were read


@dataclass
class MessageView:
    message: MessageInfo
    runs: list[RunView] = field(default_factory=list)


class AgentService:
    def __init__(self, settings: Settings, store: Store, registry: Registry) -> None:
        self.settings = settings
        self.store = store
        self.registry = registry
        self.audio = AudioStore(
            settings.data_dir / "audio",
            max_bytes=int(settings.max_upload_mb * 1024 * 1024),
            max_seconds=settings.max_audio_minutes * 60,
        )
        self.cache = SqlToolCache(store)
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
        self.upload_quota = UploadQuota(  # per owner and per address (backend.uploads)
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
        """On a Hugging Face Space: temporary history, a missing secret (backend/space.py)."""
        return space.space_notices(os.environ, self.settings.data_dir)

    def storage_notice(self) -> str | None:
        """On a Space without persistent storage: the notice that history is temporary."""
        return space.temporary_history_notice(os.environ, self.settings.data_dir)

    def close(self) -> None:
        """Shutdown: live runs end as interrupted, their events kept."""
        self.runs.close()

    # -- audio ----------------------------------------------------------------------------
    def stored_bytes(self, owner: str) -> int:
        """What ``owner`` keeps on disk: recordings, and page uploads no recording counts."""
        return self.store.stored_bytes(owner) + self.upload_files.bytes_of(owner)

    def upload(self, data: bytes, name: str = "", *, owner: str, counted: int = 0) -> AudioInfo:
        """Store a recording (bytes shared by identical uploads) and give ``owner`` a
        reference to it under ``name``. ``counted``: bytes of it already in the owner's
        stored bytes (a page upload)."""
        # The same bytes again cost nothing, if this owner has them already (another
        # owner's copy must not show: no existence oracle through the quota).
        digest = sha256_bytes(data)
        known = self.store.get_audio(digest, owner) is not None
        self.upload_quota.admit(owner, len(data), already_stored=known, counted=counted)
        existed = self.audio.get(digest) is not None
        try:
            if not known and existed:
                # Someone else stored these bytes: decode them anyway, so that the time this
                # upload takes does not tell that somebody has the same recording.
                decode_bytes(data, max_seconds=self.audio.max_seconds, name=name)
            ref = self.audio.add_bytes(data, name=name)
        except UnsupportedFormatError as exc:
            raise ServiceError(str(exc), status=415) from exc
        except AudioError as exc:
            raise ServiceError(str(exc), status=422) from exc
        if not known:  # with its decoded copy, does it still fit the owner's quota?
            keeps = len(data) + int(ref.duration_s * DECODED_BYTES_PER_S)
            refused = self.upload_quota.stored_refusal(owner, keeps, counted)
            if refused is not None:
                if not existed and self.store.get_audio(ref.id) is None:
                    self.audio.delete(ref.id)  # stored just now, for nobody else
                raise ServiceError(refused.detail, refused.status)
        self.store.add_audio(ref, size_bytes=len(data))
        self.store.add_audio_ref(owner, ref.id, Path(name).name if name else "")
        info = self.store.get_audio(ref.id, owner)
        assert info is not None
        return info

    def audio_or_404(self, audio_id: str, *, owner: str) -> AudioInfo:
        """``owner``'s recording; 404 alike for a missing id and someone else's."""
        info = self.store.get_audio(audio_id, owner)
        if info is None:
            raise ServiceError(f"No audio {audio_id}.", status=404)
        return info

    def upload_file(self, path: str | Path, *, owner: str) -> AudioInfo:
        path = Path(path)
        if not path.is_file():
            raise ServiceError(f"No such file: {path.name}")
        size = path.stat().st_size
        if size > self.audio.max_bytes:
            raise ServiceError(
                f"{path.name} is {size / 1e6:.0f} MB; the limit is "
                f"{self.settings.max_upload_mb:.0f} MB.",
                status=413,
            )
        # A file of the page's upload route is counted already: it moves to the recording.
        pending = self.upload_files.bytes_of(owner, str(path))
        info = self.upload(path.read_bytes(), name=path.name, owner=owner, counted=pending)
        if pending:
            self.upload_files.claim(str(path), owner, info.id)
        return info

    # -- conversations ------------------------------------------------------------------------
    def delete_conversation(self, conversation_id: str) -> Purged | None:
        """Delete a conversation with what only it used: the recordings no other conversation
        (of any owner) references, their files, their cached tool results, and (through
        ``deletion_hooks``) the UI's temporary files and exports. None if it did not exist."""
        self.stop_runs([r.id for r in self.live_runs(conversation_id)])  # nothing to write to
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

    def conversation_or_404(self, conversation_id: str, *, owner: str) -> ConversationInfo:
        """``owner``'s conversation; 404 alike for a missing id and someone else's."""
        conv = self.store.get_conversation(conversation_id, owner)
        if conv is None:
            raise ServiceError(f"No conversation {conversation_id}.", status=404)
        return conv

    def run_or_404(self, run_id: str, *, owner: str) -> RunInfo:
        """A run of ``owner``'s conversations; 404 alike for a missing id and someone else's."""
        info = self.store.get_run(run_id, owner)
        if info is None:
            raise ServiceError(f"No run {run_id}.", status=404)
        return info

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
        self.conversation_or_404(conversation_id, owner=owner)
        messages = self.store.list_messages(conversation_id, last_messages)
        first = messages[0].position if messages and last_messages is not None else None
        runs = self.store.conversation_runs(conversation_id, first)
        asked = [m.id for m in messages if m.role == "user"]
        full = set(asked if full_last is None else asked[max(0, len(asked) - full_last) :])
        stored: dict[str, list[ev.Event]] = {}
        if events:
            stored = self.store.events_for_runs(r.id for m in full for r in runs.get(m, []))
            rest = [r.id for m in asked if m not in full for r in runs.get(m, [])]
            stored.update(self.store.events_for_runs(rest, SUMMARY_EVENT_TYPES))
        views = []
        for message in messages:
            infos = runs.get(message.id, []) if message.role == "user" else []
            complete = not events or message.id in full
            run_views = [RunView(i, stored.get(i.id, []), complete) for i in infos]
            views.append(MessageView(message, run_views))
        return views

    def latest_audio_id(self, conversation_id: str) -> str | None:
        return self.store.latest_audio_id(conversation_id)

    def _history(self, conversation_id: str) -> list[PriorTurn]:
        """The planner's view of earlier questions and answers: one query."""
        return [
            PriorTurn(question, answer, choices)
            for question, choices, answer in self.store.prior_turns(conversation_id)
        ]

    # -- asking ---------------------------------------------------------------------------
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
        conv = self.store.get_conversation(conversation_id, owner) if conversation_id else None
        created = conv is None
        if conv is None:
            conv = self.store.create_conversation(owner=owner)
        try:
            requests, message = self.prepare_many(conv.id, ask, contenders, owner=owner)
        except BaseException:
            if created:
                self.store.delete_conversation(conv.id, owner)
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
        from the catalogue (a tool called directly by another program: backend.client_runs)."""
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
        conv = self.conversation_or_404(conversation_id, owner=owner)
        question = ask.question.strip()
        if not question:
            raise ServiceError("Type a question first.")
        choices = [c.strip() for c in ask.choices if c and c.strip()]
        check_question(question, choices, self.settings.limits)
        if len(choices) == 1:
            raise ServiceError("Give at least two answer choices, or none.")
        if not contenders:
            raise ServiceError("Pick at least one planner.")
        for _, strategy in contenders:
            if strategy not in STRATEGY_LABELS:
                raise ServiceError(
                    f"Unknown strategy '{strategy}'. Known: {', '.join(sorted(STRATEGY_LABELS))}."
                )
        audio_id = ask.audio_id or self.latest_audio_id(conversation_id)
        if not audio_id:
            raise ServiceError("Upload or record audio first.")
        ref = self.audio.get(audio_id)
        owned = self.store.get_audio(audio_id, owner)
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
            ticket = self.runs.admit(
                owner,
                len(planners),
                paid=any(map(is_paid, planners)),
                address=address or self.clients.address_of(owner),
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
            self.runs.release(ticket)
            raise
        self._tickets[requests[0].run_id] = ticket
        return requests, message

    def _title(self, conversation_id: str, question: str, audio_name: str, owner: str) -> str:
        """The name of a conversation still without a title: its first question and its
        recording, distinct from the owner's other titles (``backend.titles``)."""
        plain = plain_title(question, audio_name)
        return distinct(plain, self.store.titles_from(owner, plain, conversation_id))

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
        history = self._history(conversation_id)
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
        message, _ = self.store.add_question(
            conversation_id,
            question,
            choices,
            audio_id,
            [(r.run_id, r.planner.name, r.strategy) for r in requests],
            [t.name for t in tools],
            group_id=uuid.uuid4().hex if len(contenders) > 1 else None,
            worker_id=self.runs.worker_id,
            title=title,
        )
        return requests, message

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
                    self.store.add_message(conversation_id, "assistant", text)
            elif not any(i.status in ("cancelled", "interrupted") for i in infos):
                summary = self.compare_summary([i.id for i in infos])
                self.store.add_message(conversation_id, "assistant", summary.headline)

        if owner is None:
            conv = self.store.get_conversation(conversation_id)
            owner = conv.owner if conv is not None else DEFAULT_OWNER
        ticket = self._tickets.pop(requests[0].run_id, None) if requests else None
        try:
            return self.runs.start(requests, owner=owner, ticket=ticket, on_end=on_end)
        except RunRefused as exc:
            raise ServiceError(str(exc), status=exc.status, retry_after=exc.retry_after_s) from exc

    def follow(
        self, run_ids: list[str], after: int | dict[str, int] = 0
    ) -> AsyncIterator[ev.Event]:
        """Stored events of runs after ``after``, then live ones until they all end."""
        return self.runs.follow(run_ids, after)

    def stop_runs(self, run_ids: list[str]) -> list[str]:
        """Stop live runs (status cancelled); returns those that were live here."""
        return [run_id for run_id in run_ids if self.runs.stop(run_id)]

    def live_runs(self, conversation_id: str) -> list[RunInfo]:
        """Runs of the conversation's latest question that are still running."""
        for message in reversed(self.store.list_messages(conversation_id)):
            if message.role == "user":
                return [r for r in self.store.runs_for_message(message.id) if r.status == "running"]
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
        answers = self.store.events_for_runs(run_ids, ("answer",))
        rows = []
        for run_id in run_ids:
            info = self.store.get_run(run_id)
            if info is None:
                continue
            answer = next((e for e in answers.get(run_id, []) if isinstance(e, ev.Answer)), None)
            label = self.registry.entry_label("planner", info.planner)
            rows.append(summary_row(info, label, answer))
        return CompareSummary.from_rows(rows)

    def message_summary(self, message_id: str, *, owner: str) -> CompareSummary:
        runs = self.store.runs_for_message(message_id, owner)
        if not runs:
            raise ServiceError(f"No runs for message {message_id}.", status=404)
        return self.compare_summary([r.id for r in runs])

    async def ask(
        self, conversation_id: str, ask: AskRequest, *, owner: str
    ) -> AsyncIterator[ev.Event]:
        request, _ = self.prepare(conversation_id, ask, owner=owner)
        async for event in self.stream(conversation_id, request):
            yield event

    def catalogue(self) -> dict[str, Any]:
        return self.registry.catalogue()

    # -- share links ------------------------------------------------------------------------
    def share(self, conversation_id: str, *, owner: str) -> str:
        """A new read-only share link token (replacing an older one); only its hash is kept."""
        self.conversation_or_404(conversation_id, owner=owner)
        token = secrets.token_urlsafe(24)  # 192 bits
        self.store.set_share(conversation_id, share_hash(token))
        return token

    def unshare(self, conversation_id: str, *, owner: str) -> bool:
        self.conversation_or_404(conversation_id, owner=owner)
        return self.store.revoke_share(conversation_id)

    def share_is_valid(self, token: str, conversation_id: str) -> bool:
        """Whether ``token`` still opens ``conversation_id`` (one primary-key read): what a
        shared view checks on each event, so that stopping sharing ends open views."""
        if not token:
            return False
        return self.store.shared_conversation_id(share_hash(token)) == conversation_id

    def shared_conversation(self, token: str) -> ConversationInfo:
        """The conversation a share token opens; 404 for an unknown or revoked token."""
        conversation_id = self.store.shared_conversation_id(share_hash(token)) if token else None
        conv = self.store.get_conversation(conversation_id) if conversation_id else None
        if conv is None:
            raise ServiceError("No such share link (it may have been revoked).", status=404)
        return conv


def share_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
