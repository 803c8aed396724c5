"""Builds planners and tools from the catalogue file and says which are available and why not."""

from __future__ import annotations

import importlib.util
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent.answer import Similarity
from agent.planners.base import Planner
from agent.providers import UnknownProvider, get_provider
from agent.remote import ModelConfig
from agent.retirement import notice
from agent.strategies import strategy_infos
from agent.tools.base import Tool, installed_tools, local_tools

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "config" / "models.toml"
LOCAL = "local"  # the provider name of the bundled offline planner and the local tools
CUSTOM = "custom"  # the provider name of a ready-made planner or tool added by ``register``


def local_tool_names() -> tuple[str, ...]:
    """The registered local tools (the players of `python -m bench analyse attribution`)."""
    return tuple(local_tools())


def __getattr__(name: str) -> Any:
    """``LOCAL_TOOLS`` as before, read from the tools registry when asked for."""
    if name == "LOCAL_TOOLS":
        return local_tool_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnavailableError(LookupError):
    """A planner or tool that cannot be used here, with the reason."""


@dataclass
class CatalogueEntry:
    name: str
    kind: Literal["planner", "tool"]
    provider: str
    label: str
    model: str | None = None
    description: str = ""
    available: bool = False
    reason: str | None = None  # why it is not available
    local: bool = False
    settings: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """What the API and UI show: never a key, only the name of its variable."""
        return {
            "name": self.name,
            "kind": self.kind,
            "provider": self.provider,
            "label": self.label,
            "model": self.model,
            "description": self.description,
            "available": self.available,
            "reason": self.reason,
            "local": self.local,
            "checked": self.settings.get("checked"),
            "source": self.settings.get("source"),
            # the provider's announced end of the model, and what it names to move to
            "shutdown": str(self.settings["shutdown"]) if self.settings.get("shutdown") else None,
            "successor": self.settings.get("successor"),
            "retirement": notice(self.settings),
            # offered, but not among the tools a new question starts with (web search)
            "default_selected": self.default_selected,
            # its lane on the timeline ("#rrggbb"); None: the next free colour of the palette
            "colour": self.settings.get("colour"),
        }

    @property
    def default_selected(self) -> bool:
        return bool(self.settings.get("default_selected", True))


def _missing_packages(names: tuple[str, ...]) -> list[str]:
    return [n for n in names if importlib.util.find_spec(n) is None]


def _tool_settings(factory: Any) -> dict[str, Any]:
    """A registered tool's own catalogue settings (what an entry in the file would say)."""
    return {"default_selected": bool(getattr(factory, "default_selected", True))}


def _switched_off(entry: CatalogueEntry) -> tuple[bool, str | None]:
    if entry.settings.get("enabled") is False:
        return False, "switched off in the catalogue file (enabled = false)"
    return True, None


class Registry:
    def __init__(
        self,
        config_path: Path | None = None,
        *,
        env: dict[str, str] | None = None,
        similarity: Similarity | None = None,
    ) -> None:
        self.config_path = Path(config_path or os.environ.get("AUDIO_AGENT_CONFIG", DEFAULT_CONFIG))
        self.env = dict(os.environ if env is None else env)
        self._similarity = similarity
        self._tools: dict[str, Tool] = {}
        self._planners: dict[str, Planner] = {}
        raw = tomllib.loads(self.config_path.read_text())
        self._entries = self._load(raw)
        self._presets = self._load_presets(raw)

    # -- catalogue ---------------------------------------------------------------------------
    def _load(self, raw: dict[str, Any]) -> dict[tuple[str, str], CatalogueEntry]:
        factories = local_tools()
        entries: dict[tuple[str, str], CatalogueEntry] = {}
        listed = {item["name"] for item in raw.get("tool", [])}
        # An installed plugin's local tool needs no catalogue entry: it is offered as is.
        # This project's own are offered through their entries (the file decides which a
        # host offers, and in what order).
        unlisted = [
            {"name": name, "provider": LOCAL, **_tool_settings(factories[name])}
            for name in installed_tools()
            if name not in listed
        ]
        for kind in ("planner", "tool"):
            for item in raw.get(kind, []) + (unlisted if kind == "tool" else []):
                entry = CatalogueEntry(
                    name=item["name"],
                    kind=kind,  # type: ignore[arg-type]
                    provider=item.get("provider", LOCAL),
                    label=item.get("label", ""),
                    model=item.get("model"),
                    description=item.get("description", ""),
                    local=item.get("provider", LOCAL) == LOCAL,
                    settings=item,
                )
                if entry.local and kind == "tool":
                    factory = factories.get(entry.name)
                    if factory is None:
                        entry.reason = f"no local tool called '{entry.name}'"
                    elif missing := _missing_packages(getattr(factory, "requires", ())):
                        entry.reason = f"install {', '.join(missing)} (see requirements*.txt)"
                    else:
                        tool = factory()
                        self._tools[entry.name] = tool
                        entry.label = entry.label or tool.label
                        entry.description = entry.description or tool.description
                        entry.model = entry.model or tool.model
                        entry.settings.setdefault("colour", getattr(tool, "colour", None))
                entry.available, entry.reason = self._availability(entry)
                if entry.available and kind == "tool" and not entry.local:
                    tool = self._remote_tool(entry)
                    self._tools[entry.name] = tool
                    entry.description = entry.description or tool.description
                entries[(kind, entry.name)] = entry
        return entries

    def _load_presets(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        presets = []
        for item in raw.get("preset", []):
            parts = [("planner", item["planner"])] + [("tool", t) for t in item.get("tools", [])]
            missing, retiring = [], []
            for kind, name in parts:
                entry = self._entries.get((kind, name))
                if entry is None or not entry.available:
                    why = entry.reason if entry else "not in the catalogue"
                    missing.append(f"{name}: {why}")
                if entry is not None and (ends := notice(entry.settings)):
                    retiring.append(f"{name}: {ends}")
            presets.append(
                {
                    "name": item["name"],
                    "label": item.get("label", item["name"]),
                    "planner": item["planner"],
                    "tools": list(item.get("tools", [])),
                    "available": not missing,
                    "reason": "; ".join(missing) or None,
                    "retiring": retiring,  # members whose provider announced their end
                }
            )
        return presets

    def preset(self, name: str) -> dict[str, Any]:
        found = next((p for p in self._presets if p["name"] == name), None)
        if found is None:
            known = ", ".join(p["name"] for p in self._presets)
            raise UnavailableError(f"Unknown preset '{name}'. Known: {known}.")
        if not found["available"]:
            raise UnavailableError(f"The preset '{name}' is not available: {found['reason']}.")
        return found

    def _availability(self, entry: CatalogueEntry) -> tuple[bool, str | None]:
        if entry.reason:
            return False, entry.reason
        key_env = entry.settings.get("key_env")
        if key_env and not self.env.get(key_env) and not entry.settings.get("key_optional"):
            return False, f"set {key_env} to use it"
        base_env = entry.settings.get("base_url_env")
        if base_env and not self.env.get(base_env):
            return False, f"set {base_env} to the URL of your server"
        if entry.provider == LOCAL:
            return _switched_off(entry)
        try:
            provider = get_provider(entry.provider)
        except UnknownProvider as exc:
            return False, str(exc)
        if entry.settings.get("enabled") is False:
            return _switched_off(entry)
        if entry.kind == "tool":
            interface = provider.interface_of(entry.settings)
            if interface not in provider.interfaces:
                return False, f"unknown interface '{interface}'"
        reason = provider.availability(entry.settings, self.env)
        return (False, reason) if reason else (True, None)

    def _remote_tool(self, entry: CatalogueEntry) -> Tool:
        return self.remote_tool_for(
            entry.settings, ModelConfig.from_entry(entry.settings, self.env)
        )

    def remote_tool_for(self, settings: dict[str, Any], config: ModelConfig) -> Tool:
        """The adapter for a remote tool entry, built from ``config`` by its provider (the
        doctor passes one with a short timeout and no retries)."""
        return get_provider(config.provider).tool(settings, config)

    def register(self, item: Planner | Tool, *, kind: Literal["planner", "tool"]) -> None:
        """Add a ready-made planner or tool (tests, demos, plug-ins) to the catalogue."""
        entry = CatalogueEntry(
            name=item.name,
            kind=kind,
            provider=CUSTOM,
            label=item.label,
            model=item.model,
            description=getattr(item, "description", ""),
            available=True,
            local=True,
        )
        self._entries[(kind, item.name)] = entry
        if kind == "tool":
            self._tools[item.name] = item  # type: ignore[assignment]
        else:
            self._planners[item.name] = item  # type: ignore[assignment]

    def catalogue(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "planners": [e.public() for (k, _), e in self._entries.items() if k == "planner"],
            "tools": [e.public() for (k, _), e in self._entries.items() if k == "tool"],
            "presets": [dict(p) for p in self._presets],
            "strategies": [
                {
                    "name": name,
                    "label": info.label,
                    "available": True,
                    "default": info.default,
                    "compared": info.compared,
                }
                for name, info in strategy_infos().items()
            ],
        }

    def entries(self, kind: Literal["planner", "tool"]) -> list[CatalogueEntry]:
        return [e for (k, _), e in self._entries.items() if k == kind]

    def entry_label(self, kind: Literal["planner", "tool"], name: str) -> str:
        entry = self._entries.get((kind, name))
        return (entry.label or name) if entry else name

    def default_planner(self) -> str:
        available = [e.name for e in self.entries("planner") if e.available]
        if not available:
            raise UnavailableError("No planner is available; check the catalogue file.")
        return available[0]

    def default_tools(self) -> list[str]:
        """The available tools a question uses when none are named (not web search: it
        sends the planner's query out, so it is used only when picked)."""
        return [e.name for e in self.entries("tool") if e.available and e.default_selected]

    # -- construction ------------------------------------------------------------------------
    def _entry(self, kind: Literal["planner", "tool"], name: str) -> CatalogueEntry:
        entry = self._entries.get((kind, name))
        if entry is None:
            known = ", ".join(e.name for e in self.entries(kind))
            raise UnavailableError(f"Unknown {kind} '{name}'. Known: {known}.")
        if not entry.available:
            raise UnavailableError(f"The {kind} '{name}' is not available: {entry.reason}.")
        return entry

    def planner(self, name: str) -> Planner:
        entry = self._entry("planner", name)
        if name in self._planners:
            return self._planners[name]
        if entry.provider == LOCAL:
            from agent.planners.offline import OfflinePlanner

            planner: Planner = OfflinePlanner(similarity=self.similarity)
        else:
            planner = self.remote_planner_for(
                entry.settings, ModelConfig.from_entry(entry.settings, self.env)
            )
        self._planners[name] = planner
        return planner

    def build_planners(self) -> list[str]:
        """Build every available remote planner and its SDK client now (a client loads the
        system's certificates: tens of milliseconds a first question would otherwise wait
        for); no request is sent. Returns the names of those that could not be built (their
        first turn reports why, as it would have)."""
        failed = []
        for entry in self.entries("planner"):
            if not entry.available or entry.local:
                continue
            try:
                getattr(self.planner(entry.name), "client", None)  # Gemini's is made on use
            except Exception:  # noqa: BLE001 - e.g. a key the SDK refuses: said at the turn
                failed.append(entry.name)
        return failed

    def remote_planner_for(self, settings: dict[str, Any], config: ModelConfig) -> Planner:
        """The adapter for a remote planner entry, built from ``config`` by its provider
        (the doctor passes one with a short timeout and no retries)."""
        return get_provider(config.provider).planner(settings, config)

    def tools(self, names: list[str] | None = None) -> list[Tool]:
        chosen = self.default_tools() if names is None else names
        return [self.tool(n) for n in chosen]

    def tool(self, name: str) -> Tool:
        self._entry("tool", name)
        return self._tools[name]

    @property
    def similarity(self) -> Similarity | None:
        """Sentence similarity from the bundled MiniLM (loaded on first use)."""
        if self._similarity is None:
            try:
                from agent.local_models import embedding
            except ImportError:  # answers then fall back to word overlap
                return None
            self._similarity = embedding.similarity
        return self._similarity


IN_WORKERS = ("music", "signal")  # their numba code is compiled again in worker processes


def warm_up(log: Callable[[str], None] = print) -> dict[str, float]:
    """Load every local model once (numba's first call is slow); returns seconds per model."""
    import importlib
    import time

    from agent.warm_state import FAILED, READY, STATE, WARMING

    STATE.begin()
    timings: dict[str, float] = {}
    for module in ("whisper_asr", "vad", "yamnet", "embedding", "music", "signal"):
        begun = time.monotonic()
        STATE.set(module, WARMING)
        try:
            importlib.import_module(f"agent.local_models.{module}").warm_up()
        except Exception as exc:  # a missing model disables its tool, the app still starts
            log(f"warm-up of {module} failed: {exc}")
            STATE.set(module, FAILED, str(exc)[:200])
            continue
        if module not in IN_WORKERS:
            STATE.set(module, READY)
        timings[module] = round(time.monotonic() - begun, 2)
    begun = time.monotonic()
    try:  # GIL-bound models run in worker processes: start and warm them too
        from agent.local_models import executor, signal

        executor.get_executor().warm_processes([signal.warm_up])
        if executor.get_executor().processes:
            timings["worker processes"] = round(time.monotonic() - begun, 2)
    except Exception as exc:  # noqa: BLE001 - they start at the first call instead
        log(f"warm-up of the model worker processes failed: {exc}")
    for module in IN_WORKERS:  # compiled in the workers (or in threads, above)
        if module in timings:
            STATE.set(module, READY)
    STATE.finish()
    return timings
