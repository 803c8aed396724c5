"""The MCP server: the audio tools and the whole agent for agents that speak MCP.

Tools (``tools/list``):

- ``upload_audio``: store a recording (base64 bytes, the URL of an earlier upload, or over
  stdio a local file path); returns its ``audio_id``;
- every available tool of the catalogue (transcribe, speech_activity, sound_events,
  music_analysis, signal_stats, speakers, clip, the configured remote audio models) and
  ``ask_audio`` (through the first configured audio-language model, else the local tools),
  each with its own parameters plus ``audio``;
- ``answer_audio_question(audio, question, choices?, preset?)``: the whole agent; returns the
  answer, its confidence, whether it is a best guess, and a link to the trace.

Each call is a stored run in the caller's history (``backend.http.client_runs``), admitted like a
question from the page: the same owners, tokens and limits as the API. While a run goes, each
tool call is reported as progress (``notifications/progress``) as it starts and as it ends.

Why the official ``mcp`` SDK (its low-level ``Server``, served at ``/mcp`` on the FastAPI app)
and not Gradio 6's ``mcp_server``: Gradio derives tools from the page's event handlers
(``/gradio_api/mcp/``, not ``/mcp``) and their docstrings, while these tools are the
catalogue's, with JSON schemas known only at start-up; the SDK serves the same ``Server``
over stdio for desktop clients (``backend.http.mcp_stdio``); progress goes out per tool call; and
the app's own middleware (owner cookie or bearer token, body limits, Host check) applies to
``/mcp`` as to every other route, with no second auth layer.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from agent import events as ev
from backend.errors import ServiceError
from backend.http import client_runs
from backend.http.client_runs import RunOutcome, Started, owned_audio
from backend.http.mcp_http import STAGED, STAGED_KEY, UPLOAD, McpEndpoint
from backend.http.model_names import UnknownModel, available_models, resolve_model
from backend.service import AgentService
from storage.schemas import AudioInfo

SERVER_NAME = "ask-about-audio"
ANSWER = "answer_audio_question"
AUDIO_PARAM = {
    "type": "string",
    "description": "The recording: the audio_id that upload_audio returned (or its URL).",
}


@dataclass(frozen=True)
class Caller:
    """Who calls: the owner of the runs, where the app serves their traces, the client; over
    HTTP its network address (uploads count in its windows, as through ``/api/audio``) and
    the recording of a large ``upload_audio`` call, decoded already (``backend.http.mcp_http``)."""

    owner: str
    base_url: str
    client: str = "an MCP client"
    address: str | None = None
    staged: bytes | None = field(default=None, repr=False)


Identify = Callable[[ServerRequestContext[Any, Any]], Caller]


class AudioMcp:
    """The tools and their handlers; ``server`` is what a transport serves."""

    def __init__(self, service: AgentService, identify: Identify, *, local_files: bool = False):
        self.service = service
        self.identify = identify
        self.local_files = local_files  # upload_audio(path=...): only where the files are ours
        self.server: Server[Any] = Server(
            SERVER_NAME,
            title="Ask about audio",
            instructions=(
                "Upload a recording with upload_audio, then ask about it with "
                "answer_audio_question (the whole agent) or call a single audio tool on it."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- tools/list ----------------------------------------------------------------------------
    def schemas(self) -> dict[str, types.Tool]:
        tools = {UPLOAD: self._upload_schema(), ANSWER: self._answer_schema()}
        for name, tool in client_runs.callable_tools(self.service).items():
            params = dict(tool.parameters or {"type": "object", "properties": {}})
            properties = {"audio": AUDIO_PARAM, **params.get("properties", {})}
            required = ["audio", *params.get("required", [])]
            schema = {**params, "type": "object", "properties": properties, "required": required}
            tools[name] = types.Tool(
                name=name,
                title=getattr(tool, "label", None) or name,
                description=f"{tool.description} (On the recording `audio` from upload_audio.)",
                input_schema=schema,
                annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            )
        return tools

    def _upload_schema(self) -> types.Tool:
        properties: dict[str, Any] = {
            "data": {
                "type": "string",
                "description": "The file's bytes, base64-encoded (wav, mp3, ogg, flac, m4a, webm).",
            },
            "url": {
                "type": "string",
                "description": "Instead of data: the URL or audio_id of an earlier upload.",
            },
            "filename": {"type": "string", "description": "The file's name, shown in history."},
        }
        if self.local_files:
            properties["path"] = {
                "type": "string",
                "description": "Instead of data: a path to an audio file on this computer.",
            }
        return types.Tool(
            name=UPLOAD,
            title="Upload a recording",
            description="Store a recording for the other tools; returns its audio_id. Give "
            "exactly one of " + ", ".join(k for k in properties if k != "filename") + ".",
            input_schema={
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
            },
        )

    def _answer_schema(self) -> types.Tool:
        models = [m.id for m in available_models(self.service.registry)]
        return types.Tool(
            name=ANSWER,
            title="Answer a question about a recording",
            description=(
                "The whole agent: a planner reasons and calls the audio tools, then answers. "
                "With choices, the answer is exactly one of them. Returns the answer, its "
                "confidence, whether it is a best guess, and a link to the full trace."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "audio": AUDIO_PARAM,
                    "question": {"type": "string", "description": "The question."},
                    "choices": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Answer choices (optional; at least two).",
                    },
                    "preset": {
                        "type": "string",
                        "enum": models,
                        "description": "A preset or planner/strategy (as GET /v1/models lists); "
                        f"default {models[0] if models else 'none'}.",
                    },
                },
                "required": ["audio", "question"],
                "additionalProperties": False,
            },
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(self.schemas().values()))

    # -- tools/call ----------------------------------------------------------------------------
    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        schema = self.schemas().get(params.name)
        if schema is None:
            return error_result(f"No tool '{params.name}'. Call tools/list for the tools.")
        try:
            jsonschema.validate(arguments, checked_schema(schema))
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "arguments"
            return error_result(f"{params.name}: {where}: {exc.message}")
        caller = self.identify(ctx)
        try:
            if params.name == UPLOAD:
                return await self._upload(caller, arguments)
            if params.name == ANSWER:
                return await self._answer(ctx, caller, arguments)
            return await self._tool(ctx, caller, params.name, arguments)
        except (ServiceError, UnknownModel) as exc:
            return error_result(str(exc))

    async def _upload(self, caller: Caller, arguments: dict[str, Any]) -> types.CallToolResult:
        given = [k for k in ("data", "url", "path") if arguments.get(k)]
        if len(given) != 1:
            return error_result("upload_audio: give exactly one of data, url or path.")
        info = await asyncio.to_thread(self._store, caller, given[0], arguments)
        data = {
            "audio_id": info.id,
            "name": info.name,
            "format": info.format,
            "duration_s": info.duration_s,
            "url": f"{caller.base_url}/api/audio/{info.id}",
        }
        name = info.name or "the recording"
        text = f"Stored {name} ({info.duration_s:.1f} s): audio_id {info.id}"
        return result(text, data)

    def _store(self, caller: Caller, kind: str, arguments: dict[str, Any]) -> AudioInfo:
        service, owner = self.service, caller.owner
        if kind == "url":
            return owned_audio(service, owner, str(arguments["url"]))
        if kind == "path":
            return service.upload_file(str(arguments["path"]), owner=owner)
        if arguments["data"] == STAGED and caller.staged is not None:
            data = caller.staged
        else:
            try:
                data = base64.b64decode(str(arguments["data"]), validate=True)
            except (binascii.Error, ValueError):
                raise ServiceError("upload_audio: data is not valid base64.") from None
        name = str(arguments.get("filename") or "")
        return service.upload(data, name, owner=owner, address=caller.address)

    async def _answer(
        self, ctx: ServerRequestContext[Any, Any], caller: Caller, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        model = resolve_model(self.service.registry, arguments.get("preset"))

        def start() -> Started:
            audio = owned_audio(self.service, caller.owner, str(arguments["audio"]))
            return client_runs.start_question(
                self.service,
                caller.owner,
                question=str(arguments["question"]),
                choices=[str(c) for c in arguments.get("choices") or []],
                audio_id=audio.id,
                model=model,
            )

        outcome = await self._follow(ctx, await asyncio.to_thread(start))
        summary = outcome.summary(caller.base_url)
        if outcome.answer is None:
            return error_result(
                f"No answer ({summary['status']}): {summary['error']}\n{trace_line(summary)}",
                summary,
            )
        notes = []
        if summary["confidence"] is not None:
            notes.append(f"confidence {summary['confidence']:.2f}")
        if summary["guess"]:
            notes.append("a best guess: the evidence could not decide")
        text = (
            f"Answer: {summary['answer']}" + (f" ({'; '.join(notes)})" if notes else "")
            + f"\n{summary['calls']} tool calls, {summary['wall_s']} s, ${summary['cost_usd']:.4f}"
            + f"\n{trace_line(summary)}"
        )  # fmt: skip
        return result(text, summary)

    async def _tool(
        self,
        ctx: ServerRequestContext[Any, Any],
        caller: Caller,
        name: str,
        arguments: dict[str, Any],
    ) -> types.CallToolResult:
        audio_ref = str(arguments.pop("audio"))

        def start() -> Started:
            audio = owned_audio(self.service, caller.owner, audio_ref)
            return client_runs.start_tool_call(
                self.service,
                caller.owner,
                tool=name,
                arguments=arguments,
                audio=audio,
                caller=caller.client,
            )

        outcome = await self._follow(ctx, await asyncio.to_thread(start))
        summary = outcome.summary(caller.base_url)
        called = outcome.tool_result
        if called is None:  # refused before the call (daily spend limit) or failed
            return error_result(f"{name} did not run: {summary['error']}", summary)
        fields = {"output", "data", "error", "cached", "duration_s"}
        data = json.loads(called.model_dump_json(include=fields))
        data.update(
            tool=name,
            run_id=outcome.run_id,
            trace_url=summary["trace_url"],
            trace_page_url=summary["trace_page_url"],
        )
        if called.error:
            return error_result(called.error, data)
        return result(called.output, data)

    async def _follow(self, ctx: ServerRequestContext[Any, Any], started: Started) -> RunOutcome:
        """Follow the run to its end; each tool call's start and end go out as progress."""
        outcome = RunOutcome(started.run_id, started.conversation_id)
        steps = 0
        async for event in self.service.follow([started.run_id]):
            outcome.add(event)
            message = progress_message(event)
            if message is not None:
                steps += 1
                await ctx.session.report_progress(steps, None, message)
        return outcome


def checked_schema(tool: types.Tool) -> dict[str, Any]:
    """The schema arguments are checked against: the listed one, except that a preset not in
    the list is left to ``resolve_model``, which says why it is not there."""
    schema = tool.input_schema
    preset = schema.get("properties", {}).get("preset")
    if not preset or "enum" not in preset:
        return schema
    unlisted = {k: v for k, v in preset.items() if k != "enum"}
    return {**schema, "properties": {**schema["properties"], "preset": unlisted}}


def progress_message(event: ev.Event) -> str | None:
    """What a progress notification says about an event (None: no notification)."""
    if isinstance(event, ev.ToolCall):
        return f"{event.tool}: started"
    if isinstance(event, ev.ToolResultEvent):
        if event.error:
            return f"{event.tool}: failed ({event.error})"
        cached = " (cached)" if event.cached else ""
        return f"{event.tool}: done in {event.duration_s:.2f} s{cached}"
    if isinstance(event, ev.Queued):
        return f"queued: {event.ahead} ahead"
    return None


def result(text: str, data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=data
    )


def trace_line(summary: dict[str, Any]) -> str:
    """Where a person sees the run (the page, when the run has a conversation) and where a
    program reads it (JSON)."""
    page = summary.get("trace_page_url")
    json_url = summary["trace_url"]
    return f"Trace: {page} (as JSON: {json_url})" if page else f"Trace: {json_url}"


def error_result(text: str, data: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data,
        is_error=True,
    )


def client_name(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client's own name, when it said it (``clientInfo``)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return f"an MCP client ({name})" if name else "an MCP client"


def mount(app: Any, service: AgentService) -> McpEndpoint:
    """Serve the MCP server at ``/mcp`` (streamable HTTP) on ``app``; returns the endpoint,
    whose ``run()`` the app's lifespan must hold open.

    Stateless: every request stands alone (the caller comes from that request's cookie or
    bearer token), so several app processes behind one address serve it alike, and no
    event stream is kept open (``GET /mcp``: 405); large bodies are read and staged before
    the SDK sees them (``backend.http.mcp_http``). The SDK's own Host/Origin check is off: the
    app's Host check (backend.host.hosting) covers ``/mcp``."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.requests import Request

    from backend.access.auth import current_owner
    from backend.access.clients import client_address
    from backend.http.inline_bodies import SMALL_BODY

    def identify(ctx: ServerRequestContext[Any, Any]) -> Caller:
        request = ctx.request
        if not isinstance(request, Request):  # over HTTP there always is one
            raise ServiceError("MCP over HTTP only: this call came without a request.", 400)
        base = str(request.base_url).rstrip("/")
        address, staged = client_address(request.scope), request.scope.get(STAGED_KEY)
        return Caller(current_owner(request), base, client_name(ctx), address, staged)

    server = AudioMcp(service, identify).server
    endpoint = McpEndpoint(
        lambda: StreamableHTTPSessionManager(
            app=server,
            stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            # larger bodies never reach it: McpEndpoint reads and stages them
            max_request_body_size=SMALL_BODY,
        ),
        service.upload_quota.bodies,
    )
    for path in ("/mcp", "/mcp/"):
        app.add_route(path, endpoint, include_in_schema=False)
    return endpoint
