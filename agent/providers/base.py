"""The provider protocol (a base class with defaults) and the providers registry."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from agent.plugins import PROVIDERS_GROUP, registry
from agent.remote import ModelConfig, RemoteError

if TYPE_CHECKING:
    from agent.planners.base import Planner
    from agent.tools.base import Tool

DOCTOR_QUESTION = "What do you hear?"


class UnknownProvider(LookupError):
    """A catalogue entry names a provider no module registered."""


class Provider:
    """What the app needs of one API. Subclasses override what their API supports; the
    defaults describe a provider with neither planners nor tools."""

    name: str = ""
    # (import name, pip name) of the packages the provider needs
    requires: tuple[tuple[str, str], ...] = ()
    # the tool interfaces (catalogue ``interface = ...``) it serves; the first is the default
    interfaces: tuple[str, ...] = ()
    price_id: str | None = None  # its provider id in genai-prices, if it prices by model id
    free: bool = False  # costs nothing (the doctor's price column)
    lists_models: bool = True  # the doctor asks for its model list first

    def __init__(self, name: str | None = None) -> None:
        if name:
            self.name = name

    # -- the catalogue -----------------------------------------------------------------------
    def availability(self, settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
        """Why an entry of this provider cannot be used here (None: it can), beyond its key
        and URL variables, which the registry checks."""
        missing = [pip for module, pip in self.requires if not _importable(module)]
        return f"install {', '.join(missing)}" if missing else None

    def planner(self, settings: Mapping[str, Any], config: ModelConfig) -> Planner:
        raise UnknownProvider(f"the provider '{self.name}' offers no planner")

    def tool(self, settings: Mapping[str, Any], config: ModelConfig) -> Tool:
        raise UnknownProvider(f"the provider '{self.name}' offers no tool")

    def interface_of(self, settings: Mapping[str, Any]) -> str:
        return str(settings.get("interface") or (self.interfaces[0] if self.interfaces else ""))

    # -- errors, the doctor, warm-up ---------------------------------------------------------
    def classify_error(self, exc: BaseException, config: ModelConfig) -> RemoteError:
        """The SDK's exception as a RemoteError with a kind (auth, connection, ...)."""
        return RemoteError(str(exc) or type(exc).__name__, "remote_error")

    async def listed_models(self, config: ModelConfig) -> dict[str, str | None]:
        """Model id -> shutdown date (or None) as the provider lists them for this key."""
        return {}

    def doctor_call(self, settings: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """The doctor's one call of a tool entry: its arguments, and what success reads as."""
        if self.interface_of(settings) == "transcription":
            return {}, "1 s clip ok"
        return {"question": DOCTOR_QUESTION}, "1 s clip ok"

    async def warm_up(self) -> None:
        """Make the SDK's slow first call now, answered in memory (``agent.sdk_warm_up``)."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package (google.genai without google)
        return False


P = TypeVar("P", bound=Provider)


def register_provider(provider: P) -> P:
    """Register a provider instance under its ``name`` (one call in its module)."""
    registry(PROVIDERS_GROUP).add(provider.name, provider)
    return provider


def providers() -> dict[str, Provider]:
    """Every registered provider by name (built-ins first, then plugins)."""
    return registry(PROVIDERS_GROUP).items()


def provider_names() -> list[str]:
    return list(providers())


def get_provider(name: str) -> Provider:
    found = providers().get(name)
    if found is None:
        raise UnknownProvider(f"unknown provider '{name}'")
    return found
