"""A large JSON body parsed without stopping the server: its long strings lifted out first.

``json.loads`` and ``base64.b64decode`` hold the GIL for as long as they run (0.3 s each for
a 200 MB body, and a worker thread does not help: every other thread, the event loop
included, waits). ``load_lifted`` therefore never hands a long string to one C call:

- it walks the body's strings (``find`` for the quotes, ``STEP`` bytes at a time);
- a string of ``LIFT_CHARS`` or more must be base64 (optionally a ``data:...;base64,`` URL):
  it is decoded ``STEP`` characters at a time by ``backend.http.base64_steps`` (numpy, which
  releases the GIL while it decodes: ``binascii``, a step at a time, still held it ~10 ms of
  every step, and the event loop waited that long each time it woke up) and replaced in the
  text by a short name, its bytes kept in ``lifted`` under that name;
- what remains must fit in ``REST_BYTES`` and is parsed with ``json.loads`` (milliseconds).

Memory: the body, and the decoded bytes (3/4 of the lifted text) as they grow: about 1.75
times the body at most. A long string that is not base64 (or the rest over ``REST_BYTES``)
is refused (``LargeText``): only a recording may be large.
"""

from __future__ import annotations

import binascii
import io
import json
import mmap
import secrets
from typing import IO, Any

from backend.http.base64_steps import decode_quads

LIFT_CHARS = 64 * 1024
REST_BYTES = 1024 * 1024
STEP = 1024 * 1024  # characters searched or decoded per step
MAX_BACKSLASHES = 1024  # before a quote: more is no JSON a client means to send
_DATA_URL_HEAD = 256  # "data:audio/...;base64," is found within it
_BASE64_MARK = b";base64,"


class LargeText(ValueError):
    """A body whose large part is not a recording (base64)."""


def load_lifted(file: IO[bytes]) -> tuple[Any, dict[str, bytes]]:
    """The JSON document in ``file`` with its long strings lifted (module doc): the parsed
    document, in which each lifted string is a name, and the decoded bytes by name. Raises
    ``LargeText``, ``ValueError`` (not UTF-8, not JSON), ``RecursionError``. Blocking."""
    size = file.seek(0, 2)
    file.seek(0)
    if size <= REST_BYTES:
        text, lifted = lift(file.read())
    else:  # mapped, not read: reading 200 MB into memory holds the GIL for a while too
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            text, lifted = lift(mapped)
    return json.loads(text), lifted


def lift(raw: bytes | mmap.mmap) -> tuple[str, dict[str, bytes]]:
    """``raw`` with each long string replaced by a name, and the decoded bytes by name."""
    tag = secrets.token_hex(6)
    lifted: dict[str, bytes] = {}
    parts: list[bytes] = []
    kept = 0  # bytes of ``raw`` in ``parts``
    start = 0  # the first byte not yet in ``parts``
    at = 0
    while True:
        opening = _find_quote(raw, at)
        if opening < 0:
            break
        closing = _closing_quote(raw, opening + 1)
        if closing < 0:
            break  # unterminated: json.loads says where
        if closing - opening - 1 >= LIFT_CHARS:
            head, data = _decode(raw, opening + 1, closing)
            name = f"lifted-{tag}-{len(lifted)}"
            lifted[name] = data
            parts += [raw[start : opening + 1], head, name.encode()]
            kept += opening + 1 - start
            start = closing
        elif kept + closing - start > REST_BYTES:
            break
        at = closing + 1
    rest = kept + len(raw) - start
    if rest > REST_BYTES:
        raise LargeText(
            f"The request is {len(raw) / 1e6:.0f} MB, of which {rest / 1e6:.1f} MB or more is "
            "not a recording (base64); only a recording may be that large."
        )
    parts.append(raw[start:])
    return b"".join(parts).decode("utf-8"), lifted


def _find_quote(raw: bytes | mmap.mmap, at: int) -> int:
    """``raw.find(b'"', at)`` a window at a time: one search through a long string would
    hold the GIL (and fault the mapped file's pages in) for as long as it takes."""
    while at < len(raw):
        found = raw.find(b'"', at, at + STEP)
        if found >= 0:
            return found
        at += STEP
    return -1


def _closing_quote(raw: bytes | mmap.mmap, begin: int) -> int:
    """The index of the quote that ends the string starting at ``begin``, or -1."""
    at = begin
    while True:
        quote = _find_quote(raw, at)
        if quote < 0:
            return -1
        slashes = 0
        while quote - slashes - 1 >= begin and raw[quote - slashes - 1] == 0x5C:
            slashes += 1
            if slashes > MAX_BACKSLASHES:
                raise ValueError(f"{slashes} backslashes in a row in a string")
        if slashes % 2 == 0:
            return quote
        at = quote + 1


def _decode(raw: bytes | mmap.mmap, begin: int, end: int) -> tuple[bytes, bytes]:
    """The data-URL head (kept as text) of the long string ``raw[begin:end]`` and its base64
    decoded, a step at a time (JSON's ``\\/`` read as ``/``); ``LargeText`` when it is not
    base64."""
    head = b""
    first = raw[begin : begin + _DATA_URL_HEAD]
    if first.startswith(b"data:") and _BASE64_MARK in first:
        head = first[: first.index(_BASE64_MARK) + len(_BASE64_MARK)]
    out = io.BytesIO()  # its getvalue() hands over its buffer: no copy at the end
    carry = b""
    at = begin + len(head)
    try:
        while at < end:
            stop = min(end, at + STEP)
            if stop < end and raw[stop - 1] == 0x5C:  # never split an escape
                stop += 1
            chunk = carry + raw[at:stop]
            if b"\\" in chunk:
                chunk = chunk.replace(b"\\/", b"/")
                if b"\\" in chunk:
                    raise binascii.Error("an escape other than \\/")
            # the last group of four (maybe padded) by binascii's own strict rules
            whole = max(0, (len(chunk) - 1) // 4 * 4) if stop == end else len(chunk) // 4 * 4
            out.write(decode_quads(memoryview(chunk)[:whole]))  # numpy: without the GIL
            carry = chunk[whole:]
            at = stop
        out.write(binascii.a2b_base64(carry, strict_mode=True))
    except binascii.Error:
        raise LargeText(
            f"The request has a text of {(end - begin) / 1e6:.1f} MB that is not base64 audio; "
            "only a recording may be that large."
        ) from None
    return head, out.getvalue()
