"""Every example of the README and docs/ runs as written, so one that stops working fails CI.

Each fenced ``bash`` and ``python`` block of ``README.md`` and ``docs/**/*.md`` either runs
here, or carries the reason it cannot right before its fence, as an HTML comment the rendered
page does not show::

    <!-- example: skip — needs OPENAI_API_KEY -->

A block with neither fails the test. The blocks of one document run in order, as a newcomer
would paste them from a fresh shell: in a fresh folder that looks like a fresh clone (the
project's files linked in, nothing else; ``clip.wav`` is a bundled recording, as the README
says), against a fresh server of that document when its examples talk to one (``python app.py``
with a new data folder and the offline default, the registry every user starts with). The only
change made to a block is the port: ``localhost:7860`` and ``127.0.0.1:7860`` become the test
server's. Shell variables set by one bash block are there in the next (as in one terminal), and
``curl`` fails on an HTTP error (``--fail-with-body``), so an example that answers 404 fails
here.

Also: every relative link of README.md and docs/ leads to a file that exists and, with
``#anchor``, to a heading of it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import ROOT, AppProcess

RUNNABLE = ("bash", "python")
SKIP = re.compile(r"<!--\s*example:\s*skip\s*[—–:-]+\s*(?P<reason>\S.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
PORT = re.compile(r"\b(?:localhost|127\.0\.0\.1):7860\b")
CLIP = ROOT / "tests" / "fixtures" / "dog_bark_esc50.wav"
BLOCK_TIMEOUT_S = 300
PRELUDE = """set -eo pipefail
set -a  # what a block sets is there in the next, as in one terminal
if [ -f .example-env ]; then . ./.example-env; fi
curl() { command curl --fail-with-body "$@"; }
"""
EPILOGUE = "\nexport -p > .example-env\n"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip: str | None  # the documented reason it does not run here

    def __str__(self) -> str:
        return f"{name(self.doc)}:{self.line} ({self.lang})"


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of a markdown file, with the skip reason written before it."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, start = len(fence["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.search(before)
        found.append(
            Block(doc, start + 1, fence["lang"], "\n".join(body) + "\n", skip and skip["reason"])
        )
        i += 1
    return found


def runnable(doc: Path) -> list[Block]:
    return [b for b in blocks(doc) if b.lang in RUNNABLE]


def fresh_clone(folder: Path) -> Path:
    """A folder that looks like a fresh clone: the project's tracked top-level entries linked."""
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") and entry.name != ".ci":
            continue
        if entry.name in ("data", "space-out") or entry.name.startswith(".venv"):
            continue
        (folder / entry.name).symlink_to(entry)
    shutil.copy(CLIP, folder / "clip.wav")
    return folder


def shell_env(bin_dir: Path) -> dict[str, str]:
    """A newcomer's environment: none of the app's settings, this Python first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDIO_AGENT_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_block(block: Block, cwd: Path, port: int) -> subprocess.CompletedProcess[str]:
    code = PORT.sub(f"127.0.0.1:{port}", block.code)
    env = shell_env(Path(sys.executable).parent)
    if block.lang == "bash":
        command = ["bash", "-c", PRELUDE + code + EPILOGUE]
    else:
        script = cwd / f"example_{block.line}.py"
        script.write_text(code, encoding="utf-8")
        command = [sys.executable, script.name]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S
    )


def test_every_skip_reason_stands_before_an_example() -> None:
    """A reason belongs right before the bash or python block it excuses (one elsewhere would
    leave its block to run, and excuse nothing)."""
    for doc in documents():
        written = len(SKIP.findall(doc.read_text(encoding="utf-8")))
        attached = [b for b in runnable(doc) if b.skip]
        assert written == len(attached), f"{name(doc)}: a skip reason not right before a block"
    assert any(b.skip is None for doc in documents() for b in runnable(doc))


@pytest.mark.parametrize(
    "doc",
    [d for d in documents() if any(b.skip is None for b in runnable(d))],
    ids=name,
)
def test_the_examples_of_a_document_run_in_order(doc: Path, tmp_path: Path) -> None:
    folder = fresh_clone(tmp_path / "clone")
    to_run = [b for b in runnable(doc) if not b.skip]
    server = None  # started for the documents whose examples talk to one
    if any(PORT.search(b.code) for b in to_run):
        data = {"AUDIO_AGENT_DATA_DIR": str(tmp_path / "srv")}
        server = AppProcess(tmp_path / "server.log", data)
    try:
        for block in to_run:
            done = run_block(block, folder, server.port if server else 7860)
            assert done.returncode == 0, (
                f"the example at {block} failed ({done.returncode}):\n{block.code}\n"
                f"--- stdout:\n{done.stdout[-3000:]}\n--- stderr:\n{done.stderr[-3000:]}"
            )
    finally:
        if server:
            server.stop()


# -- links ---------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m[1]) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def test_every_relative_link_resolves() -> None:
    broken = []
    for doc in documents():
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        for match in LINK.finditer(text):
            target = match[1] or match[2]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{name(doc)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{name(doc)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_block_reader_finds_fences_and_reasons(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n\n<!-- example: skip — needs OPENAI_API_KEY -->\n```bash\nexit 1\n```\n\n"
        "1. item\n\n   ```python\n   print(1)\n   ```\n\n```json\n{}\n```\n"
    )
    found = blocks(doc)
    assert [(b.lang, b.skip, b.code) for b in found] == [
        ("bash", "needs OPENAI_API_KEY", "exit 1\n"),
        ("python", None, "print(1)\n"),
        ("json", None, "{}\n"),
    ]
    assert slug("What a public instance exposes and refuses") == (
        "what-a-public-instance-exposes-and-refuses"
    )
    assert slug("The research bench: `python -m bench`") == "the-research-bench-python--m-bench"


def test_the_headings_of_each_page_are_unique() -> None:
    """A link to a section leads to one place, and no two sections share a name (the README had
    a heading and a bold lead-in both called Limits)."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
        names = [slug(m[1]) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)]
        names += [slug(m[1]) for m in re.finditer(r"^\*\*([^*]+?)\.?\*\*", text, re.M)]
        twice = sorted({n for n in names if names.count(n) > 1})
        assert not twice, f"{name(doc)}: sections called {twice} more than once"
