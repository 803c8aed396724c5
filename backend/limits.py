"""Limits on what a request may bring, refused early with a reason.

- ``BodyLimitMiddleware`` (pure ASGI): the size of every request body, checked from
  ``Content-Length`` before the app runs and counted while the body streams, so an upload over
  the limit is answered 413 as soon as it crosses it and is never written in full.
- ``check_title`` / ``check_question``: lengths of the text fields, the same for the API and the
  page (a ``ServiceError`` with a sentence a person can act on).
- ``UploadQuota``: uploads per owner per hour and stored bytes per owner.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Body of any other request to the page (Gradio's own JSON: inputs of one event).
PAGE_BODY_BYTES = 4 * 1024 * 1024
# Room for the multipart framing (boundaries, part headers) around an uploaded file.
MULTIPART_SLACK = 64 * 1024

UPLOAD_SUFFIXES = ("/api/audio", "/gradio_api/upload")
# JSON bodies that may carry a recording as base64: the OpenAI-compatible API and the MCP
# server (backend/openai_api.py, backend/mcp_server.py). Base64 is 4/3 of the bytes.
INLINE_UPLOAD_SUFFIXES = ("/v1/chat/completions", "/mcp")


def is_upload_path(path: str) -> bool:
    return path.rstrip("/").endswith(UPLOAD_SUFFIXES)


def is_inline_upload_path(path: str) -> bool:
    return path.rstrip("/").endswith(INLINE_UPLOAD_SUFFIXES)


def is_api_path(path: str) -> bool:
    return "/api/" in path


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str
    retry_after: int | None = None


# Called with the scope before an upload's body is read: a Refusal to answer at once, or None.
UploadGate = Callable[[Scope], Awaitable[Refusal | None]]


def _mb(n: float) -> str:
    return f"{n / 1024 / 1024:.0f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """413 with a JSON ``detail`` for a request body over its route's limit.

    Uploads (``/api/audio``, Gradio's ``/gradio_api/upload``) may bring ``upload_bytes``;
    other ``/api/`` bodies ``json_bytes``; anything else ``PAGE_BODY_BYTES``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        upload_bytes: int,
        json_bytes: int,
        page_bytes: int = PAGE_BODY_BYTES,
        upload_gate: UploadGate | None = None,
    ) -> None:
        self.app = app
        self.upload_bytes = upload_bytes
        self.json_bytes = json_bytes
        self.page_bytes = page_bytes
        self.upload_gate = upload_gate

    def limit_for(self, path: str) -> tuple[int, str]:
        if is_upload_path(path):
            return self.upload_bytes + MULTIPART_SLACK, (
                f"The upload is larger than the limit of {_mb(self.upload_bytes)}."
            )
        if is_inline_upload_path(path):
            return self.upload_bytes * 4 // 3 + MULTIPART_SLACK, (
                f"The request is larger than the limit of {_mb(self.upload_bytes)} of audio "
                "(base64-encoded in the JSON body)."
            )
        if is_api_path(path):
            return self.json_bytes, (
                f"The request body is larger than the limit of {_mb(self.json_bytes)}; "
                "shorten the question, choices or title."
            )
        return self.page_bytes, f"The request is larger than the limit of {_mb(self.page_bytes)}."

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        limit, message = self.limit_for(path)
        length = _content_length(scope)
        if length is not None and length > limit:
            await _respond(send, Refusal(413, message))
            return
        if self.upload_gate is not None and is_upload_path(path):
            refusal = await self.upload_gate(scope)
            if refusal is not None:
                await _respond(send, refusal)
                return

        received = 0
        started = False
        refused = False

        async def counted_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message_in = await receive()
            if message_in["type"] == "http.request":
                received += len(message_in.get("body", b""))
                if received > limit:
                    refused = True
                    raise _TooLarge
            return message_in

        async def guarded_send(message_out: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 has been sent; whatever the app says after it is dropped
            if message_out["type"] == "http.response.start":
                started = True
            await send(message_out)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not refused:
                raise
        if refused and not started:
            await _respond(send, Refusal(413, message))


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _respond(send: Send, refusal: Refusal) -> None:
    body = json.dumps({"detail": refusal.detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    if refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _valid_unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "the text has an invalid character (an unpaired UTF-16 surrogate such as \\ud800); "
            "send valid Unicode text"
        ) from None
    return value


# A JSON string field that can be stored and sent back: JSON allows "\ud800" alone, UTF-8 not.
Text = Annotated[str, AfterValidator(_valid_unicode)]


def _json_safe(value: object) -> object:
    """``value`` with what JSON or UTF-8 cannot carry (NaN, unpaired surrogates) made text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_json_safe(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


async def validation_error_response(_: object, exc: Exception):  # -> JSONResponse
    """FastAPI's 422 for a body that does not fit the schema, in its usual shape, but safe to
    send whatever the input held (FastAPI echoes it back: a NaN or "\\ud800" made that a 500)."""
    from fastapi.encoders import jsonable_encoder
    from fastapi.responses import JSONResponse

    errors = getattr(exc, "errors", lambda: [])()
    safe = _json_safe(jsonable_encoder(errors, custom_encoder={float: _json_safe}))
    return JSONResponse({"detail": safe}, status_code=422)


# -- text fields -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Limits:
    """Request limits (the upload size and audio length are ``Settings.max_upload_mb`` and
    ``Settings.max_audio_minutes``). 0 turns a per-owner limit off."""

    question_chars: int = 4000  # AUDIO_AGENT_MAX_QUESTION_CHARS
    choice_chars: int = 300  # AUDIO_AGENT_MAX_CHOICE_CHARS
    choices: int = 26  # AUDIO_AGENT_MAX_CHOICES
    title_chars: int = 200  # AUDIO_AGENT_MAX_TITLE_CHARS
    json_kb: float = 64  # AUDIO_AGENT_MAX_JSON_KB: any /api/ body but an upload
    uploads_per_hour: int = 60  # AUDIO_AGENT_MAX_UPLOADS_PER_HOUR, per owner
    stored_mb_per_owner: float = 2000  # AUDIO_AGENT_MAX_STORED_MB_PER_OWNER

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        default = cls()

        def get(name: str, value: float) -> float:
            raw = env.get(f"AUDIO_AGENT_{name}")
            return float(raw) if raw not in (None, "") else value

        return cls(
            question_chars=int(get("MAX_QUESTION_CHARS", default.question_chars)),
            choice_chars=int(get("MAX_CHOICE_CHARS", default.choice_chars)),
            choices=int(get("MAX_CHOICES", default.choices)),
            title_chars=int(get("MAX_TITLE_CHARS", default.title_chars)),
            json_kb=get("MAX_JSON_KB", default.json_kb),
            uploads_per_hour=int(get("MAX_UPLOADS_PER_HOUR", default.uploads_per_hour)),
            stored_mb_per_owner=get("MAX_STORED_MB_PER_OWNER", default.stored_mb_per_owner),
        )


def check_title(title: object, limits: Limits) -> str:
    """The title trimmed, or a ServiceError (422) saying what is wrong with it."""
    from backend.service import ServiceError

    if not isinstance(title, str):
        raise ServiceError("The title must be text.", status=422)
    cleaned = " ".join(title.split())
    if not cleaned:
        raise ServiceError("The title is empty; type a name for the conversation.", status=422)
    if len(cleaned) > limits.title_chars:
        raise ServiceError(
            f"The title is {len(cleaned)} characters; the limit is {limits.title_chars}.",
            status=422,
        )
    return cleaned


def check_question(question: str, choices: list[str], limits: Limits) -> None:
    """Refuse a question or choices over their limits (before anything is stored)."""
    from backend.service import ServiceError

    if len(question) > limits.question_chars:
        raise ServiceError(
            f"The question is {len(question):,} characters; the limit is "
            f"{limits.question_chars:,}. Shorten it.",
            status=422,
        )
    if len(choices) > limits.choices:
        raise ServiceError(
            f"{len(choices)} answer choices; at most {limits.choices} are allowed.", status=422
        )
    for number, choice in enumerate(choices, start=1):
        if len(choice) > limits.choice_chars:
            raise ServiceError(
                f"Answer choice {number} is {len(choice):,} characters; the limit is "
                f"{limits.choice_chars}.",
                status=422,
            )


# -- per-owner upload quota --------------------------------------------------------------------
class UploadQuota:
    """Uploads per owner in the last hour (in this process) and stored bytes per owner."""

    def __init__(
        self,
        per_hour: int,
        stored_bytes: int,
        stored_bytes_of: Callable[[str], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_hour = per_hour
        self.stored_bytes = stored_bytes
        self.stored_bytes_of = stored_bytes_of
        self.clock = clock
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, owner: str) -> deque[float]:
        times = self._times.setdefault(owner, deque())
        cutoff = self.clock() - 3600
        while times and times[0] <= cutoff:
            times.popleft()
        return times

    def refusal(self, owner: str, incoming_bytes: int = 0) -> Refusal | None:
        """Why ``owner`` may not upload now (429 with Retry-After, or 413), or None."""
        with self._lock:
            times = self._recent(owner)
            if self.per_hour > 0 and len(times) >= self.per_hour:
                wait = max(1, int(times[0] + 3600 - self.clock()) + 1)
                return Refusal(
                    429,
                    f"Upload limit reached: {self.per_hour} uploads per hour. "
                    f"Try again in {_wait_text(wait)}.",
                    retry_after=wait,
                )
        if self.stored_bytes > 0:
            stored = self.stored_bytes_of(owner)
            if stored + incoming_bytes > self.stored_bytes:
                return Refusal(
                    413,
                    f"Storage limit reached: your recordings use {_mb(stored)} of "
                    f"{_mb(self.stored_bytes)}. Delete old conversations to make room.",
                )
        return None

    def record(self, owner: str) -> None:
        with self._lock:
            self._recent(owner).append(self.clock())

    def admit(self, owner: str, size: int, *, already_stored: bool) -> None:
        """Count an upload that is about to be decoded and stored, or raise ServiceError
        (429 with ``retry_after``, or 413). The same bytes again cost nothing and pass."""
        from backend.service import ServiceError

        if already_stored:
            return
        refusal = self.refusal(owner, size)
        if refusal is not None:
            raise ServiceError(refusal.detail, refusal.status, retry_after=refusal.retry_after)
        self.record(owner)


def _wait_text(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    return f"{(seconds + 59) // 60} minutes"


def quota_gate(quota: UploadQuota, owner_of: Callable[[Scope], str]) -> UploadGate:
    """The middleware's check before an upload body is read: uploads this hour, and storage
    already full. (The size is counted after parsing: the same bytes again take no room.)"""

    async def gate(scope: Scope) -> Refusal | None:
        import asyncio

        try:
            owner = owner_of(scope)
        except Exception:  # no owner known yet (no cookie): the service checks after parsing
            return None
        return await asyncio.to_thread(quota.refusal, owner, 0)

    return gate
