"""``python -m agent doctor``: does each configured remote planner and tool really work?

For every catalogue entry with a key or a base URL it lists the provider's models (OpenAI's
``GET /v1/models`` with its ``shutdown_date`` field, Gemini's model list) and then does what
a run does, through the same adapter code: for a planner a two-turn exchange (it calls a
tool, the tool's result goes back with whatever reasoning or signature the provider
requires, it answers); for an audio tool one call on a one-second clip; for a web search
one query. Each entry ends as one row: reachable, model listed, the exchange (or the
provider's own error in one sentence), the price, the shutdown date where the provider
publishes one. Checks run concurrently with a short timeout and no retries, so with no
network every entry says "cannot reach" within seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.audio import AudioRef
from agent.planners.base import (
    ChatMessage,
    Planner,
    PlannerError,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.plugins import PluginError, load_errors
from agent.providers import get_provider, providers
from agent.registry import CUSTOM, Registry
from agent.remote import ModelConfig, RemoteError
from agent.retirement import notice
from agent.tools.base import ToolContext

CHECK_TIMEOUT_S = 8.0
CHECKS_TTL_S = 300.0  # the server repeats its checks at most this often (SharedChecks)
# The planner's two-turn exchange: the same messages and adapter code a run uses.
CHECK_TOOL = ToolSpec(
    "lookup_code",
    "Returns the code of this connection check. Takes no arguments.",
    {"type": "object", "properties": {}},
)
CHECK_SYSTEM = "This is a connection check: use the tool exactly as the user asks."
CHECK_PROMPT = (
    "Call the tool lookup_code once. When its result comes back, reply with the code it "
    "gave you and nothing else."
)
CHECK_CODE = "4711"
NOT_TRIED = "not tried"


@dataclass
class Check:
    name: str
    kind: str  # planner | tool | plugin (one that could not be loaded)
    model: str
    status: str  # works | error | shuts_down | not_offered | cannot_reach | skipped
    detail: str = ""
    shutdown_date: str | None = None
    offered: bool | None = None  # the model is in the provider's list (None: no list)
    seconds: float = 0.0
    cost: float = 0.0
    reachable: bool | None = None  # None: not checked (skipped)
    exchange: str = NOT_TRIED  # "tool round trip ok", "1 s clip ok", "search ok", or why not
    price: str = ""  # what the entry costs now, or "unknown"

    def row(self) -> str:
        state = {
            "works": "works",
            "error": "error",
            "shuts_down": f"works, shuts down {self.shutdown_date}",
            "not_offered": "not offered to this key",
            "cannot_reach": "cannot reach",
            "skipped": "skipped",
        }[self.status]
        listed = {True: "yes", False: "no", None: "-"}[self.offered]
        return (
            f"{self.name:<18} {self.kind:<7} {self.model[:26]:<26} {state:<28} {listed:<6} "
            f"{self.exchange[:22]:<22} {self.price[:24]:<24} {self.detail}"
        )


def _short(settings: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """The entry with a short timeout and no retries: a check, not a workload."""
    return {**settings, "timeout_s": timeout_s, "max_retries": 0}


def _one_second() -> np.ndarray:
    t = np.arange(16_000) / 16_000
    return (0.1 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


@dataclass
class _Turn:
    text: str = ""
    calls: list[ToolCallRequest] | None = None
    cost: float = 0.0
    raw: Any = None


async def _turn(planner: Planner, messages: list[ChatMessage]) -> _Turn:
    turn = _Turn(calls=[])
    async for chunk in planner.stream_turn(messages, [CHECK_TOOL]):
        if isinstance(chunk, TextDelta) and chunk.kind == "text":
            turn.text += chunk.text
        elif isinstance(chunk, ToolCallRequest):
            turn.calls.append(chunk)  # type: ignore[union-attr]
        elif isinstance(chunk, TurnEnd):
            turn.cost, turn.raw = chunk.cost, chunk.raw
    return turn


async def round_trip(planner: Planner) -> tuple[float, str]:
    """A tool call, its result sent back, an answer: what every run needs of a planner.
    Returns the cost and what happened; a provider's refusal raises its error."""
    messages = [ChatMessage("system", CHECK_SYSTEM), ChatMessage("user", CHECK_PROMPT)]
    first = await _turn(planner, messages)
    if not first.calls:
        raise RemoteError(
            "the model answered without calling the tool, so no tool result went back "
            "(the round trip every run needs was not made)",
            "no_tool_call",
        )
    messages.append(ChatMessage("assistant", first.text, tool_calls=first.calls, raw=first.raw))
    messages += [
        ChatMessage("tool", f"The check code is {CHECK_CODE}.", tool_call_id=c.id, name=c.name)
        for c in first.calls
    ]
    second = await _turn(planner, messages)
    if not second.text.strip() and not second.calls:
        raise RemoteError("the model sent nothing after the tool result", "empty")
    said = "" if CHECK_CODE in second.text else " (the answer did not repeat the code)"
    return first.cost + second.cost, "tool round trip ok" + said


async def _exchange(
    registry: Registry, kind: str, settings: Mapping[str, Any], config: ModelConfig
) -> tuple[float, str]:
    """What a run does with the entry: the planner round trip, one second of audio for an
    audio tool, one query for a web search. Returns its cost and what happened."""
    if kind == "planner":
        return await round_trip(registry.remote_planner_for(dict(settings), config))
    tool = registry.remote_tool_for(dict(settings), config)
    nowhere = Path("one-second.wav")  # remote tools read the samples, never the file
    audio = AudioRef("doctor", nowhere, nowhere, 1.0, "wav", 16_000, 1, "one second")
    ctx = ToolContext(audio=audio, samples=_one_second())
    arguments, done = get_provider(config.provider).doctor_call(settings)
    result = await tool(ctx, arguments)
    return result.cost, done


def price_text(settings: Mapping[str, Any], config: ModelConfig) -> str:
    """What the entry costs now, in one short phrase."""
    prices = config.prices
    if not prices.known:  # self-hosted servers and DuckDuckGo cost nothing here
        provider = providers().get(str(settings.get("provider")))
        free = settings.get("base_url_env") or (provider is not None and provider.free)
        return "free here" if free else "unknown"
    if prices.per_audio_minute and not prices.input_per_mtok:
        return f"${prices.per_audio_minute:g}/audio min"
    return f"${prices.input_per_mtok:g}/${prices.output_per_mtok:g} per MTok"


def _status_of(exc: BaseException) -> tuple[str, str]:
    kind = getattr(exc, "kind", "")
    message = str(exc).removeprefix("The planner failed: ")
    if kind in ("connection", "timeout"):
        return "cannot_reach", message
    if kind == "not_found":
        return "not_offered", message
    return "error", message


async def check_entry(
    registry: Registry, kind: str, settings: Mapping[str, Any], timeout_s: float
) -> Check:
    name, model = settings["name"], str(settings.get("model", "") or settings.get("provider"))
    config = ModelConfig.from_entry(_short(settings, timeout_s), registry.env)
    check = Check(name=name, kind=kind, model=model, status="works")
    check.price = price_text(settings, config)
    begun = time.monotonic()
    listed = None
    if get_provider(config.provider).lists_models:  # a search service lists none
        try:
            listed = await asyncio.wait_for(
                get_provider(config.provider).listed_models(config), timeout_s
            )
            check.reachable = True
        except Exception as exc:  # noqa: BLE001 - every failure becomes the entry's row
            # some servers list no models; the exchange below still tells
            status, detail = _classified(exc, config)
            check.reachable = status != "cannot_reach"
            if status == "cannot_reach" or _is_auth(exc, config):
                check.status, check.detail = status, detail
                check.seconds = round(time.monotonic() - begun, 2)
                return check
    if listed:
        check.offered = model in listed
        check.shutdown_date = listed.get(model)
    check.shutdown_date = check.shutdown_date or settings.get("shutdown") or None
    try:
        check.cost, check.exchange = await asyncio.wait_for(
            _exchange(registry, kind, settings, config), timeout_s * 3
        )
        check.reachable = True
    except TimeoutError:
        check.status, check.detail = "cannot_reach", f"no answer within {timeout_s * 3:.0f} s"
    except Exception as exc:  # noqa: BLE001 - every failure becomes the entry's row
        check.status, check.detail = _status_of(exc)
        check.reachable = check.status != "cannot_reach"
        check.exchange = "failed" if check.reachable else NOT_TRIED
    if check.status == "works" and check.offered is False:
        check.status = "not_offered"
        check.detail = f"the provider's model list for this key has no '{model}'"
    if check.status == "error" and check.offered is False:
        check.status = "not_offered"
    ends = notice(settings, when=str(check.shutdown_date or ""))
    if check.status == "works" and ends:
        past = ends.startswith("shut down")
        check.status = "error" if past else "shuts_down"
        check.detail = f"{ends} (config/models.toml)"
    if check.status in ("works", "shuts_down"):  # what was checked, for the UI's list too
        done = [check.exchange, f"price {check.price}" if check.price else ""]
        check.detail = "; ".join(part for part in [*done, check.detail] if part)
    check.seconds = round(time.monotonic() - begun, 2)
    return check


def _is_auth(exc: BaseException, config: ModelConfig) -> bool:
    return _classify(exc, config).kind == "auth"


def _classify(exc: BaseException, config: ModelConfig) -> RemoteError:
    if isinstance(exc, (RemoteError, PlannerError)):
        return RemoteError(str(exc), getattr(exc, "kind", "remote_error"))
    if isinstance(exc, TimeoutError):
        return RemoteError("no answer in time", "timeout")
    return get_provider(config.provider).classify_error(exc, config)


def _classified(exc: BaseException, config: ModelConfig) -> tuple[str, str]:
    return _status_of(_classify(exc, config))


async def run_checks(
    registry: Registry | None = None, *, timeout_s: float = CHECK_TIMEOUT_S
) -> list[Check]:
    """Check every remote entry that has its key or URL; the others are listed as skipped."""
    registry = registry or Registry()
    jobs = []
    skipped: list[Check] = []
    for kind in ("planner", "tool"):
        for entry in registry.entries(kind):  # type: ignore[arg-type]
            if entry.local or entry.provider == CUSTOM:
                continue
            if not entry.available:
                why = "; ".join(filter(None, [entry.reason, notice(entry.settings)]))
                skipped.append(Check(entry.name, kind, entry.model or "", "skipped", why))
                continue
            jobs.append(check_entry(registry, kind, entry.settings, timeout_s))
    broken = [plugin_check(e) for e in load_errors()]
    return list(await asyncio.gather(*jobs)) + skipped + broken


def plugin_check(error: PluginError) -> Check:
    """A plugin that could not be loaded, as a row: the app runs without it."""
    return Check(error.source, "plugin", error.group, "error", error.message, exchange="")


def table(checks: list[Check]) -> str:
    head = (
        f"{'entry':<18} {'kind':<7} {'model':<26} {'state':<28} {'listed':<6} "
        f"{'exchange':<22} {'price':<24} detail"
    )
    return "\n".join([head, "-" * len(head), *(c.row() for c in checks)])


def main(as_json: bool = False, config: Any = None, timeout_s: float = CHECK_TIMEOUT_S) -> int:
    checks = asyncio.run(run_checks(Registry(config), timeout_s=timeout_s))
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        print(table(checks))
    bad = [c for c in checks if c.status not in ("works", "shuts_down", "skipped")]
    return 1 if bad else 0


class SharedChecks:
    """The checks as every visitor of one server sees them: run at most once per ``ttl_s``
    and never twice at the same time. Each check is a small real (paid) call with the
    server's keys, so on a public demo a button or ``?check=1`` must not repeat them per
    click."""

    def __init__(self, ttl_s: float = CHECKS_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._lock = asyncio.Lock()
        self._at = float("-inf")
        self._checks: list[Check] = []

    async def get(self, registry: Registry, *, timeout_s: float = CHECK_TIMEOUT_S) -> list[Check]:
        async with self._lock:
            if time.monotonic() - self._at >= self.ttl_s:
                self._checks = await run_checks(registry, timeout_s=timeout_s)
                self._at = time.monotonic()
            return list(self._checks)


async def checked_catalogue(
    registry: Registry,
    *,
    timeout_s: float = CHECK_TIMEOUT_S,
    shared: SharedChecks | None = None,
) -> dict:
    """The catalogue with each remote entry's check (``GET /api/catalogue?check=1``)."""
    found = (
        await shared.get(registry, timeout_s=timeout_s)
        if shared is not None
        else await run_checks(registry, timeout_s=timeout_s)
    )
    checks = {(c.kind, c.name): asdict(c) for c in found}
    catalogue = registry.catalogue()
    for key, kind in (("planners", "planner"), ("tools", "tool")):
        for entry in catalogue[key]:
            entry["check"] = checks.get((kind, entry["name"]))
    catalogue["checks"] = list(checks.values())
    return catalogue
