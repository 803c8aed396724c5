"""Base64 decoded in numpy operations, which leave the GIL to the other threads while they run.

``binascii.a2b_base64`` holds the GIL for as long as it runs: a worker thread decoding a
recording in 1 MB steps still held it ~10 ms of every step, and each time another thread
(the event loop, after every socket call) wanted it back, it waited for the step to end. A
thread sleeping 1 ms beside such a decoding woke after 10 ms (median); beside this one after
1.1 ms. Here each step is a few numpy calls on whole arrays (a table lookup on pairs of
characters, shifts, a copy), and numpy releases the GIL inside each: the loop runs beside
the decoding instead of between its steps, and on one core it is as fast as ``binascii``.

The rules are ``binascii.a2b_base64(strict_mode=True)``'s: only the 64 characters of the
standard alphabet, ``=`` only as the padding of the last group of four (that last group is
left to ``binascii`` by the caller, so its padding rules are the same).
"""

from __future__ import annotations

import binascii

import numpy as np

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_INVALID = 0xFFFF


def _pair_table() -> np.ndarray:
    """Two characters (read as one little-endian uint16) -> their 12 bits, or ``_INVALID``."""
    single = np.full(256, 64, np.uint32)  # 64: not in the alphabet
    single[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint32)
    pairs = np.arange(65536, dtype=np.uint32)
    first, second = single[pairs & 0xFF], single[pairs >> 8]
    valid = (first < 64) & (second < 64)
    return np.where(valid, (first << 6) | second, _INVALID).astype(np.uint16)


_PAIRS = _pair_table()


def decode_quads(text: bytes | memoryview) -> np.ndarray:
    """Base64 ``text`` of whole groups of four characters, none of them padding, decoded
    (``uint8``, 3/4 of its length); ``binascii.Error`` for any other character. The GIL is
    released in every step that reads or writes the data."""
    if len(text) % 4:
        raise binascii.Error("not whole groups of four characters")
    twelve = np.take(_PAIRS, np.frombuffer(text, dtype="<u2"))
    if twelve.size and twelve.max() == _INVALID:  # the only value over 12 bits
        raise binascii.Error("a character outside the base64 alphabet")
    halves = twelve.reshape(-1, 2)
    words = np.empty(len(halves), dtype=">u4")  # big-endian: bytes 0, b0, b1, b2
    np.left_shift(halves[:, 0], 12, out=words, dtype=np.uint32)
    np.bitwise_or(words, halves[:, 1], out=words, dtype=np.uint32)
    return np.ascontiguousarray(words.view(np.uint8).reshape(-1, 4)[:, 1:]).reshape(-1)
