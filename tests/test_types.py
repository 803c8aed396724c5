"""The type checker guards the event spine: a consumer that dispatches on ``event.type`` and
ends with ``assert_never`` fails mypy when it leaves an event type unhandled (issue 31).

``.ci/run`` runs mypy on the configured files (``[tool.mypy]`` in pyproject.toml); this test
shows that the check it relies on bites: the same consumer passes with every case and fails
with one left out.
"""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest

from agent import events as ev

ROOT = Path(__file__).resolve().parents[1]


def event_types() -> list[str]:
    union = typing.get_args(ev.Event)[0]  # Annotated[Union[...], Field(discriminator=...)]
    classes = typing.get_args(union)
    return [typing.get_args(cls.model_fields["type"].annotation)[0] for cls in classes]


def consumer(handled: list[str]) -> str:
    cases = "".join(f'        case "{name}":\n            return "{name}"\n' for name in handled)
    return (
        "from typing import assert_never\n\n"
        "from agent import events as ev\n\n\n"
        "def describe(event: ev.Event) -> str:\n"
        "    match event.type:\n"
        f"{cases}"
        "        case _:\n"
        "            assert_never(event.type)\n"
    )


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--no-incremental", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def names() -> list[str]:
    found = event_types()
    assert {"run_started", "tool_call", "answer", "run_finished", "run_failed"} <= set(found)
    return found


def test_a_consumer_that_handles_every_event_type_passes(tmp_path: Path, names: list[str]) -> None:
    path = tmp_path / "every_case.py"
    path.write_text(consumer(names))
    done = mypy(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unhandled_event_type_is_a_type_error(tmp_path: Path, names: list[str]) -> None:
    path = tmp_path / "one_missing.py"
    path.write_text(consumer([n for n in names if n != "tool_result"]))
    done = mypy(path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "assert_never" in done.stdout and "tool_result" in done.stdout, done.stdout


def test_one_request_type_from_the_http_body_to_the_run(tmp_path: Path) -> None:
    """The REST body of a question is the service's ``AskRequest`` itself (no copy of its
    fields in another class): what the page, ``/v1`` and MCP build too."""
    from app import create_app
    from backend.host.settings import Settings
    from backend.service import AskRequest

    app = create_app(Settings(data_dir=tmp_path, warm_up=False), ui=False)
    paths = app.openapi()["paths"]
    ask = paths["/api/conversations/{conversation_id}/ask"]["post"]["requestBody"]
    assert ask["content"]["application/json"]["schema"]["$ref"].endswith("/AskRequest")
    compare = paths["/api/conversations/{conversation_id}/compare"]["post"]["requestBody"]
    ref = compare["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    schema = app.openapi()["components"]["schemas"][ref]
    assert set(AskRequest.__dataclass_fields__) < set(schema["properties"])
    assert not any("AskBody" in name for name in app.openapi()["components"]["schemas"])
