"""Conversation titles: short, and distinct among one owner's conversations.

A conversation is named after its first question, cut short at a word, and the recording it
is about ("Which sound is this · dog_bark"), so that many questions that begin alike still
read apart in the sidebar; a title the owner already has gets " (2)", " (3)" ...
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import PurePath

from storage.run_writes import make_title

QUESTION_CHARS = 36  # the question's part of a title
NAME_CHARS = 22  # the recording's part
SEPARATOR = " · "
# Recording names that say nothing about the recording (a browser's microphone capture).
GENERIC_NAMES = {"audio", "recording", "blob", "microphone", "voice", "sound", "clip"}


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary near ``limit`` characters (with "…")."""
    return make_title(text, limit)


def recording_stem(name: str | None) -> str:
    """The recording's file name without its folder and extension ("" when it says nothing)."""
    stem = PurePath(name or "").stem.strip()
    if not stem or stem.casefold() in GENERIC_NAMES:
        return ""
    return shorten(stem, NAME_CHARS)


def conversation_title(question: str, audio_name: str | None, taken: Collection[str]) -> str:
    """The title of a conversation whose first question is ``question`` about the recording
    ``audio_name``, made distinct from the ``taken`` titles."""
    return distinct(plain_title(question, audio_name), taken)


def plain_title(question: str, audio_name: str | None) -> str:
    """``conversation_title`` before it is made distinct: every title it can give begins
    with this one (so the titles to avoid are those that begin with it)."""
    words = shorten(question, QUESTION_CHARS).rstrip("?!. ") or "Question"
    stem = recording_stem(audio_name)
    return f"{words}{SEPARATOR}{stem}" if stem else words


def distinct(title: str, taken: Collection[str]) -> str:
    """``title``, or ``title (2)``, ``title (3)`` ... the first one not ``taken``."""
    if title not in taken:
        return title
    number = 2
    while f"{title} ({number})" in taken:
        number += 1
    return f"{title} ({number})"
