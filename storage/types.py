"""Column types that store any Python string on SQLite and PostgreSQL alike.

PostgreSQL ``text`` cannot hold NUL (U+0000), and neither database driver can encode a lone
UTF-16 surrogate (U+D800..U+DFFF, which ``json.loads`` happily produces from ``"\\ud800"``).
A question, a title, a file name or a tool's output may contain either. ``SafeText`` escapes
exactly those characters on the way in and restores them on the way out, so every string
round-trips unchanged on both databases:

    U+0000, U+D800..U+DFFF and the escape mark U+10FFFF itself  ->  U+10FFFF + 6 hex digits

U+10FFFF is a Unicode noncharacter, so real text essentially never contains it; when it does
it is escaped too, which keeps the mapping reversible. Text without these characters (all
ordinary text) is stored verbatim, so the database stays readable with a SQL client.

JSON columns need no escaping: the JSON serializer writes these characters as ``\\u0000``
escapes (ASCII), which PostgreSQL's ``json`` type (not ``jsonb``) stores as they are.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Text
from sqlalchemy.types import TypeDecorator

MARK = "\U0010ffff"
_UNSAFE = re.compile("[\x00\ud800-\udfff\U0010ffff]")
_ESCAPED = re.compile("\U0010ffff([0-9a-f]{6})")


def escape_text(value: str) -> str:
    """``value`` with NUL, lone surrogates and the mark replaced by mark + 6 hex digits."""
    if not _UNSAFE.search(value):
        return value
    return _UNSAFE.sub(lambda m: f"{MARK}{ord(m.group()):06x}", value)


def unescape_text(value: str) -> str:
    """The inverse of ``escape_text``."""
    if MARK not in value:
        return value
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), value)


class SafeText(TypeDecorator[str]):
    """``Text`` that stores any ``str`` (see the module docstring)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return escape_text(value) if isinstance(value, str) else value

    def process_result_value(self, value: Any, dialect: Any) -> Any:
        return unescape_text(value) if isinstance(value, str) else value
