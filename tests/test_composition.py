"""The backend's three big objects are composed of parts that own their state, and the data has
one way in from the fronts (docs/architecture.md, "Objects and the one way to the data").

- ``Store``, ``AgentService`` and ``RunManager`` have no base classes (no mixins sharing private
  fields); neither have their parts.
- A part never reads another object's private fields (``other._x``): only its own.
- The HTTP fronts (``backend/http``) and the UI (``frontend``) never touch a ``.store``: they go
  through the service's use cases and ``service.data_of(owner)`` / ``OwnedService.data``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from backend.runs.admission import RunAdmission
from backend.runs.following import RunFollowing
from backend.runs.manager import RunManager
from backend.runs.queue import RunQueue
from backend.runs.unstored_ends import UnstoredEnds
from backend.runs.writer import RunEventWriter
from backend.service import AgentService
from backend.service.conversations import ConversationService
from backend.service.questions import QuestionService
from backend.service.runs import RunService
from backend.service.sharing import ShareService
from backend.service.uploads import UploadService
from storage.conversation_export import ExportStore
from storage.repo import Store
from storage.store_conversations import ConversationStore
from storage.store_messages import MessageStore
from storage.store_recordings import RecordingStore
from storage.store_runs import RunStore
from storage.store_shares import ShareStore
from storage.tool_cache import ToolCacheStore

ROOT = Path(__file__).resolve().parents[1]

COMPOSED = {
    Store: (
        ConversationStore, RecordingStore, ShareStore, MessageStore, RunStore, ExportStore,
        ToolCacheStore,
    ),
    AgentService: (UploadService, ConversationService, QuestionService, RunService, ShareService),
    RunManager: (RunEventWriter, RunQueue, RunAdmission, RunFollowing, UnstoredEnds),
}  # fmt: skip
FRONTS = ("backend/http", "frontend")


@pytest.mark.parametrize("whole", list(COMPOSED), ids=lambda c: c.__name__)
def test_the_whole_and_its_parts_have_no_base_classes(whole):
    for cls in (whole, *COMPOSED[whole]):
        assert cls.__bases__ == (object,), f"{cls.__name__} is built on {cls.__bases__}"


def _source_files(classes) -> set[Path]:
    import inspect

    return {Path(inspect.getfile(cls)) for whole in classes for cls in (whole, *COMPOSED[whole])}


def test_no_part_reads_another_objects_private_fields():
    """``self._x`` is a part's own; ``other._x`` would be state shared behind the parts' backs."""
    found = []
    for path in sorted(_source_files(COMPOSED)):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert found == []


def front_store_uses(root: Path = ROOT) -> list[str]:
    """Every ``<anything>.store`` in the HTTP fronts and the UI."""
    found = []
    for folder in FRONTS:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr == "store":
                    found.append(f"{path.relative_to(root)}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_fronts_never_reach_the_store():
    assert front_store_uses() == []


def test_the_check_sees_a_store_reached_from_a_front(tmp_path):
    """The check above can fail: a route reading ``service.store`` is found."""
    (tmp_path / "backend" / "http").mkdir(parents=True)
    (tmp_path / "frontend").mkdir()
    (tmp_path / "backend" / "http" / "route.py").write_text(
        "def f(service):\n    return service.store.runs.get_run('x')\n"
    )
    assert front_store_uses(tmp_path) == ["backend/http/route.py:2 service.store"]
