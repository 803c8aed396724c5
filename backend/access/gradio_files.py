"""Gradio's routes under our rules for files: an event names only files its caller uploaded,
and Gradio's file route serves only Gradio's own assets and the caller's own files.

Why: the page is a Gradio app *mounted* on FastAPI. Gradio checks the files an event names
(only files of its upload folder, ``processing_utils._check_allowed``) only once its Blocks
has been ``launch()``ed, and a mounted one never is. So a FileData naming any file on the
server's disk (``POST /gradio_api/call/attach`` with ``{"path": "/proc/self/environ", "meta":
{"_type": "gradio.FileData"}}``) was copied into Gradio's cache and handed to the handler:
another visitor's recording became the caller's, secrets and large files landed in the cache,
and an http(s) "path" was downloaded from its host. Gradio's file route
(``/gradio_api/file=<path or URL>``) serves any file of its cache to whoever names it (another
visitor's upload) and fetches any public URL for anybody.

``GradioFileGuard`` stands in front of every mounted Gradio app (the page at ``/``, the share
view at ``/view``; a route is whatever follows ``/gradio_api/``):

- **Events** (``queue/join``, ``call[/v2]/<name>``, ``run/<name>``, ``api/<name>``,
  ``stream/<event id>``, ``component_server``): every file reference of the body
  (``backend.access.gradio_inputs``: found from the Blocks' event functions and component types)
  must name, by the exact path the upload route returned, a file ``/gradio_api/upload`` kept for
  this owner (``storage.upload_files``, recorded by ``backend.access.upload_quota.UploadGuard``),
  inside Gradio's upload folder, with no URL but the file route's own for that path. Anything else:
  403 with a JSON ``detail``, before Gradio reads or copies a byte.
- **Files** (``file=<...>``, ``file/<...>``): never a URL; a path only if Gradio serves it as
  a static file, or the caller uploaded it, or Gradio handed it to this owner in an event's
  output (seen here on its way out: ``queue/data``, ``call/<name>/<event id>``, ``run``,
  ``api``). ``proxy=`` (Gradio relaying an app loaded with ``gr.load``, which we never do):
  refused.
- **Unused routes** that take bytes outside every quota or run a program on them
  (``process_recording``: a video kept in the temp folder and run through ffmpeg): 404.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import unquote, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.access.auth import scope_owner
from backend.access.body_limits import Refusal, respond
from backend.access.gradio_inputs import FILE_DATA, BlocksFiles, FnFiles, file_refs
from backend.access.gradio_sessions import read_body
from storage.upload_files import UploadFiles

API = "/gradio_api/"
MAX_OUTPUTS = 100_000  # (owner, path) pairs of outputs remembered, least recently used go
PARSE_OFF_LOOP_BYTES = 256 * 1024

# Event routes (after /gradio_api/): how each names its function, as Gradio's get_fn reads it.
JOIN = re.compile(r"queue/join/?$")
CALL_V2 = re.compile(r"call/v2/([^/]+)/?$")
CALL = re.compile(r"call/([^/]+)/?$")
RUN = re.compile(r"(?:run|api)/([^/]+)/?$")
UNNAMED = re.compile(r"(?:stream/[^/]+|component_server)/?$")
# Routes whose answer carries an event's outputs.
OUTPUTS = re.compile(r"(?:queue/data|call/(?:v2/)?[^/]+/[^/]+|(?:run|api)/[^/]+)/?$")
FILE_ROUTE = re.compile(r"file[=/](.*)$", re.DOTALL)
# Gradio's routes this app's pages never use that would take a visitor's bytes outside every
# quota or run a program on them: ``process_recording`` (a screen recording's video, kept in
# the temp folder and run through ffmpeg).
UNUSED = re.compile(r"process_recording/?$")

NOT_UPLOADED = Refusal(
    403,
    "Only a file you uploaded from this page can be used here: upload it first (the "
    "server takes no path on its disk and no file of anybody else).",
)
NOT_OFFERED = Refusal(404, "This app takes no video: upload audio from the page instead.")
NO_URL = Refusal(403, "This server fetches nothing from other sites: upload the file instead.")
NOT_YOURS = Refusal(
    403, "File not allowed: only your own uploads and what the page made for you are served."
)


class Outputs:
    """(owner, path) of the files Gradio handed to each owner in an event's output."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, owner: str, path: str) -> None:
        key = (owner, os.path.abspath(path))
        with self._lock:
            self._seen[key] = None
            self._seen.move_to_end(key)
            while len(self._seen) > MAX_OUTPUTS:
                self._seen.popitem(last=False)

    def __contains__(self, item: tuple[str, str]) -> bool:
        with self._lock:
            return item in self._seen


class GradioFileGuard:
    """See the module doc."""

    def __init__(self, app: ASGIApp, *, files: UploadFiles) -> None:
        self.app = app
        self.files = files
        self.outputs = Outputs()
        self._blocks: dict[str, BlocksFiles] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or API not in path:
            await self.app(scope, receive, send)
            return
        mount, _, route = _route_path(scope).partition(API)
        owner = scope_owner(scope)  # None (login required, missing): nothing is theirs
        method = scope["method"]
        if route.startswith("proxy="):
            await respond(send, NO_URL)
            return
        if UNUSED.match(route):
            await respond(send, NOT_OFFERED)
            return
        if (found := FILE_ROUTE.match(route)) and method in ("GET", "HEAD"):
            refusal = await self.file_refusal(found.group(1), owner)
            if refusal is not None:
                await respond(send, refusal)
                return
        elif method == "POST" and _is_event(route):
            body, receive = await read_body(receive)
            refusal = await self.event_refusal(scope, mount, route, body, owner)
            if refusal is not None:
                await respond(send, refusal)
                return
        if owner is not None and OUTPUTS.match(route):
            send = self._recording_outputs(send, owner)
        await self.app(scope, receive, send)

    # -- events ---------------------------------------------------------------------------------
    async def event_refusal(
        self, scope: Scope, mount: str, route: str, body: bytes, owner: str | None
    ) -> Refusal | None:
        try:
            data = await _parse(body)
        except ValueError:
            return None  # not JSON: Gradio refuses it without reading any file
        blocks = self._files_of(scope, mount)
        named = False
        fn: FnFiles | None = None
        if JOIN.match(route):
            fn = blocks.find(_get(data, "fn_index"), None) if blocks else None
        elif m := CALL_V2.match(route):
            named, fn = True, blocks.find(None, m.group(1)) if blocks else None
        elif m := CALL.match(route):
            fn = blocks.find(None, m.group(1)) if blocks else None
        elif m := RUN.match(route):  # Gradio takes the body's fn_index before the name
            fn_index = _get(data, "fn_index")
            name = None if fn_index is not None else m.group(1)
            fn = blocks.find(fn_index, name) if blocks else None
        for ref in file_refs(data, fn, named=named):
            refusal = await self.ref_refusal(ref, owner)
            if refusal is not None:
                return refusal
        return None

    async def ref_refusal(self, ref: Any, owner: str | None) -> Refusal | None:
        if not isinstance(ref, dict):  # a bare string where a file goes
            return NO_URL if _is_url(str(ref)) else NOT_UPLOADED
        path, url = ref.get("path"), ref.get("url")
        if not isinstance(path, str) or _is_url(path):
            return NO_URL
        if url not in (None, "") and not _names_file_route(url, path):
            return NO_URL
        if not await self.uploaded(path, owner):
            return NOT_UPLOADED
        return None

    async def uploaded(self, path: str, owner: str | None) -> bool:
        """Whether ``path`` is, exactly, a file the upload route kept for ``owner``."""
        if owner is None or not os.path.isabs(path) or os.path.normpath(path) != path:
            return False
        from gradio.utils import get_upload_folder

        folder = os.path.realpath(get_upload_folder())
        if not os.path.realpath(path).startswith(folder + os.sep):
            return False
        return await asyncio.to_thread(self.files.owns, path, owner)

    def _files_of(self, scope: Scope, mount: str) -> BlocksFiles | None:
        """The file inputs of the Gradio app mounted at ``mount`` (read once)."""
        if mount not in self._blocks:
            blocks = _mounted_blocks(scope.get("app"), mount)
            if blocks is None:
                return None
            self._blocks[mount] = BlocksFiles.of(blocks)
        return self._blocks[mount]

    # -- the file route -------------------------------------------------------------------------
    async def file_refusal(self, target: str, owner: str | None) -> Refusal | None:
        if _is_url(target):
            return NO_URL
        from gradio.utils import is_static_file

        if is_static_file(target):
            return None
        if owner is not None and (owner, os.path.abspath(target)) in self.outputs:
            return None
        if await self.uploaded(target, owner):
            return None
        return NOT_YOURS

    def _recording_outputs(self, send: Send, owner: str) -> Send:
        """The files in an event's outputs (SSE ``data:`` lines or a JSON body): the owner's."""
        pending = bytearray()
        marker = FILE_DATA.encode()

        def note(text: bytes) -> None:
            if marker not in text:
                return
            try:
                value = json.loads(text)
            except ValueError:
                return
            for ref in file_refs({"outputs": value}, None):
                if isinstance(ref, dict) and isinstance(ref.get("path"), str):
                    self.outputs.add(owner, ref["path"])

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.body":
                pending.extend(message.get("body", b""))
                *lines, rest = bytes(pending).split(b"\n")
                pending[:] = rest
                for line in lines:
                    note(line[5:] if line.startswith(b"data:") else line)
                if not message.get("more_body"):
                    note(bytes(pending))
                    pending.clear()
            await send(message)

        return watch


def _is_event(route: str) -> bool:
    return any(p.match(route) for p in (JOIN, CALL_V2, CALL, RUN, UNNAMED))


def _route_path(scope: Scope) -> str:
    """The path without the app's root path (as Starlette's routing reads it)."""
    path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def _mounted_blocks(app: Any, mount: str) -> Any:
    for route in getattr(app, "routes", []):
        inner = getattr(route, "app", None)
        if getattr(route, "path", None) == mount.rstrip("/") and hasattr(inner, "get_blocks"):
            return inner.get_blocks()
    return None


def _is_url(text: str) -> bool:
    """Anything Gradio would fetch (or a scheme it might learn): ``scheme://``, ``//host``."""
    return "://" in text or text.startswith("//") or bool(re.match(r"[A-Za-z][\w+.-]*:", text))


def _names_file_route(url: Any, path: str) -> bool:
    """Whether ``url`` is the file route's URL of ``path`` (what the page sends along)."""
    if not isinstance(url, str):
        return False
    parts = urlsplit(url)
    return parts.scheme in ("", "http", "https") and unquote(parts.path).endswith(
        "/gradio_api/file=" + path
    )


def _get(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


async def _parse(body: bytes) -> Any:
    if len(body) > PARSE_OFF_LOOP_BYTES:
        return await asyncio.to_thread(json.loads, body)
    return json.loads(body)
