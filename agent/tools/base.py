"""The Tool protocol: what every audio model or signal tool looks like to the loop."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from agent.events import AudioRef, ToolResult
from agent.plugins import TOOLS_GROUP, registry


class ToolError(Exception):
    """A tool failure with a message the planner (and a person) can act on."""


@dataclass
class ToolContext:
    """What the loop hands a tool for one call: the resolved audio and its samples."""

    audio: AudioRef
    samples: np.ndarray  # 16 kHz mono float32
    sample_rate: int = 16_000
    # Lets a tool call another tool (the clip tool runs one on a cut range).
    tools: dict[str, Tool] = field(default_factory=dict)
    # Runs another tool on this same whole recording through the run's cache (set by the
    # loop; None on a cut range, where cached whole-recording results would be wrong).
    runner: Callable[[Tool, dict[str, Any]], Awaitable[ToolResult]] | None = None

    async def run_tool(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        if self.runner is not None:
            return await self.runner(tool, arguments)
        return await tool(self, arguments)


@runtime_checkable
class Tool(Protocol):
    name: str
    label: str  # short human name for the UI
    description: str  # what the planner reads
    parameters: dict[str, Any]  # JSON schema of the arguments (audio_id is added by the loop)
    model: str | None
    local: bool  # runs on this machine, no key needed

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult: ...


ToolFactory = Callable[[], Tool]
TOOL_T = TypeVar("TOOL_T", bound=ToolFactory)


def local_tool(factory: TOOL_T) -> TOOL_T:
    """Register a local tool (a class, or a function returning one, with ``name``) in the
    tools registry: ``@local_tool`` on its class. A plugin's tool is offered as it is (a
    ``[[tool]]`` entry in the catalogue file may still set its label or ``enabled``); this
    project's own are offered through their entries in config/models.toml. Its
    ``requires`` names the packages it needs, checked before it is built. Optional
    attributes: ``label``, ``colour`` (its timeline lane, "#rrggbb"), ``default_selected``.
    """
    registry(TOOLS_GROUP).add(str(factory.name), factory)  # type: ignore[attr-defined]
    return factory


def local_tools() -> dict[str, ToolFactory]:
    """Every registered local tool: name -> factory (built-ins first, then plugins)."""
    return registry(TOOLS_GROUP).items()


def installed_tools() -> list[str]:
    """The local tools that installed packages (plugins) registered: offered without an entry
    in the catalogue file, which lists this project's own."""
    return registry(TOOLS_GROUP).installed()


def cache_key(audio_sha256: str, tool: str, arguments: dict[str, Any], model: str | None) -> str:
    """Identical calls (same audio, tool, arguments, model) share this key."""
    blob = json.dumps(
        {"audio": audio_sha256, "tool": tool, "args": arguments, "model": model},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class ToolCache(Protocol):
    """Results of identical calls. Optional: ``get_many(keys)`` (a turn's keys at once),
    ``peek(key)`` (a result in memory, or None, without blocking),
    ``blocking`` (False: ``get`` may run on the event loop) and ``put_blocks`` (False:
    ``put`` only hands the result over and may run on the event loop)."""

    def get(self, key: str) -> ToolResult | None: ...

    def put(self, key: str, tool: str, audio_id: str, result: ToolResult) -> None: ...


class MemoryToolCache:
    """In-process cache; the storage package provides the SQL-backed one."""

    blocking = False  # get/put never block: the loop calls them directly, not in a thread

    def __init__(self) -> None:
        self._items: dict[str, ToolResult] = {}

    def get(self, key: str) -> ToolResult | None:
        return self._items.get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, ToolResult]:
        return {k: self._items[k] for k in keys if k in self._items}

    def put(self, key: str, tool: str, audio_id: str, result: ToolResult) -> None:
        self._items[key] = result
