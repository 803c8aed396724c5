"""Plugin registries: one per kind of extension (local tools, strategies, planner providers).

A module that defines a tool, a strategy or a provider registers it where it is defined, with
the kind's decorator or registration call (``agent.tools.base.local_tool``,
``agent.strategies.base.strategy``, ``agent.providers.base.register_provider``). The built-in
ones are the modules of ``agent.tools``, ``agent.strategies`` and ``agent.providers`` that make
that call (``builtin_modules``: no list to keep); an installed package adds more through a
Python entry point in the kind's group, whose object is a module to import (or a callable to
call) that registers its things the same way:

    [project.entry-points."audio_agent.tools"]
    my_tool = "my_package.my_tool"

Everything that lists tools, strategies or providers reads these registries, so a plugin
needs no edit to this project. Each kind is loaded once, on first use. A plugin that fails
to load (an import error, a name taken twice) is logged and kept in ``load_errors()``
(the doctor shows them); the app goes on without it.

This module imports nothing of the project, so every layer can read the registries.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import logging
import pkgutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

TOOLS_GROUP = "audio_agent.tools"
STRATEGIES_GROUP = "audio_agent.strategies"
PROVIDERS_GROUP = "audio_agent.providers"

# Where this project's own things of each kind live, and the name a module calls to register
# one. A built-in is any module of the package that calls that name at its top level (as a
# decorator or a call): adding a tool, a strategy or a provider is adding its module, with no
# list to edit (``builtin_modules``).
BUILTIN_PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    TOOLS_GROUP: ("agent.tools", ("local_tool",)),
    STRATEGIES_GROUP: ("agent.strategies", ("strategy",)),
    # a provider, or a provider's billing rule (agent.providers.deepseek)
    PROVIDERS_GROUP: ("agent.providers", ("register_provider", "register_billing_clock")),
}


def _registers(source: str, markers: tuple[str, ...]) -> bool:
    """Whether a module's top-level code calls one of ``markers`` (``@name``, ``@name(...)``
    or ``name(...)``); its docstrings and functions do not count."""
    for node in ast.parse(source).body:
        decorators = getattr(node, "decorator_list", [])
        calls = [d.func if isinstance(d, ast.Call) else d for d in decorators]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            calls.append(node.value.func)
        if any(isinstance(c, ast.Name) and c.id in markers for c in calls):
            return True
    return False


@functools.cache
def builtin_modules(group: str) -> tuple[str, ...]:
    """This project's modules that register things of ``group``, by module name. Read from
    the sources (nothing is imported), so listing them costs a few milliseconds."""
    package, markers = BUILTIN_PACKAGES.get(group, ("", ()))
    if not package:
        return ()
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec else []
    found = []
    for info in sorted(pkgutil.iter_modules(folders), key=lambda m: m.name):
        path = Path(getattr(info.module_finder, "path", folders[0])) / f"{info.name}.py"
        if not info.ispkg and path.is_file() and _registers(path.read_text(), markers):
            found.append(f"{package}.{info.name}")
    return tuple(found)


T = TypeVar("T")
PROJECT = "this project"  # the origin of a thing registered outside a load (an import)


@dataclass(frozen=True)
class PluginError:
    """A plugin that could not be loaded or registered, and why."""

    group: str
    source: str  # the entry point ("name = module") or the built-in module
    message: str

    def __str__(self) -> str:
        return f"{self.group}: {self.source}: {self.message}"


class PluginRegistry(Generic[T]):
    """Named things of one kind, in registration order, filled from the built-in modules and
    the kind's entry-point group the first time it is read."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._errors: list[PluginError] = []
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()
        self._current = PROJECT  # who is registering now (for messages)

    # -- registration ----------------------------------------------------------------------
    def add(self, name: str, item: T) -> T:
        """Register ``item`` under ``name``. A name taken by another source is an error (the
        first one stays); the same source registering again (a module reloaded) replaces."""
        with self._lock:
            origin = self._origin.get(name)
            if origin is not None and origin != self._current:
                raise ValueError(f"'{name}' is already registered by {origin}")
            self._items[name] = item
            self._origin[name] = self._current
            return item

    def remove(self, name: str) -> None:
        """Forget ``name`` (tests that register a thing for one test)."""
        with self._lock:
            self._items.pop(name, None)
            self._origin.pop(name, None)

    # -- reading ---------------------------------------------------------------------------
    def load(self) -> None:
        """Import the built-in modules, then every installed entry point of the group; once."""
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                for module in builtin_modules(self.group):
                    self._run(module, lambda m=module: importlib.import_module(m))
                for point in sorted(entry_points(group=self.group), key=lambda p: p.name):
                    self._run(f"{point.name} = {point.value}", lambda p=point: _call(p.load()))
            finally:
                self._loading = False
                self._loaded = True

    def _run(self, source: str, load: Callable[[], Any]) -> None:
        self._current = source
        try:
            load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the app
            error = PluginError(self.group, source, f"{type(exc).__name__}: {exc}")
            self._errors.append(error)
            log.warning("plugin not loaded: %s", error)
        finally:
            self._current = PROJECT

    def items(self) -> dict[str, T]:
        self.load()
        return dict(self._items)

    def names(self) -> list[str]:
        return list(self.items())

    def get(self, name: str) -> T | None:
        return self.items().get(name)

    def origin(self, name: str) -> str | None:
        """The module or entry point that registered ``name``."""
        self.load()
        return self._origin.get(name)

    def installed(self) -> list[str]:
        """The names registered by installed packages (entry points), not by this project."""
        self.load()
        return [n for n, o in self._origin.items() if o not in builtin_modules(self.group)
                and o != PROJECT]  # fmt: skip

    def errors(self) -> list[PluginError]:
        self.load()
        return list(self._errors)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self.items()


def _call(target: Any) -> None:
    """An entry point names a module (imported: its decorators register) or a callable
    (called: it registers)."""
    if callable(target) and not isinstance(target, type):
        target()


_REGISTRIES: dict[str, PluginRegistry[Any]] = {}


def registry(group: str) -> PluginRegistry[Any]:
    """The one registry of a group (made on first use)."""
    found = _REGISTRIES.get(group)
    if found is None:
        found = _REGISTRIES.setdefault(group, PluginRegistry(group))
    return found


def load_errors() -> list[PluginError]:
    """Every plugin of every kind that could not be loaded (the doctor lists them)."""
    return [e for group in (TOOLS_GROUP, STRATEGIES_GROUP, PROVIDERS_GROUP)
            for e in registry(group).errors()]  # fmt: skip
