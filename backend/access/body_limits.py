"""Limits on what a request may bring, refused early with a reason.

- ``BodyLimitMiddleware`` (pure ASGI): the size of every request body, checked from
  ``Content-Length`` before the app runs and counted while the body streams, so an upload over
  the limit is answered 413 as soon as it crosses it and is never written in full.
- ``check_title`` / ``check_question``: lengths of the text fields, the same for the API and the
  page (a ``ServiceError`` with a sentence a person can act on).
- ``BodyPace``: a body that stops, or trickles in, is answered 408 (slow clients hold no
  connection for long).

Upload quotas (per owner, per address) are ``backend.access.upload_quota``.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.errors import ServiceError

# Body of any other request to the page (Gradio's own JSON: inputs of one event).
PAGE_BODY_BYTES = 4 * 1024 * 1024
# Room for the multipart framing (boundaries, part headers) around an uploaded file.
MULTIPART_SLACK = 64 * 1024

UPLOAD_SUFFIXES = ("/api/audio", "/gradio_api/upload")
# JSON bodies that may carry a recording as base64: the OpenAI-compatible API and the MCP
# server (backend/http/openai_api.py, backend/http/mcp_server.py). Base64 is 4/3 of the bytes. How
# they are read (to a file, parsed off the event loop, a bounded number at once): inline_bodies.
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


def mb_text(n: float) -> str:
    return f"{n / 1024 / 1024:.0f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


@dataclass(frozen=True)
class BodyPace:
    """How fast a request body must arrive: a pause of ``idle_s`` ends it, and after its
    first ``idle_s`` it must average ``min_bytes_per_s`` (a 200 MB upload over a slow
    mobile link passes; a body trickling a byte every few seconds does not)."""

    idle_s: float = 30.0
    min_bytes_per_s: float = 8 * 1024

    def deadline(self, started: float, last: float, received: int) -> float:
        """When the next chunk must have arrived by (monotonic seconds)."""
        return min(last + self.idle_s, started + self.idle_s + received / self.min_bytes_per_s)

    def refusal(self, received: int, seconds: float) -> Refusal:
        return Refusal(
            408,
            f"The request body arrived too slowly ({mb_text(received)} in {seconds:.0f} s; at "
            f"least {self.min_bytes_per_s / 1024:g} KB/s and no pause over {self.idle_s:g} s). "
            "Check the connection and send it again.",
        )


class BodyLimitMiddleware:
    """413 with a JSON ``detail`` for a request body over its route's limit, 408 for one
    slower than ``pace``.

    Uploads (``/api/audio``, Gradio's ``/gradio_api/upload``) may bring ``upload_bytes``;
    other ``/api/`` bodies ``json_bytes``; anything else ``PAGE_BODY_BYTES``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        upload_bytes: int,
        json_bytes: int,
        page_bytes: int = PAGE_BODY_BYTES,
        pace: BodyPace | None = None,
    ) -> None:
        self.app = app
        self.upload_bytes = upload_bytes
        self.json_bytes = json_bytes
        self.page_bytes = page_bytes
        self.pace = pace or BodyPace()

    def limit_for(self, path: str) -> tuple[int, str]:
        if is_upload_path(path):
            return self.upload_bytes + MULTIPART_SLACK, (
                f"The upload is larger than the limit of {mb_text(self.upload_bytes)}."
            )
        if is_inline_upload_path(path):
            return self.upload_bytes * 4 // 3 + MULTIPART_SLACK, (
                f"The request is larger than the limit of {mb_text(self.upload_bytes)} of audio "
                "(base64-encoded in the JSON body)."
            )
        if is_api_path(path):
            return self.json_bytes, (
                f"The request body is larger than the limit of {mb_text(self.json_bytes)}; "
                "shorten the question, choices or title."
            )
        return self.page_bytes, (
            f"The request is larger than the limit of {mb_text(self.page_bytes)}."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        limit, message = self.limit_for(path)
        length = content_length(scope)
        if length is not None and length > limit:
            await respond(send, Refusal(413, message))
            return

        pace = self.pace
        clock = asyncio.get_running_loop().time
        received = 0
        started_at: float | None = None
        last_at = 0.0
        body_done = False
        response_started = False
        refusal: Refusal | None = None

        async def counted_receive() -> Message:
            nonlocal received, refusal, started_at, last_at, body_done
            if refusal is not None:
                return {"type": "http.disconnect"}
            if body_done:  # e.g. a streamed response listening for the disconnect
                return await receive()
            now = clock()
            if started_at is None:
                started_at = last_at = now
            wait = pace.deadline(started_at, last_at, received) - now
            try:
                if wait <= 0:
                    raise TimeoutError
                message_in = await asyncio.wait_for(receive(), wait)
            except TimeoutError:
                refusal = pace.refusal(received, clock() - started_at)
                raise _Refused(refusal) from None
            if message_in["type"] == "http.request":
                last_at = clock()
                received += len(message_in.get("body", b""))
                body_done = not message_in.get("more_body", False)
                if received > limit:
                    refusal = Refusal(413, message)
                    raise _Refused(refusal)
            return message_in

        async def guarded_send(message_out: Message) -> None:
            nonlocal response_started
            if refusal is not None:
                return  # the refusal has been sent; whatever the app says after it is dropped
            if message_out["type"] == "http.response.start":
                response_started = True
            await send(message_out)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if refusal is None:
                raise
        if refusal is not None and not response_started:
            await respond(send, refusal)


def content_length(scope: Mapping[str, Any]) -> int | None:
    """A request's ``Content-Length`` (None: not given, or not a number)."""
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` whole (read already), then what ``receive`` gives
    (the disconnect, when it comes)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def respond(send: Send, refusal: Refusal) -> None:
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
