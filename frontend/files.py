"""Temporary files the UI writes, and their removal when a conversation is deleted.

The UI hands Gradio files to serve: a copy of a recording (for the audio player); earlier
versions also wrote a JSON export for the download button on every open and answer (the page
now links to the API's export, made when clicked, and writes none). They live under
``<tmp>/audio-agent-ui``:

    audio/<audio id>/<name>.<ext>            one per recording
    exports/<conversation id>/<title>-<id8>.json   (left by earlier versions)

Gradio copies every file it serves, and every file a visitor uploads, into its own cache
(``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``) as ``<sha256(seed + bytes)>/<name>``. So when a
conversation is deleted, ``forget`` removes its exports, and for each recording that was
deleted with it, our copy and Gradio's copies (found by hashing the bytes the way Gradio does,
which also finds the visitor's original upload), plus Gradio's copies of the exports (found by
name and checked by content).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from backend.service import Purged

log = logging.getLogger(__name__)


def temp_root() -> Path:
    return Path(tempfile.gettempdir()) / "audio-agent-ui"


def temp_dir(*parts: str) -> Path:
    path = temp_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def audio_dir(audio_id: str) -> Path:
    return temp_root() / "audio" / audio_id


def export_dir(conversation_id: str) -> Path:
    return temp_root() / "exports" / conversation_id


def gradio_cache() -> Path:
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder())


def gradio_copy_dir(path: Path) -> Path | None:
    """The folder Gradio caches copies of this file's bytes in (whether it exists or not)."""
    from gradio.processing_utils import hash_file

    try:
        return gradio_cache() / hash_file(path)
    except OSError:
        return None


def _is_export_of(path: Path, conversation_id: str) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and (data.get("conversation") or {}).get("id") == conversation_id


def forget(purged: Purged) -> list[Path]:
    """Remove the UI's and Gradio's temporary files of a deleted conversation.

    Runs before the recordings' own files are removed (it hashes them). Returns what it removed.
    """
    removed: list[Path] = []
    targets: list[Path] = []
    for info in purged.audio:
        targets.append(audio_dir(info.id))
        for source in {Path(info.original_path), Path(info.stored_path)}:
            if source.is_file() and (copies := gradio_copy_dir(source)) is not None:
                targets.append(copies)
    exports = export_dir(purged.conversation_id)
    targets.append(exports)
    cache = gradio_cache()
    if cache.is_dir():
        targets.extend(
            copy.parent
            for copy in cache.glob(f"*/*-{purged.conversation_id[:8]}.json")
            if _is_export_of(copy, purged.conversation_id)
        )
    for target in targets:
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
            if target.exists():
                log.warning("could not remove %s", target)
            else:
                removed.append(target)
    return removed
