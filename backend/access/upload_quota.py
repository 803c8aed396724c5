"""Every byte a visitor can make the server keep, on the books: upload quotas and expiry.

Two routes store uploads: the API's ``/api/audio`` (a recording at once) and the page's
``/gradio_api/upload`` (Gradio writes the file into its cache; a recording is made of it when
a question uses it). ``UploadGuard`` sits in front of both:

- before the body is read it refuses an upload over a limit (``UploadQuota.refusal``): uploads
  per hour per owner and per client address, megabytes per hour per address, the owner's
  stored bytes (their recordings plus their page uploads not yet used), and the free disk
  space the server keeps (``AUDIO_AGENT_MIN_FREE_DISK_MB``: 507 below it);
- it counts the bytes that arrive against the address;
- for the page's route it records each file Gradio kept (``storage.upload_files``), so that it
  counts in the owner's quota until a recording is made of it, and is removed after
  ``AUDIO_AGENT_UPLOAD_TTL_HOURS`` (``backend.service.retention.expire_uploads``).

``backend.service.retention.expire_uploads`` also drops recordings uploaded through the API and
never asked about, once they are that old (``storage.cleanup.expire_unused_uploads``).

Recordings also arrive inside JSON requests: ``/v1/chat/completions`` (audio parts) and
``/mcp`` (``upload_audio``). They are one account with the upload routes: the same
``UploadQuota`` object and its address windows. Such a body's bytes count in the address's
megabytes as they arrive, a large one is refused before it is read when an upload of its size
would be (``body_refusal``), and the recording counts in the owner's and the address's
uploads when it is stored (``admit`` with the address); see ``backend.http.inline_bodies``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.access.auth import scope_owner
from backend.access.body_limits import Refusal, content_length, is_upload_path, mb_text, respond
from backend.access.clients import ClientLimits, RateWindow, client_address, wait_text
from backend.http.inline_bodies import InlineBodies
from storage.upload_files import UploadFiles

log = logging.getLogger("audio_agent.uploads")

PAGE_UPLOAD_SUFFIX = "/gradio_api/upload"
MB = 1024 * 1024


class UploadQuota:
    """Uploads per owner per hour and stored bytes per owner; with ``address_limits``, uploads
    and megabytes per hour per client address; with ``free_bytes``, the disk space kept free.
    Counts live in this process."""

    def __init__(
        self,
        per_hour: int,
        stored_bytes: int,
        stored_bytes_of: Callable[[str], int],
        clock: Callable[[], float] = time.monotonic,
        *,
        address_limits: ClientLimits | None = None,
        free_bytes: Callable[[], int] | None = None,
        min_free_bytes: int = 0,
    ) -> None:
        self.per_hour = per_hour
        self.stored_bytes = stored_bytes
        self.stored_bytes_of = stored_bytes_of
        self.clock = clock
        self.address_limits = address_limits or ClientLimits(
            uploads_per_hour=0, upload_mb_per_hour=0
        )
        self.free_bytes = free_bytes
        self.min_free_bytes = min_free_bytes
        self.address_uploads = RateWindow(3600, clock)
        self.address_bytes = RateWindow(3600, clock)
        # JSON bodies with audio inside (/v1, /mcp): refused by these same windows before
        # they are read, and bounded in memory (backend.http.inline_bodies).
        self.bodies = InlineBodies(self.body_refusal, self.address_bytes.add)
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._admit_lock = threading.Lock()

    def _recent(self, owner: str) -> deque[float]:
        times = self._times.setdefault(owner, deque())
        cutoff = self.clock() - 3600
        while times and times[0] <= cutoff:
            times.popleft()
        return times

    def refusal(
        self,
        owner: str,
        incoming_bytes: int = 0,
        address: str | None = None,
        counted: int = 0,
        transfer_bytes: int | None = None,
    ) -> Refusal | None:
        """Why ``owner`` (at ``address``) may not keep ``incoming_bytes`` more now (429 with
        Retry-After, 413, or 507), or None. ``counted``: bytes of this upload the owner's
        stored bytes already include (a page upload becoming a recording);
        ``transfer_bytes``: what the address sends (default ``incoming_bytes``)."""
        with self._lock:
            times = self._recent(owner)
            if self.per_hour > 0 and len(times) >= self.per_hour:
                wait = max(1, int(times[0] + 3600 - self.clock()) + 1)
                return Refusal(
                    429,
                    f"Upload limit reached: {self.per_hour} uploads per hour. "
                    f"Try again in {wait_text(wait)}.",
                    retry_after=wait,
                )
        if address is not None:
            sent = incoming_bytes if transfer_bytes is None else transfer_bytes
            refused = self._address_refusal(address, sent)
            if refused is not None:
                return refused
        refused = self.stored_refusal(owner, incoming_bytes, counted)
        if refused is not None:
            return refused
        if self.free_bytes is not None and self.min_free_bytes > 0:
            free = self.free_bytes()
            if free - incoming_bytes < self.min_free_bytes:
                return Refusal(
                    507,
                    f"The server is low on disk space ({mb_text(max(free, 0))} free), so it "
                    "takes no uploads for now. Try again later.",
                    retry_after=300,
                )
        return None

    def stored_refusal(self, owner: str, incoming: int, counted: int = 0) -> Refusal | None:
        """413 when ``incoming`` more bytes would take ``owner`` over the storage quota."""
        if self.stored_bytes <= 0:
            return None
        stored = max(0, self.stored_bytes_of(owner) - counted)
        if stored + incoming <= self.stored_bytes and stored < self.stored_bytes:
            return None
        return Refusal(
            413,
            f"Storage limit reached: your recordings use {mb_text(stored)} of "
            f"{mb_text(self.stored_bytes)}. Delete old conversations to make room.",
        )

    def _address_refusal(self, address: str, incoming: int) -> Refusal | None:
        limits = self.address_limits
        wait = self.address_uploads.wait_s(address, limits.uploads_per_hour)
        if wait is not None:
            return Refusal(
                429,
                f"Upload limit reached for your network address: {limits.uploads_per_hour} "
                f"uploads per hour. Try again in {wait_text(wait)}.",
                retry_after=wait,
            )
        wait = self.address_bytes.wait_s(address, limits.upload_mb_per_hour * MB, max(incoming, 1))
        if wait is not None:
            return Refusal(
                429,
                f"Upload limit reached for your network address: "
                f"{limits.upload_mb_per_hour:g} MB per hour. Try again in {wait_text(wait)}.",
                retry_after=wait,
            )
        return None

    def body_refusal(self, owner: str, address: str, length: int | None) -> Refusal | None:
        """Before a JSON body that may carry a recording (``/v1``, ``/mcp``) is read: the
        refusal an upload of its size through ``/api/audio`` would get now, or None."""
        return self.refusal(owner, 0, address, 0, length or 0)

    def record(self, owner: str) -> None:
        with self._lock:
            self._recent(owner).append(self.clock())

    def admit(
        self,
        owner: str,
        size: int,
        *,
        already_stored: bool,
        counted: int = 0,
        address: str | None = None,
    ) -> None:
        """Count an upload that is about to be decoded and stored, or raise ServiceError
        (429 with ``retry_after``, 413, 507). The same bytes again cost nothing and pass.

        ``address``: the client address of an upload that came inside a JSON request
        (``/v1``, ``/mcp``): it is checked against the address's windows too, the ones
        ``/api/audio`` and the page's upload route use, and counted in its uploads (its
        bytes were counted as they arrived, ``InlineBodies``)."""
        from backend.errors import ServiceError

        if already_stored:
            return
        with self._admit_lock:  # check and count in one step: two at once cannot both pass
            refusal = self.refusal(owner, size, address, counted, transfer_bytes=0)
            if refusal is not None:
                raise ServiceError(refusal.detail, refusal.status, retry_after=refusal.retry_after)
            self.record(owner)
            if address is not None:
                self.address_uploads.add(address)


def disk_free(path: Path) -> Callable[[], int]:
    def free() -> int:
        path.mkdir(parents=True, exist_ok=True)
        return shutil.disk_usage(path).free

    return free


class UploadGuard:
    """The quota check before an upload's body, the byte count during it, and (page route)
    the files Gradio kept, recorded for their owner. See the module doc."""

    def __init__(self, app: ASGIApp, *, quota: UploadQuota, files: UploadFiles) -> None:
        self.app = app
        self.quota = quota
        self.files = files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or scope["method"] != "POST" or not is_upload_path(path):
            await self.app(scope, receive, send)
            return
        owner = scope_owner(scope)
        if owner is None:  # login required and missing: the app answers 401
            await self.app(scope, receive, send)
            return
        address = client_address(scope)
        page_route = path.rstrip("/").endswith(PAGE_UPLOAD_SUFFIX)
        length = max(0, content_length(scope) or 0)
        # The page's route keeps the body as it is; the API's keeps a recording of it, once
        # (the same bytes again take no room), sized after decoding.
        refusal = await asyncio.to_thread(
            self.quota.refusal, owner, length if page_route else 0, address, 0, length
        )
        if refusal is not None:
            await respond(send, refusal)
            return
        self.quota.address_uploads.add(address)
        if page_route:  # the API route counts the owner's upload once it is decoded
            self.quota.record(owner)
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        if not page_route:
            try:
                await self.app(scope, counted_receive, send)
            finally:
                self.quota.address_bytes.add(address, received)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def keep_response(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            if start is not None and start["status"] == 200:
                await asyncio.to_thread(self._record, body, owner, address, received)
            await send(start or {"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": body})

        try:
            await self.app(scope, counted_receive, keep_response)
        finally:
            self.quota.address_bytes.add(address, received)

    def _record(self, body: bytes, owner: str, address: str, received: int) -> None:
        try:
            paths = [p for p in json.loads(body) if isinstance(p, str)]
        except (ValueError, TypeError):
            return
        for path in paths:
            try:
                size = os.stat(path).st_size
            except OSError:  # still being moved into the cache (another file system)
                size = received // max(1, len(paths))
            self.files.add(path, owner, size, address)
