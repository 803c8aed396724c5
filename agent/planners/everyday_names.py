"""The everyday name a person would give a sound: "a dog barking", not "Animal: dog, bark".

The table beside this file (``everyday_names.json``, reviewed by hand) names every class the
sound classifier (YAMNet, AudioSet's 521 classes) can output, and every ESC-50 class:

- ``classes``: class -> phrase, or [phrase, head class]. A head gathers its kin: "Bark",
  "Howl" and "Growling" are kinds of "Dog"; the evidence for them is evidence for the dog,
  and the answer names the most specific one that is confident (``sound_naming``).
- ``generic``: broad parents ("Animal", "Vehicle", "Domestic animals, pets") that name no
  source a person would: used only when nothing more specific is heard.
- ``vague``: the sound's quality, not its source ("Whir", "Rumble", "Tap"): a person names
  the source when they can, the quality when they cannot.
- ``not_a_source``: the place or the recording ("Inside, small room", "Echo", "Silence").
- ``esc50``: per ESC-50 class, what a person calls it and the classifier's classes that name
  the same thing (the truth an answer in words is judged against).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("everyday_names.json")
SOURCE, VAGUE, GENERIC, NOT_A_SOURCE = "source", "vague", "generic", "not_a_source"


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def _entry(label: str) -> str | list[str] | None:
    return table()["classes"].get(label)


def everyday_name(label: str) -> str:
    """The phrase for a classifier class ("Bark" -> "a dog barking"); a class the table does
    not know (another tagger's) is its first synonym in lower case."""
    entry = _entry(label)
    if entry is None:
        return label.split(",")[0].strip().lower()
    return entry if isinstance(entry, str) else entry[0]


def lineage(label: str) -> list[str]:
    """The class and its heads up to the first ("Caw" -> ["Caw", "Crow", "Bird"])."""
    chain = [label]
    entry = _entry(label)
    while isinstance(entry, list) and entry[1] not in chain:
        chain.append(entry[1])
        entry = _entry(entry[1])
    return chain


def head_of(label: str) -> str:
    """The class whose kin this one is ("Bark" -> "Dog", "Caw" -> "Bird"); a class with no
    head is its own."""
    return lineage(label)[-1]


def depth(label: str) -> int:
    """How many heads a class has above it: the more, the more specific it is."""
    return len(lineage(label)) - 1


def tier(label: str) -> str:
    """How well a class names a source: ``source``, ``vague``, ``generic`` or
    ``not_a_source``."""
    data = table()
    for name in (NOT_A_SOURCE, GENERIC, VAGUE):
        if label in data[name]:
            return name
    return SOURCE


def esc50_classes() -> list[str]:
    """The ESC-50 classes, as written in its meta.csv ("door_wood_knock")."""
    return list(table()["esc50"])


def esc50_name(category: str) -> str:
    """What a person calls an ESC-50 class ("door_wood_knock" -> "someone knocking on a
    door")."""
    return str(table()["esc50"][category.replace(" ", "_")]["say"])


def esc50_evidence(category: str) -> list[str]:
    """The classifier's classes that name the same thing as an ESC-50 class (empty where it
    has none: a washing machine, a can opening)."""
    return list(table()["esc50"][category.replace(" ", "_")]["classes"])
