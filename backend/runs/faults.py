"""Faults of the server itself, told as a person can act on them: a full disk, a database
that cannot be written, a bug.

``describe(exc)`` gives the HTTP status, the ``run_failed`` kind and a sentence; the API's
exception handlers (``install``) answer with it in the API's JSON shape
(``{"detail": ...}``) instead of a plain-text 500, and the run manager ends a run whose
events can no longer be stored with it (``backend.runs.manager``).
"""

from __future__ import annotations

import errno
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("audio_agent.faults")

DISK_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
DISK_FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota")


@dataclass(frozen=True)
class Fault:
    status: int
    kind: str  # of the run_failed event
    message: str


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_disk_full(exc: BaseException) -> bool:
    for item in _chain(exc):
        if isinstance(item, OSError) and item.errno in DISK_FULL_ERRNOS:
            return True
        if any(word in str(item).lower() for word in DISK_FULL_WORDS):
            return True
    return False


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An error told in one short line for the log (a database error's text goes on with its
    SQL and every parameter: kilobytes per line)."""
    text = str(exc)
    return text.splitlines()[0][:limit] if text.strip() else type(exc).__name__


def describe(exc: BaseException) -> Fault:
    if is_disk_full(exc):
        return Fault(
            507,
            "storage_full",
            "The server's disk is full, so nothing more can be stored right now. Nothing "
            "you sent was half-stored; try again later (the operator has been told in the "
            "log).",
        )
    from sqlalchemy.exc import SQLAlchemyError

    if any(isinstance(item, SQLAlchemyError) for item in _chain(exc)):
        return Fault(
            503,
            "storage_error",
            f"The server's database could not be used ({first_line(exc)}). Try again in a moment.",
        )
    return Fault(
        500,
        "internal_error",
        f"The server failed on this request ({type(exc).__name__}); it has been logged. "
        "Try again, and report it if it keeps happening.",
    )


def install(app: Any) -> None:
    """JSON answers (``{"detail"}``) for faults the routes did not handle: a full disk and
    database errors (logged here), anything else (logged by the server as well)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from sqlalchemy.exc import SQLAlchemyError

    async def handler(request: Request, exc: Exception) -> JSONResponse:
        fault = describe(exc)
        if fault.status != 500:
            log.error("%s %s: %s (%s)", request.method, request.url.path, fault.kind, exc)
        headers = {"Retry-After": "60"} if fault.status in (503, 507) else None
        return JSONResponse({"detail": fault.message}, status_code=fault.status, headers=headers)

    app.add_exception_handler(OSError, handler)
    app.add_exception_handler(SQLAlchemyError, handler)
    app.add_exception_handler(Exception, handler)
