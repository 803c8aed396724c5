"""JSON bodies that carry a recording inline, bounded in memory and parsed off the event loop.

Two routes take audio as base64 inside JSON: ``POST /v1/chat/completions`` (audio parts of the
messages) and ``POST /mcp`` (``upload_audio``'s ``data``). Such a body may be as large as the
upload limit grown by 4/3 (``backend.limits.BodyLimitMiddleware`` refuses a larger one by its
``Content-Length`` before reading it, or as soon as it crosses the limit). Read the usual way
(``await request.body()``, then ``json.loads`` on the event loop) one 190 MB body took ~500 MB
and stopped every other request for seconds; four at once from one address took 2 GB.

A body over ``SMALL_BODY`` (or of unknown length) therefore goes through ``InlineBodies.body``:

- before it is read, it is refused (429 with Retry-After) when an upload of its size would be
  (``UploadQuota.body_refusal``: the owner's and the address's upload windows, the disk), or
  when its address already has ``per_address`` such bodies in flight;
- it is written to a temporary file as it arrives: a slow client holds a file, not memory;
- it is parsed in a worker thread (``load_json``), holding at most about twice its size at
  once (its text, then the parsed string; then that string and its decoded bytes), and at
  most ``at_once`` bodies in the whole process are parsed and stored at a time; the others
  wait with their file.

Why two caps: ``at_once`` bounds the memory added by inline bodies to about ``at_once`` x 2 x
the body limit whatever the number of clients and addresses (a per-address cap alone grows
with the addresses an attacker has); ``per_address`` keeps one address from holding every
place (and filling the disk with waiting bodies), so others are not starved. Parsing is CPU
work: on a small server more than two at once would not finish sooner anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import IO, Any

from backend.limits import Refusal

SMALL_BODY = 1024 * 1024  # a body up to this size is read into memory as it is
PER_ADDRESS = 2  # larger bodies in flight at once per client address
AT_ONCE = 2  # larger bodies parsed and stored at once in the process
BUSY_RETRY_S = 5
_POLL_S = 0.02

BodyRefusal = Callable[[str, str, int | None], Refusal | None]


class BodyRefused(Exception):
    """A body refused before it was read; the front answers ``refusal`` in its own shape."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


class InlineBodies:
    """The places for large inline bodies, per address and in the process (module doc)."""

    def __init__(
        self, refusal: BodyRefusal, *, per_address: int = PER_ADDRESS, at_once: int = AT_ONCE
    ) -> None:
        self.refusal = refusal
        self.per_address = per_address
        self._slots = threading.BoundedSemaphore(at_once)
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()

    def in_flight(self, address: str) -> int:
        with self._lock:
            return self._in_flight.get(address, 0)

    def _enter(self, address: str) -> bool:
        with self._lock:
            held = self._in_flight.get(address, 0)
            if self.per_address > 0 and held >= self.per_address:
                return False
            self._in_flight[address] = held + 1
            return True

    def _leave(self, address: str) -> None:
        with self._lock:
            held = self._in_flight.get(address, 0) - 1
            if held > 0:
                self._in_flight[address] = held
            else:
                self._in_flight.pop(address, None)

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        # A thread semaphore polled from the loop: not bound to one event loop (an app may be
        # served by several over its life, as tests do), and no thread blocked while waiting.
        while not self._slots.acquire(blocking=False):
            await asyncio.sleep(_POLL_S)
        try:
            yield
        finally:
            self._slots.release()

    @contextlib.asynccontextmanager
    async def body(
        self, scope: Mapping[str, Any], chunks: AsyncIterator[bytes], owner: str, address: str
    ) -> AsyncIterator[IO[bytes]]:
        """The request's body as a file (at position 0), for the block's length; a large one
        read and handled under the caps of the module doc. Raises ``BodyRefused``."""
        length = content_length(scope)
        if length is not None and length <= SMALL_BODY:
            with await spool(chunks) as file:
                yield file
            return
        refused = await asyncio.to_thread(self.refusal, owner, address, length)
        if refused is not None:
            raise BodyRefused(refused)
        if not self._enter(address):
            raise BodyRefused(
                Refusal(
                    429,
                    f"Your network address is already sending {self.per_address} large "
                    "requests with audio; wait until one is done.",
                    retry_after=BUSY_RETRY_S,
                )
            )
        try:
            with await spool(chunks) as file:
                async with self._slot():
                    yield file
        finally:
            self._leave(address)


async def spool(chunks: AsyncIterator[bytes]) -> IO[bytes]:
    """The chunks written to a temporary file (in memory up to ``SMALL_BODY``), rewound."""
    file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SMALL_BODY)  # noqa: SIM115
    try:
        async for chunk in chunks:
            if chunk:
                file.write(chunk)
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return file


async def receive_chunks(receive: Callable[[], Any]) -> AsyncIterator[bytes]:
    """An ASGI request's body chunks (the ``receive`` of a raw ASGI app)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("the client went away while sending the request")
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def load_json(file: IO[bytes]) -> Any:
    """The JSON document in ``file``, holding at most about twice its size at once (the text,
    then the parsed values). Raises ``ValueError`` (not UTF-8, not JSON) or ``RecursionError``
    (nested too deeply). Blocking: call it in a worker thread."""
    raw = file.read()
    text = raw.decode("utf-8")
    del raw
    return json.loads(text)


def content_length(scope: Mapping[str, Any]) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return None
    return None
