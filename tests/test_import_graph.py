"""The project's import graph, read from the source with ast: no circles, no private names
taken from another module, and the arrows between the folders (``LAYERS`` below; the
docs/architecture.md says what each folder holds).

Every import counts: at module level, inside functions (the lazy ones) and under
``TYPE_CHECKING``. A module that imports another lazily still cannot be read, tested or moved
without it, and a circle hidden in a function is still a circle.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("agent", "backend", "frontend", "storage", "bench", "tests")
TOP_FILES = ("app.py",)

# Circles other engineers are removing while they work, allowed by name until they land (the
# allowance is removed at merge, and the test then holds them to the same rule); none now.
# A circle that is part of one of these (some of its modules already untangled) passes too.
CIRCLES_BEING_REMOVED: tuple[set[str], ...] = ()
# The private names such circles rest on, removed with them.
PRIVATE_NAMES_BEING_REMOVED: set[tuple[str, str, str]] = set()

# The design notes' arrows, lowest layer first: a module may import from its own layer and those
# below it, never from one above (frontend -> backend -> {agent, storage}, storage -> agent,
# bench -> {backend, agent}; app.py wires frontend and backend together).
LAYERS = ("agent", "storage", "backend", "frontend", "app", "bench")
# storage knows the agent's records, not its machinery: the events (which hold the two records
# it stores besides them, AudioRef for the audio table and ToolResult for the tool cache), and,
# like every package, the guard that refuses `python -m` of a module that is no command.
STORAGE_MAY_USE: dict[str, set[str] | None] = {  # None: any name
    "agent.events": None,
    "agent.commands": {"refuse_unless_command"},
}
# The frontend reaches storage and the agent only through the backend's types and the events.
FRONTEND_MAY_USE: dict[str, set[str] | None] = {
    "agent.events": None,
    "agent.commands": {"refuse_unless_command"},
}


@dataclass(frozen=True)
class Import:
    """``source`` imports the project module ``target`` (taking ``names`` from it, if any)."""

    source: str
    target: str
    names: tuple[str, ...]
    line: int

    def __str__(self) -> str:
        taken = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.source}:{self.line} -> {self.target}{taken}"


@dataclass(frozen=True)
class PrivateUse:
    source: str
    target: str
    name: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line} uses {self.target}.{self.name}"


def module_files(root: Path, folders: Iterable[str], top_files: Iterable[str]) -> dict[str, Path]:
    """Module name -> file, for every .py file of the given folders and top-level files."""
    files = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join(parts)] = path
    for name in top_files:
        if (root / name).is_file():
            files[Path(name).stem] = root / name
    return files


def _project_module(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``import name`` loads last (``a.b.c`` -> ``a.b`` if c is a name)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def read_module(
    module: str, path: Path, modules: dict[str, Path]
) -> tuple[list[Import], list[PrivateUse]]:
    """Every import of a project module in one file, and every private name it takes from one
    (``from x import _y``, or ``x._y`` on a module it imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    imports: list[Import] = []
    private: list[PrivateUse] = []
    bound: dict[str, str] = {}  # local name -> project module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _project_module(alias.name, modules)
                if target is None or target == module:
                    continue
                imports.append(Import(module, target, (), node.lineno))
                if alias.asname:
                    bound[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            names: list[str] = []
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:  # from package import module
                    if submodule != module:
                        imports.append(Import(module, submodule, (), node.lineno))
                    bound[alias.asname or alias.name] = submodule
                    if _private(alias.name):
                        private.append(PrivateUse(module, base, alias.name, node.lineno))
                    continue
                names.append(alias.name)
            target = _project_module(base, modules)
            if target is None or target == module or not names:
                continue
            imports.append(Import(module, target, tuple(names), node.lineno))
            private += [PrivateUse(module, target, n, node.lineno) for n in names if _private(n)]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and _private(node.attr)
        ):
            private.append(PrivateUse(module, bound[node.value.id], node.attr, node.lineno))
    return imports, private


def read_graph(
    root: Path, folders: Iterable[str] = FOLDERS, top_files: Iterable[str] = TOP_FILES
) -> tuple[list[Import], list[PrivateUse]]:
    modules = module_files(root, folders, top_files)
    imports: list[Import] = []
    private: list[PrivateUse] = []
    for module, path in modules.items():
        found, taken = read_module(module, path, modules)
        imports += found
        private += taken
    return imports, private


@functools.cache
def project_graph() -> tuple[list[Import], list[PrivateUse]]:
    return read_graph(ROOT)


def circles(imports: Iterable[Import]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (strongly connected
    components of more than one module), each sorted, smallest name first."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        edges.setdefault(imp.source, set()).add(imp.target)
        edges.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def _describe(group: list[str], imports: Iterable[Import]) -> str:
    inside = [str(i) for i in imports if i.source in group and i.target in group]
    return f"{' <-> '.join(group)}:\n    " + "\n    ".join(sorted(inside))


def _layer(module: str) -> str:
    return module.split(".")[0]


def against_layers(imports: Iterable[Import]) -> list[str]:
    """Imports from a higher layer than the importer's."""
    return sorted(
        str(imp)
        for imp in imports
        if _layer(imp.source) in LAYERS
        and _layer(imp.target) in LAYERS
        and LAYERS.index(_layer(imp.target)) > LAYERS.index(_layer(imp.source))
    )


def overreach(
    imports: Iterable[Import],
    source: str,
    targets: Iterable[str],
    may_use: dict[str, set[str] | None],
) -> list[str]:
    """Imports of layer ``source`` from the layers ``targets`` beyond ``may_use`` (module ->
    the names it may give, None for any)."""
    wrong = []
    for imp in imports:
        if _layer(imp.source) != source or _layer(imp.target) not in targets:
            continue
        allowed = may_use.get(imp.target, set())
        if allowed is not None and (not imp.names or not set(imp.names) <= allowed):
            wrong.append(str(imp))
    return sorted(wrong)


def storage_overreach(imports: Iterable[Import]) -> list[str]:
    """Imports of storage from agent beyond ``STORAGE_MAY_USE``."""
    return overreach(imports, "storage", ["agent"], STORAGE_MAY_USE)


def frontend_overreach(imports: Iterable[Import]) -> list[str]:
    """Imports of the frontend from agent or storage beyond ``FRONTEND_MAY_USE``."""
    return overreach(imports, "frontend", ["agent", "storage"], FRONTEND_MAY_USE)


# -- the project ---------------------------------------------------------------------------


def test_no_module_imports_another_that_imports_it_back():
    imports, _ = project_graph()
    new = [
        group
        for group in circles(imports)
        if not any(set(group) <= allowed for allowed in CIRCLES_BEING_REMOVED)
    ]
    assert not new, "import circles (lazy imports included):\n" + "\n".join(
        _describe(group, imports) for group in new
    )


def test_no_module_takes_another_modules_private_names():
    _, private = project_graph()
    found = [
        str(use)
        for use in private
        if (use.source, use.target, use.name) not in PRIVATE_NAMES_BEING_REMOVED
    ]
    assert not found, "private names used across modules:\n" + "\n".join(sorted(found))


def test_imports_point_down_the_layers_of_design_md():
    upward = against_layers(project_graph()[0])
    assert not upward, "imports against the layers' arrows (LAYERS above):\n" + "\n".join(upward)


def test_the_product_never_imports_the_tests():
    imports, _ = project_graph()
    # bench measures the adapters against the tests' fake provider servers
    wrong = [
        str(imp)
        for imp in imports
        if _layer(imp.target) == "tests" and _layer(imp.source) not in ("tests", "bench")
    ]
    assert not wrong, "\n".join(sorted(wrong))


def test_storage_knows_the_agents_records_not_its_machinery():
    wrong = storage_overreach(project_graph()[0])
    assert not wrong, "storage imports from agent:\n" + "\n".join(wrong)


def test_the_frontend_reaches_storage_and_the_agent_only_through_the_backend():
    wrong = frontend_overreach(project_graph()[0])
    assert not wrong, "frontend imports beyond the backend and the events:\n" + "\n".join(wrong)


def test_the_allowances_name_real_modules():
    """A renamed module must not slip out of the checks through a stale allowance."""
    modules = module_files(ROOT, FOLDERS, TOP_FILES)
    named = {m for group in CIRCLES_BEING_REMOVED for m in group}
    named |= {m for use in PRIVATE_NAMES_BEING_REMOVED for m in use[:2]}
    named |= set(STORAGE_MAY_USE) | set(FRONTEND_MAY_USE)
    assert named <= set(modules), named - set(modules)
    assert {m.split(".")[0] for m in modules} - {"tests"} <= set(LAYERS)


# -- the checks themselves, on a small made-up project -------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_reader_finds_lazy_circles_and_private_names(tmp_path):
    _write(
        tmp_path,
        {
            "agent/__init__.py": "",
            "agent/run.py": "from agent.context import Context\nimport backend.api\n",
            "agent/context.py": "def f():\n    from agent import run\n    return run\n",
            "agent/strategies/__init__.py": "from .react import React\n",
            "agent/strategies/react.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from agent.strategies import React\n"
            ),
            "agent/tools.py": "import agent.audio as audio\nX = audio._decode\n",
            "agent/audio.py": "def _decode():\n    pass\n",
            "storage/__init__.py": "from agent.tools import _helper, Tool\n",
            "backend/__init__.py": "",
            "backend/api.py": "from storage import Store\n",
            "agent/events.py": "class Event:\n    pass\n",
            "storage/schemas.py": "class AudioInfo:\n    pass\n",
            "frontend/__init__.py": "",
            "frontend/page.py": (
                "from agent import events\nfrom agent.events import Event\n"
                "from storage.schemas import AudioInfo\nfrom backend.api import X\n"
            ),
        },
    )
    imports, private = read_graph(tmp_path, ("agent", "storage", "backend", "frontend"), ())
    assert circles(imports) == [
        ["agent.context", "agent.run"],
        ["agent.strategies", "agent.strategies.react"],
    ]
    assert sorted(str(p) for p in private) == [
        "agent.tools:2 uses agent.audio._decode",
        "storage:1 uses agent.tools._helper",
    ]
    assert storage_overreach(imports) == ["storage:1 -> agent.tools (_helper, Tool)"]
    assert frontend_overreach(imports) == ["frontend.page:3 -> storage.schemas (AudioInfo)"]
    assert against_layers(imports) == ["agent.run:2 -> backend.api"]
    _write(tmp_path, {"agent/context.py": "def f():\n    return 1\n"})
    imports, _ = read_graph(tmp_path, ("agent",), ())
    assert circles(imports) == [["agent.strategies", "agent.strategies.react"]]
