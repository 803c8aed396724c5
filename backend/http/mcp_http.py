"""The ``/mcp`` route in front of the SDK's streamable HTTP session manager: what reaches it.

- ``GET /mcp`` is answered 405 (``Allow: POST``). The server is stateless (every POST stands
  alone), so a standalone event stream could never carry a message: the SDK kept it open
  forever with a ping every 15 s, a connection held for nothing. The MCP specification lets a
  server without that stream answer 405, and the SDK's client then goes on without it.
- A POST body up to ``SMALL_BODY`` goes to the SDK as it is. A larger one can only be an
  ``upload_audio`` call with its ``data`` (the one argument that may be large): it is read
  within the bounds of ``backend.http.inline_bodies`` (refused before it is read when its
  address's upload windows cannot take it or the address already sends two; written to a
  file as it arrives; parsed in a worker thread, its base64 decoded a step at a time by
  ``backend.http.json_lift``, so the event loop keeps answering meanwhile), and the SDK gets
  the same call with ``data`` replaced by ``STAGED``, the decoded bytes waiting in the
  request's scope (``STAGED_KEY``) for ``upload_audio``. The SDK would read a large body
  into memory three times over and parse it on the event loop. Any other large body is
  refused (413), as is JSON that cannot be read (400), in JSON-RPC's error shape; so is a
  large body refused before it is read (429 with Retry-After): its request id is not known
  yet, so it cannot be a tool's error. The same limits met by a small ``upload_audio`` are
  the tool's error (``backend.http.mcp_server``).
- Every POST's bytes count in its address's upload megabytes, as ``/api/audio``'s do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

from starlette.types import Receive, Scope, Send

from backend.access.auth import scope_owner
from backend.access.body_limits import Refusal, content_length, replaying
from backend.access.clients import client_address
from backend.http.inline_bodies import (
    SMALL_BODY,
    BodyRefused,
    ClientGone,
    InlineBodies,
    receive_chunks,
)
from backend.http.json_lift import LargeText, load_lifted

UPLOAD = "upload_audio"
STAGED = "(staged)"  # upload_audio's data when the bytes wait in the scope (not base64)
STAGED_KEY = "audio_agent.mcp_staged_audio"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
SERVER_ERROR = -32000


class McpEndpoint:
    """The ``/mcp`` route: a fresh session manager for each run of the app (the SDK's manager
    runs once per instance; an app started again, as tests do, needs a new one); GET and
    large bodies handled as the module doc says. ``bodies``: the process's
    ``InlineBodies`` (``UploadQuota.bodies``), shared with ``/v1``."""

    def __init__(self, make: Callable[[], Any], bodies: InlineBodies) -> None:
        self._make = make
        self._manager: Any = None
        self.bodies = bodies

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        self._manager = self._make()
        async with self._manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            raise RuntimeError("the MCP endpoint is served only while the app runs")
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            message = "This server keeps no event stream open: send each request as a POST."
            await respond(send, 405, message, INVALID_REQUEST, {"allow": "POST"})
            return
        length = content_length(scope)
        owner = scope_owner(scope)
        small = length is not None and length <= SMALL_BODY
        if scope["type"] != "http" or scope["method"] != "POST" or small or owner is None:
            if small and owner is not None:  # its bytes in the address's upload window
                self.bodies.count(client_address(scope), length or 0)
            await self._manager.asgi_app(scope, receive, send)
            return
        try:
            async with self.bodies.body(
                scope, receive_chunks(receive), owner, client_address(scope)
            ) as file:
                await self._large(file, scope, receive, send)
        except BodyRefused as exc:
            await respond_refusal(send, exc.refusal)
        except ClientGone:
            return  # nobody to answer

    async def _large(self, file: IO[bytes], scope: Scope, receive: Receive, send: Send) -> None:
        staged: bytes | None = None
        try:
            if file.seek(0, 2) <= SMALL_BODY:  # sent without a length, and small: as it is
                file.seek(0)
                body = file.read()
            else:
                file.seek(0)
                body, staged = await asyncio.to_thread(stage_upload, file)
        except (NotAnUpload, LargeText) as exc:
            await respond(send, 413, str(exc), INVALID_REQUEST)
            return
        except RecursionError:
            await respond(send, 400, "Parse error: JSON nested too deeply.", PARSE_ERROR)
            return
        except ValueError as exc:
            await respond(send, 400, f"Parse error: {exc}", PARSE_ERROR)
            return
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        inner = {**scope, "headers": headers, STAGED_KEY: staged}
        await self._manager.asgi_app(inner, replaying(body, receive), send)


class NotAnUpload(Exception):
    pass


def stage_upload(file: IO[bytes]) -> tuple[bytes, bytes | None]:
    """The ``upload_audio`` call in ``file`` with its ``data`` replaced by ``STAGED``, and the
    decoded bytes (``backend.http.json_lift``: never the whole body in one call holding the GIL).
    Raises ``NotAnUpload``, ``LargeText``, ValueError (not JSON), RecursionError. Blocking:
    call it in a worker thread."""
    message, lifted = load_lifted(file)
    params = message.get("params") if isinstance(message, dict) else None
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if not (
        isinstance(params, dict)
        and isinstance(arguments, dict)
        and message.get("method") == "tools/call"
        and params.get("name") == UPLOAD
        and isinstance(arguments.get("data"), str)
        and arguments["data"] in lifted
    ):
        raise NotAnUpload(
            f"The request body is larger than {SMALL_BODY // 1024} KB: only upload_audio's "
            "data (a recording, base64) may be that large."
        )
    staged = lifted.pop(arguments["data"])
    arguments["data"] = STAGED
    return json.dumps(message).encode(), staged


async def respond(
    send: Send, status: int, text: str, code: int, headers: dict[str, str] | None = None
) -> None:
    """An HTTP error with a JSON-RPC error body (``id`` null: the request's was not read), as
    the SDK answers its own; its client raises it with this message."""
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}})
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body.encode()})


async def respond_refusal(send: Send, refusal: Refusal) -> None:
    """A refusal before the body was read: the connection closes rather than drain it."""
    headers = {"connection": "close"}
    if refusal.retry_after:
        headers["retry-after"] = str(refusal.retry_after)
    await respond(send, refusal.status, refusal.detail, SERVER_ERROR, headers)
