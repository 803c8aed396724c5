"""The page's own styles and scripts, beside this file: ``page.css`` (layout, contrast, phone),
``page.js`` (the page's behaviour: Enter sends, the address, the playhead ...) with
``page_feedback.js`` (what shows before the server answers: Undo, the question, uploads) and
``history.js`` (the sidebar's list). Gradio 6 takes page CSS only in launch() or
mount_gradio_app(); so that a Blocks alone is styled, the page's header injects them."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent
CSS = (_HERE / "page.css").read_text()
PAGE_JS = (_HERE / "page.js").read_text() + "\n" + (_HERE / "page_feedback.js").read_text()
HISTORY_JS = (_HERE / "history.js").read_text()
