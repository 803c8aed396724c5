"""A small stand-in for the Gemini REST API, close enough for the official ``google-genai`` SDK.

Serves ``POST /{version}/models/{model}:generateContent`` and ``:streamGenerateContent``
(``?alt=sse``: one ``data: {json}`` event per chunk), the Files API's resumable upload
(``POST /upload/{version}/files``: ``start``, then ``upload, finalize`` at the URL handed out
in ``x-goog-upload-url``), ``GET`` and ``DELETE /{version}/files/{id}``. Every request is
recorded; generate calls play scripted replies in order (text, thought and function-call
parts, usage metadata, or a Google-style error status).

It is strict where the real API is: every generateContent body meets the rules built from
failures users reported (``tests/fakes/gemini_rules.py``: the inline size limit, empty text
parts, function-call turn order, function responses that do not answer the calls just
before them, for Gemini 3 and later thought signatures that are missing or that Gemini
never issued, and uploaded files used while still PROCESSING or after they were deleted),
each answered with the API's own error body, and then ``google-genai``'s own request models
(``tests/fakes/shapes.py``: unknown fields, wrong enum values); so is the metadata that
starts an upload (``{"file": File}``). An uploaded file stays PROCESSING for
``processing_polls`` GETs of it, then is ACTIVE.
``GET /{version}/models`` lists the models the fake serves.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tests.fakes.gemini_replies import (  # the scripted replies, used as fg.turn(...) etc.
    Reply,
    call,
    error,
    invalid_key,
    quota_spent,
    rate_limited,
    text,
    thought,
    turn,
    usage,
)
from tests.fakes.gemini_rules import GeminiProfile
from tests.fakes.rules import rules_for
from tests.fakes.shapes import gemini_errors, gemini_file_errors

__all__ = [
    "FakeGemini", "Reply", "call", "error", "invalid_key", "quota_spent", "rate_limited",
    "text", "thought", "turn", "usage",
]  # fmt: skip


# -- the server ------------------------------------------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def raw_json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def json(self) -> Any:
        """The body as the API reads it: field names in either case, as lowerCamelCase."""
        return proto_json(self.raw_json)


# Fields holding free-form JSON (protobuf Struct): their keys are data, never renamed.
_STRUCT_FIELDS = {"args", "response", "parametersJsonSchema", "responseJsonSchema"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def proto_json(value: Any) -> Any:
    """Protobuf's JSON parser accepts ``snake_case`` and ``lowerCamelCase`` field names alike
    (the SDK sends some nested fields in snake case); normalise to camel case."""
    if isinstance(value, list):
        return [proto_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = _camel(key)
        out[name] = item if name in _STRUCT_FIELDS else proto_json(item)
    return out


class FakeGemini:
    """``app`` is the ASGI app; ``queue`` scripts replies; ``requests`` records everything."""

    def __init__(
        self,
        *,
        processing_polls: int = 0,
        require_signatures: bool = False,
        max_request_bytes: int = 20 * 1024 * 1024,
        models: list[str] | None = None,
        key: str | None = None,
    ) -> None:
        # Gemini 3+: "Function call is missing a thought_signature in functionCall parts"
        # (https://ai.google.dev/gemini-api/docs/thought-signatures)
        self.require_signatures = require_signatures
        # "Always use the Files API when the total request size ... is larger than 20 MB"
        # (https://ai.google.dev/gemini-api/docs/audio)
        self.max_request_bytes = max_request_bytes
        self.models = models  # with it set, other model ids get 404 NOT_FOUND
        self.key = key  # with it set, other keys get 400 API_KEY_INVALID
        self.requests: list[Recorded] = []
        self.refused: list[str] = []  # the ids of the rules that refused a request
        self.issued: set[bytes] = set()  # thought signatures handed out
        self.replies: deque[Reply] = deque()
        self.files: dict[str, dict[str, Any]] = {}  # id -> resource
        self.uploaded: dict[str, bytes] = {}  # id -> bytes received
        self.deleted: list[str] = []
        self.processing_polls = processing_polls  # GETs that still say PROCESSING
        self._polls: dict[str, int] = {}
        self._pending: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.app = self._build()

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    @property
    def generate_requests(self) -> list[Recorded]:
        return [r for r in self.requests if "/models/" in r.path]

    def _next_reply(self) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        return error(400, "fake Gemini server: no scripted reply left")

    async def _record(self, request: Request) -> Recorded:
        recorded = Recorded(
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=await request.body(),
        )
        with self._lock:
            self.requests.append(recorded)
        return recorded

    def _check(self, recorded: Recorded) -> Reply | None:
        """What the real generateContent refuses before generating anything."""
        profile = GeminiProfile(
            require_signatures=self.require_signatures,
            max_request_bytes=self.max_request_bytes,
            issued=self.issued,
            request_bytes=len(recorded.body),
            files={file_id: str(f.get("state")) for file_id, f in self.files.items()},
        )
        body = recorded.json or {}
        for candidate in rules_for("gemini"):
            found = candidate.check(body, profile)
            if found is not None:
                self.refused.append(found.rule)
                return Reply(status=found.status, error=found.body)
        errors = gemini_errors(body)
        if errors:
            self.refused.append("sdk_shape")
            return error(400, "Invalid JSON payload received. " + errors[0])
        return None

    def _issue(self, reply: Reply) -> None:
        """Remember the thought signatures this reply hands out (only those are valid)."""
        for chunk in reply.chunks:
            for candidate in chunk.get("candidates", []):
                for part in candidate.get("content", {}).get("parts", []):
                    if "thoughtSignature" in part:
                        self.issued.add(base64.b64decode(part["thoughtSignature"]))

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/{version}/models")
        async def list_models(version: str, request: Request) -> Response:
            recorded = await self._record(request)
            if self.key is not None and recorded.headers.get("x-goog-api-key") != self.key:
                refused = invalid_key(recorded.headers.get("x-goog-api-key", ""))
                return JSONResponse(refused.error, status_code=refused.status)
            models = [
                {
                    "name": f"models/{m}",
                    "displayName": m,
                    "supportedGenerationMethods": ["generateContent", "countTokens"],
                }
                for m in self.models or []
            ]
            return JSONResponse({"models": models})

        @app.post("/{version}/models/{target}")
        async def generate(version: str, target: str, request: Request) -> Response:
            recorded = await self._record(request)
            model, _, method = target.partition(":")
            if self.key is not None and recorded.headers.get("x-goog-api-key") != self.key:
                refused = invalid_key(recorded.headers.get("x-goog-api-key", ""))
                return JSONResponse(refused.error, status_code=refused.status)
            if self.models is not None and model not in self.models:
                refused = error(404, f"models/{model} is not found for API version {version}, "
                                "or is not supported for generateContent.")  # fmt: skip
                return JSONResponse(refused.error, status_code=404)
            if (rejected := self._check(recorded)) is not None:
                return JSONResponse(rejected.error, status_code=rejected.status)
            reply = self._next_reply()
            if reply.error is not None:
                return JSONResponse(reply.error, status_code=reply.status)
            self._issue(reply)
            if method == "streamGenerateContent":
                if request.query_params.get("alt") != "sse":
                    return JSONResponse(reply.chunks)  # a JSON array, without ?alt=sse

                async def events():  # type: ignore[no-untyped-def]
                    for chunk in reply.chunks:
                        yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()

                return StreamingResponse(events(), media_type="text/event-stream")
            if method == "generateContent":
                return JSONResponse(reply.merged())
            return JSONResponse(error(404, f"unknown method {method}").error, status_code=404)

        @app.post("/upload/{version}/files")
        async def upload(version: str, request: Request) -> Response:
            recorded = await self._record(request)
            command = recorded.headers.get("x-goog-upload-command", "")
            if command == "start":
                errors = gemini_file_errors(recorded.json or {})
                if errors:
                    self.refused.append("sdk_shape")
                    refused = error(400, "Invalid JSON payload received. " + errors[0])
                    return JSONResponse(refused.error, status_code=400)
                upload_id = f"up{next(self._ids)}"
                meta = (recorded.json or {}).get("file", {})
                self._pending[upload_id] = {
                    "mime": recorded.headers.get("x-goog-upload-header-content-type")
                    or meta.get("mimeType"),
                    "size": int(recorded.headers.get("x-goog-upload-header-content-length", 0)),
                    "display": meta.get("displayName"),
                    "data": b"",
                }
                url = f"{str(request.base_url).rstrip('/')}/upload/{version}/files"
                return Response(
                    headers={
                        "x-goog-upload-url": f"{url}?upload_id={upload_id}"
                        "&upload_protocol=resumable",
                        "x-goog-upload-status": "active",
                    }
                )
            upload_id = recorded.query.get("upload_id", "")
            pending = self._pending.get(upload_id)
            if pending is None or "upload" not in command:
                return JSONResponse(error(400, "bad upload").error, status_code=400)
            offset = int(recorded.headers.get("x-goog-upload-offset", 0))
            if offset != len(pending["data"]):
                return JSONResponse(error(400, "wrong offset").error, status_code=400)
            pending["data"] += recorded.body
            if "finalize" not in command:
                return Response(headers={"x-goog-upload-status": "active"})
            del self._pending[upload_id]
            file_id = f"file{next(self._ids)}abc"
            base = str(request.base_url).rstrip("/")
            resource = {
                "name": f"files/{file_id}",
                "mimeType": pending["mime"],
                "sizeBytes": str(len(pending["data"])),
                "createTime": "2025-01-01T00:00:00.000000Z",
                "updateTime": "2025-01-01T00:00:00.000000Z",
                "expirationTime": "2025-01-03T00:00:00.000000Z",
                "uri": f"{base}/{version}/files/{file_id}",
                "state": "PROCESSING" if self.processing_polls else "ACTIVE",
                "source": "UPLOADED",
            }
            if pending["display"]:
                resource["displayName"] = pending["display"]
            self.files[file_id] = resource
            self.uploaded[file_id] = pending["data"]
            self._polls[file_id] = self.processing_polls
            return JSONResponse({"file": resource}, headers={"x-goog-upload-status": "final"})

        @app.get("/{version}/files/{file_id}")
        async def get_file(version: str, file_id: str, request: Request) -> Response:
            await self._record(request)
            resource = self.files.get(file_id)
            if resource is None:
                return JSONResponse(error(404, "no such file").error, status_code=404)
            if self._polls.get(file_id, 0) > 0:  # still PROCESSING for this many polls
                self._polls[file_id] -= 1
            else:
                resource["state"] = "ACTIVE"
            return JSONResponse(resource)

        @app.delete("/{version}/files/{file_id}")
        async def delete_file(version: str, file_id: str, request: Request) -> Response:
            await self._record(request)
            if self.files.pop(file_id, None) is None:
                return JSONResponse(error(404, "no such file").error, status_code=404)
            self.deleted.append(f"files/{file_id}")
            return JSONResponse({})

        return app
