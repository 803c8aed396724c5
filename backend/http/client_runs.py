"""Questions and tool calls from other programs (the OpenAI-compatible API, the MCP server).

Each is a stored run in the owner's history, started and admitted like a question asked in
the page (the same per-owner limits, queue and daily spend cap), so it opens in the page with
its full trace:

- a question (``start_question``) goes into a new conversation titled by the question, or into
  the conversation an earlier question started (``find_conversation``: a follow-up);
- a single tool call (``start_tool_call``) is a run of ``DirectCallPlanner``, which asks for
  exactly that call; calls on one recording share one conversation per owner,
  "Tool calls on <file name>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.planners.direct import DIRECT_BUDGET, DirectCallPlanner, call_text
from agent.strategies.audio_views import AskAudioTool
from agent.strategies.react import React
from agent.tools.base import Tool
from backend.errors import ServiceError
from backend.http.model_names import ModelChoice
from backend.service import AgentService, AskRequest
from backend.service.titles import conversation_title
from storage.repo import make_title
from storage.schemas import AudioInfo

# An upload's URL as the API gives it (…/api/audio/<sha256>, optionally /info), or the id alone.
_AUDIO_URL = re.compile(r"(?:^|/api/audio/)([0-9a-f]{64})(?:/info)?/?$")
TOOL_CALLS_TITLE = "Tool calls on {name}"
ASK_AUDIO = "ask_audio"


@dataclass(frozen=True)
class Started:
    run_id: str
    conversation_id: str


def audio_id_of(reference: str) -> str | None:
    """The audio id in ``reference``: an id, or the URL (absolute or a path) of an upload."""
    match = _AUDIO_URL.search(reference.strip().split("?", 1)[0])
    return match.group(1) if match else None


def owned_audio(service: AgentService, owner: str, reference: str) -> AudioInfo:
    """The owner's recording named by an id or an upload's URL; 404 otherwise."""
    audio_id = audio_id_of(reference)
    if audio_id is None:
        raise ServiceError(
            f"'{reference[:80]}' is not an audio id or the URL of an upload of this server "
            "(…/api/audio/<id>). Upload the recording first.",
            status=404,
        )
    return service.audio_or_404(audio_id, owner=owner)


def trace_url(base_url: str, run_id: str) -> str:
    """Where the run's stored events can be read (as JSON, by its owner)."""
    return f"{base_url.rstrip('/')}/api/runs/{run_id}"


def trace_page_url(base_url: str, conversation_id: str) -> str:
    """The web page opened on the run's conversation, its trace with it (``/c/{id}``, see
    ``frontend/routes.py``): the link for a person; it opens for the owner's browser."""
    return f"{base_url.rstrip('/')}/c/{conversation_id}"


# -- questions ----------------------------------------------------------------------------------
def find_conversation(
    service: AgentService, owner: str, first_question: str, first_audio_id: str | None
) -> str | None:
    """The owner's most recent conversation that began with this question (and audio): where
    a follow-up whose earlier turns start with it belongs. None when there is none (deleted,
    renamed, or begun elsewhere)."""
    # named after its first question (and recording, backend.service.titles), perhaps with " (2)"
    begins = conversation_title(first_question, None, ())
    candidates = [
        c for c in service.data_of(owner).list_conversations() if c.title.startswith(begins)
    ]
    for conversation in candidates[:10]:
        users = [
            m for m in service.data_of(owner).list_messages(conversation.id) if m.role == "user"
        ]
        if not users or users[0].text != first_question:
            continue
        if first_audio_id is None or users[0].audio_id == first_audio_id:
            return conversation.id
    return None


def start_question(
    service: AgentService,
    owner: str,
    *,
    question: str,
    choices: list[str],
    audio_id: str,
    model: ModelChoice,
    conversation_id: str | None = None,
) -> Started:
    """Store the question and start its run (ServiceError before anything runs: limits,
    an unknown recording, a question over its length)."""
    ask = AskRequest(
        question=question,
        choices=choices,
        audio_id=audio_id,
        planner=model.planner,
        tools=model.tools,
        strategy=model.strategy,
    )
    created = conversation_id is None
    if conversation_id is None:
        conversation_id = service.data_of(owner).create_conversation().id
    return _start(service, owner, ask, conversation_id, created)


def _start(
    service: AgentService,
    owner: str,
    ask: AskRequest,
    conversation_id: str,
    created: bool,
    **prepared: Any,
) -> Started:
    try:
        request, _ = service.prepare(conversation_id, ask, owner=owner, **prepared)
        run_ids = service.start_runs(conversation_id, [request], owner=owner)
    except BaseException:
        if created:  # refused: leave no empty conversation behind
            service.data_of(owner).delete_conversation(conversation_id)
        raise
    return Started(run_ids[0], conversation_id)


# -- single tool calls --------------------------------------------------------------------------
def callable_tools(service: AgentService) -> dict[str, Tool]:
    """The tools another program may call one by one: every available tool of the catalogue,
    and ``ask_audio`` (through the first available audio-language model, else the local
    tools, as in the caption-first strategy)."""
    tools = {t.name: t for t in service.registry.tools(None)}
    ask = AskAudioTool(list(tools.values()))
    return {**tools, ASK_AUDIO: ask}


def priced_model(tool: Tool) -> Any:
    """The remote model a call of ``tool`` pays for (for the daily spend check), or None."""
    return getattr(tool, "backend", None) or tool


def start_tool_call(
    service: AgentService,
    owner: str,
    *,
    tool: str,
    arguments: dict[str, Any],
    audio: AudioInfo,
    caller: str,
) -> Started:
    """One tool on one recording, as a run of its own in the owner's
    "Tool calls on <name>" conversation."""
    tools = callable_tools(service)
    target = tools.get(tool)
    if target is None:
        raise ServiceError(f"No tool '{tool}'. Tools: {', '.join(tools)}.", status=404)
    # The clip tool runs another tool on a cut range: it needs them all at hand.
    run_tools = list(tools.values()) if getattr(target, "composite", False) else [target]
    planner = DirectCallPlanner(tool, arguments, caller=caller, priced=priced_model(target))
    ask = AskRequest(
        question=call_text(tool, arguments),
        audio_id=audio.id,
        budget=DIRECT_BUDGET,
        strategy=React.name,  # a direct call is one turn of the react loop
    )
    conversation_id, created = _tool_call_conversation(service, owner, audio)
    return _start(service, owner, ask, conversation_id, created, planner=planner, tools=run_tools)


def _tool_call_conversation(
    service: AgentService, owner: str, audio: AudioInfo
) -> tuple[str, bool]:
    """The owner's conversation of tool calls on this recording (id, whether just made)."""
    title = make_title(TOOL_CALLS_TITLE.format(name=audio.name or audio.id[:12]))
    for conversation in service.data_of(owner).list_conversations():
        if conversation.title == title:
            return conversation.id, False
    return service.data_of(owner).create_conversation(title).id, True


# -- outcomes ---------------------------------------------------------------------------------
@dataclass
class RunOutcome:
    """What a followed run came to, from its events."""

    run_id: str
    conversation_id: str
    events: list[ev.Event] = field(default_factory=list)

    def add(self, event: ev.Event) -> None:
        self.events.append(event)

    def _last(self, kind: type[ev.EventBase]) -> Any:
        return next((e for e in reversed(self.events) if isinstance(e, kind)), None)

    @property
    def answer(self) -> ev.Answer | None:
        return self._last(ev.Answer)

    @property
    def finished(self) -> ev.RunFinished | None:
        return self._last(ev.RunFinished)

    @property
    def failed(self) -> ev.RunFailed | None:
        return self._last(ev.RunFailed)

    @property
    def tool_result(self) -> ev.ToolResultEvent | None:
        return self._last(ev.ToolResultEvent)

    @property
    def status(self) -> str:
        if self.finished is not None:
            return self.finished.status
        failed = self.failed
        if failed is not None:
            return failed.kind if failed.kind in ("cancelled", "interrupted") else "failed"
        return "running"

    def summary(self, base_url: str) -> dict[str, Any]:
        """The run as other programs read it: answer, confidence, guess flag, totals, trace."""
        answer, finished, failed = self.answer, self.finished, self.failed
        return {
            "run_id": self.run_id,
            "conversation_id": self.conversation_id,
            "status": self.status,
            "answer": (answer.choice or answer.text) if answer else None,
            "choice": answer.choice if answer else None,
            "confidence": answer.confidence if answer else None,
            "guess": answer.guess if answer else None,
            "match_rule": answer.match_rule if answer else None,
            "calls": finished.calls if finished else None,
            "input_tokens": finished.input_tokens if finished else 0,
            "cached_input_tokens": finished.cache_read_tokens if finished else 0,
            "output_tokens": finished.output_tokens if finished else 0,
            "cost_usd": finished.cost if finished else 0.0,
            "wall_s": finished.wall_s if finished else None,
            "degraded_tools": finished.degraded_tools if finished else [],
            "error": failed.message if failed else None,
            "trace_url": trace_url(base_url, self.run_id),
            "trace_page_url": (
                trace_page_url(base_url, self.conversation_id) if self.conversation_id else None
            ),
        }


async def follow(service: AgentService, started: Started) -> RunOutcome:
    """Follow a started run to its end (it belongs to the server: leaving early only stops
    following)."""
    outcome = RunOutcome(started.run_id, started.conversation_id)
    async for event in service.follow([started.run_id]):
        outcome.add(event)
    return outcome
