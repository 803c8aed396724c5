"""JSON bodies that carry a recording inline, bounded in memory and parsed off the event loop.

Two routes take audio as base64 inside JSON: ``POST /v1/chat/completions`` (audio parts of the
messages) and ``POST /mcp`` (``upload_audio``'s ``data``). Such a body may be as large as the
upload limit grown by 4/3 (``backend.access.body_limits.BodyLimitMiddleware`` refuses a larger one
by its ``Content-Length`` before reading it, or as soon as it crosses the limit). Read the usual way
(``await request.body()``, then ``json.loads`` on the event loop) one 190 MB body took ~500 MB
and stopped every other request for seconds; four at once from one address took 2 GB.

A body over ``SMALL_BODY`` (or of unknown length) therefore goes through ``InlineBodies.body``:

- before it is read, it is refused (429 with Retry-After) when an upload of its size would be
  (``UploadQuota.body_refusal``: the owner's and the address's upload windows, the disk), or
  when its address already has ``per_address`` such bodies in flight;
- its bytes count in the address's upload megabytes (``count``), whatever it turns out to
  hold: a body that is not a recording still took the server's time;
- it is written to a temporary file as it arrives: a slow client holds a file, not memory;
- it is parsed in a worker thread by ``backend.http.json_lift`` (its long base64 strings decoded
  a step at a time, so that no single call holds the GIL for long and the event loop keeps
  answering), holding at most about 1.75 times its size at once (the mapped file and the
  decoded bytes); at most ``at_once`` bodies in the whole process are parsed and stored at a
  time, and the others wait with their file.

Why two caps: ``at_once`` bounds the memory added by inline bodies to about ``at_once`` x 1.75
x the body limit (plus the decoding of each recording, bounded by its length) whatever the
number of clients and addresses: a per-address cap alone grows with the addresses an attacker
has. ``per_address`` (below ``at_once``) keeps one address from holding every place and from
filling the disk with waiting bodies; beyond it a client waits a few seconds (Retry-After),
which the OpenAI SDK does by itself. Parsing is CPU work: on a small server more at once would
not finish sooner anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import IO, Any

from backend.access.body_limits import Refusal, content_length

SMALL_BODY = 1024 * 1024  # a body up to this size is read into memory as it is
PER_ADDRESS = 2  # larger bodies in flight at once per client address
AT_ONCE = 3  # larger bodies parsed and stored at once in the process
BUSY_RETRY_S = 5
_POLL_S = 0.02

BodyRefusal = Callable[[str, str, int | None], Refusal | None]


class BodyRefused(Exception):
    """A body refused before it was read; the front answers ``refusal`` in its own shape."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


class ClientGone(Exception):
    """The client closed the connection before its body was complete."""


class InlineBodies:
    """The places for large inline bodies, per address and in the process (module doc)."""

    def __init__(
        self,
        refusal: BodyRefusal,
        count: Callable[[str, int], None],
        *,
        per_address: int = PER_ADDRESS,
        at_once: int = AT_ONCE,
    ) -> None:
        self.refusal = refusal
        self.count = count  # bytes an address sent, into its upload window
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
                self.count(address, file.seek(0, 2))
                file.seek(0)
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
                self.count(address, file.seek(0, 2))  # what was sent, whatever it holds
                file.seek(0)
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
            raise ClientGone("the client went away while sending the request")
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return
