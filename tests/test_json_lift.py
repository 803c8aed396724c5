"""``backend.http.json_lift`` decodes a long base64 string in steps, with numpy
(``backend.http.base64_steps``, which releases the GIL): the bytes and the refusals must be
``binascii.a2b_base64(strict_mode=True)``'s, whatever the steps' boundaries."""

from __future__ import annotations

import base64
import binascii
import io
import json
import os

import pytest

from backend.http import json_lift
from backend.http.base64_steps import decode_quads
from backend.http.json_lift import LargeText, load_lifted


def body(text: str) -> io.BytesIO:
    return io.BytesIO(json.dumps({"model": "m", "audio": {"data": text}}).encode())


@pytest.fixture(params=[1024, 4096 + 3])  # steps that split groups of four, and whole ones
def small_steps(request, monkeypatch):
    monkeypatch.setattr(json_lift, "LIFT_CHARS", 1000)
    monkeypatch.setattr(json_lift, "STEP", request.param)


@pytest.mark.parametrize("size", [3000, 3001, 3002, 12_345])  # padding: none, "==", "="
@pytest.mark.parametrize("head", ["", "data:audio/wav;base64,"])
def test_the_bytes_are_binascii_s(small_steps, size, head):
    raw = os.urandom(size)
    text = head + base64.b64encode(raw).decode()
    document, lifted = load_lifted(body(text))
    name = document["audio"]["data"].removeprefix(head)
    assert document["audio"]["data"].startswith(head)
    assert lifted[name] == raw

    escaped = json.dumps({"audio": text}).replace("/", "\\/").encode()  # JSON's "\/"
    document, lifted = load_lifted(io.BytesIO(escaped))
    assert lifted[document["audio"].removeprefix(head)] == raw


@pytest.mark.parametrize(
    "spoil",
    [
        lambda t: t[:1500] + "=" + t[1501:],  # padding in the middle
        lambda t: t[:2000] + "\\n" + t[2000:],  # a newline (JSON's escape)
        lambda t: t[:2500] + "-" + t[2501:],  # URL-safe alphabet
        lambda t: t + "A",  # not whole groups of four
        lambda t: t[:-4] + "A===",  # too much padding
        lambda t: t + "=",  # data after the padding
    ],
)
def test_what_binascii_refuses_is_refused(small_steps, spoil):
    text = spoil(base64.b64encode(os.urandom(3001)).decode())
    with pytest.raises(binascii.Error):
        binascii.a2b_base64(text.replace("\\n", "\n").encode(), strict_mode=True)
    with pytest.raises(LargeText):
        load_lifted(body(text.replace("\\n", "\n")))


def test_decode_quads_takes_only_the_alphabet():
    raw = bytes(range(256)) * 3
    assert decode_quads(base64.b64encode(raw)).tobytes() == raw
    assert decode_quads(b"").tobytes() == b""
    for bad in (b"AB=A", b"AB A", b"ABC", b"AAA\x80", b"AAA_"):
        with pytest.raises(binascii.Error):
            decode_quads(bad)
