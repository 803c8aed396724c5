"""Every ``from <project module> import name`` names something that module defines.

ruff (pyflakes) does not follow imports, so a name renamed or moved on one branch and still
imported on another merges cleanly and breaks only when that line runs: in a lazy import,
perhaps in front of a user. This reads the modules' top-level definitions instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_import_graph import FOLDERS, ROOT, TOP_FILES, module_files


def defined_names(tree: ast.Module) -> set[str] | None:
    """The names a module binds at its top level (also inside if/try); None when it has a
    module ``__getattr__`` (then anything may exist)."""
    names: set[str] = set()
    statements: list[ast.stmt] = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.If | ast.Try | ast.With):
            statements += node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", [])
            for handler in getattr(node, "handlers", []):
                statements += handler.body
    return names


def missing_names(root: Path) -> list[str]:
    modules = module_files(root, FOLDERS, TOP_FILES)
    defined = {name: defined_names(ast.parse(path.read_text())) for name, path in modules.items()}
    missing = []
    for source, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in modules:
                continue
            names = defined[node.module]
            if names is None:
                continue
            for alias in node.names:
                if alias.name == "*" or alias.name in names:
                    continue
                if f"{node.module}.{alias.name}" in modules:  # a submodule of a package
                    continue
                missing.append(f"{source}:{node.lineno} {node.module} has no {alias.name}")
    return missing


def test_every_imported_project_name_exists() -> None:
    assert missing_names(ROOT) == []


def test_the_check_finds_a_name_that_moved(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "__init__.py").write_text("")
    (tmp_path / "agent" / "a.py").write_text(
        "import os\nif os.name:\n    KEPT = 1\ntry:\n    from json import loads\n"
        "except ImportError:\n    loads = None\ndef moved_here(): ...\n"
    )
    (tmp_path / "agent" / "b.py").write_text(
        "from agent.a import KEPT, loads, moved_here, gone\nfrom agent import a\n"
    )
    assert missing_names(tmp_path) == ["agent.b:1 agent.a has no gone"]
