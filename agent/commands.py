"""``python -m some.module`` on a module that is not a command says so instead of doing nothing.

Python runs any module given to ``-m``: one that is part of the app (``backend.host.hosting``) is
imported, does nothing and exits 0, so ``python -m backend.host.hosting space OUT_DIR`` looked like
it had worked. Each package's ``__init__`` calls ``refuse_unless_command(__name__, __file__)``:
when the process was started as ``python -m <a module of this package>`` and that module is
not a command (it has no ``if __name__ == "__main__":`` block and is not a package with a
``__main__.py``), it prints which commands the package has (the likeliest first) and exits 2.
Commands check their own arguments with argparse.
"""

from __future__ import annotations

import ast
import difflib
import sys
from pathlib import Path


def module_target(argv: list[str]) -> tuple[str, list[str]] | None:
    """The module a ``python -m MODULE ARGS`` command line runs and its arguments, else None."""
    skip = False
    for i, arg in enumerate(argv[1:], start=1):
        if skip:
            skip = False
            continue
        if arg in ("-X", "-W"):  # the interpreter's options that take a value
            skip = True
            continue
        if arg == "-m" and i + 1 < len(argv):
            return argv[i + 1], argv[i + 2 :]
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:], argv[i + 1 :]
        if not arg.startswith("-"):
            return None  # a script (or -c's code) comes first: not a -m run
    return None


def module_file(package_dir: Path, relative: list[str]) -> Path | None:
    """The file ``python -m`` runs for the module ``relative`` inside the package folder."""
    base = package_dir.joinpath(*relative)
    for candidate in (base / "__main__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either way round)."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and values == ["__main__"]


def is_command(path: Path) -> bool:
    """A package's ``__main__.py``, or a module with a top-level ``__main__`` block."""
    if path.name == "__main__.py":
        return True
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(is_main_guard(node) for node in tree.body)


def commands_of(package: str, package_dir: Path) -> list[str]:
    """Every ``python -m`` command inside the package, as a module name."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts or not is_command(path):
            continue
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__main__":
            parts.pop()
        found.append(".".join([package, *parts]))
    return found


def refusal(target: str, args: list[str], commands: list[str]) -> str:
    """The message for ``python -m target args`` when ``target`` is not one of ``commands``."""
    short = {name.rsplit(".", 1)[-1]: name for name in commands}
    named = [
        short[a] for a in args if a in short
    ]  # `backend.host.hosting space`: backend.host.space
    close = difflib.get_close_matches(target, commands, n=3, cutoff=0.5)
    likely = list(dict.fromkeys([*named, *close]))
    lines = [f"python -m {target} is not a command: the module is part of the app and does"]
    lines.append("nothing when run, so it takes no arguments.")
    if likely:
        lines.append(f"Did you mean: python -m {likely[0]} ...?")
    if commands:
        lines.append("Commands here: " + ", ".join(f"python -m {c}" for c in commands))
    return "\n".join(lines)


def refuse_unless_command(package: str, init_file: str, argv: list[str] | None = None) -> None:
    """Exit 2 with ``refusal`` when this process is ``python -m`` of a non-command module."""
    found = module_target(list(getattr(sys, "orig_argv", [])) if argv is None else argv)
    if found is None:
        return
    target, args = found
    if target != package and not target.startswith(package + "."):
        return
    package_dir = Path(init_file).resolve().parent
    path = module_file(package_dir, target.split(".")[1:])
    if path is None or is_command(path):
        return  # a command, or no such module (Python says so itself)
    print(refusal(target, args, commands_of(package, package_dir)), file=sys.stderr)
    raise SystemExit(2)
