"""The agent as an OpenAI-compatible model: ``GET /v1/models``, ``POST /v1/chat/completions``.

Any client that takes a base URL (the OpenAI SDK, Open WebUI, LibreChat) asks about audio
with ``input_audio`` parts and gets the answer as ``content``, the planner's reasoning and
tool calls as ``reasoning_content``. Every call is a stored run in the owner's history (the
owner and limits of ``backend.access.auth`` / ``backend.runs.manager``, as for ``/api``); its id is
in the ``x-run-id`` header, the ``run_id`` field, and with its answer details and trace link in the
``audio_agent`` field. Errors come in OpenAI's shape (``{"error": {"message", "type",
"param", "code"}}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from backend.access.auth import current_owner
from backend.access.clients import client_address
from backend.errors import ServiceError
from backend.http import openai_format as fmt
from backend.http.api import SSE_HEADERS
from backend.http.client_runs import (
    RunOutcome,
    Started,
    find_conversation,
    follow,
    owned_audio,
    start_question,
)
from backend.http.inline_bodies import BodyRefused
from backend.http.json_lift import LargeText, load_lifted
from backend.http.model_names import ModelChoice, UnknownModel, available_models, resolve_model
from backend.http.openai_messages import AudioPart, ChatBody, ChatError, ParsedChat, parse_chat
from backend.http.openai_params import check_parameters
from backend.service import AgentService

KEEPALIVE_S = 15.0  # an SSE comment while a long tool call runs, so proxies keep the stream
OWNED_BY = "ask-about-audio"
# The OpenAI SDK retries 5xx and 429 on its own; a failed run must not be asked again
# (every attempt is a new run), nor a limit that lasts longer than a minute.
NO_RETRY = {"x-should-retry": "false"}

T = TypeVar("T")


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def openai_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    kind, default_code = fmt.error_kind(status)
    body = fmt.error_body(message, kind, code=code or default_code, param=param)
    return JSONResponse(body, status_code=status, headers=headers)


def service_error(exc: ServiceError) -> JSONResponse:
    headers: dict[str, str] = {}
    if exc.retry_after:
        headers["Retry-After"] = str(exc.retry_after)
        if exc.retry_after > 60:
            headers.update(NO_RETRY)
    return openai_error(exc.status, str(exc), headers=headers)


def build_router(service: AgentService) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])
    created = int(time.time())

    def model_object(model: ModelChoice) -> dict[str, Any]:
        return {"object": "model", "created": created, "owned_by": OWNED_BY, **model.public()}

    @router.get("/models")
    def list_models() -> dict[str, Any]:
        """The presets and planner/strategy pairs available now."""
        models = available_models(service.registry)
        return {"object": "list", "data": [model_object(m) for m in models]}

    @router.get("/models/{model_id:path}", response_model=None)
    def get_model(model_id: str) -> dict[str, Any] | JSONResponse:
        try:
            return model_object(resolve_model(service.registry, model_id))
        except UnknownModel as exc:
            return openai_error(404, str(exc), param="model", code="model_not_found")

    @router.post("/chat/completions", response_model=None)
    async def chat_completions(
        request: Request, owner: str = Depends(current_owner)
    ) -> JSONResponse | StreamingResponse:
        """A question about audio; see backend.http.openai_messages for what a request carries.
        The body is read and parsed off the event loop, a large one within the bounds of
        ``backend.http.inline_bodies``; its recording counts in the caller's address's upload
        windows, the ones ``/api/audio`` uses."""
        address = client_address(request.scope)
        bodies = service.upload_quota.bodies
        try:
            async with bodies.body(request.scope, request.stream(), owner, address) as file:
                read = await asyncio.to_thread(read_request, file, service)
                if isinstance(read, JSONResponse):
                    return read
                # uploads, the conversation, admission: off the event loop (database, decoding)
                chat = read.take_chat()  # held no longer than it takes to store its audio
                started = await asyncio.to_thread(begin, service, owner, chat, read.model, address)
                del chat
        except ClientDisconnect:
            return openai_error(400, "The request body did not arrive: the client went away.")
        except BodyRefused as exc:
            refused = exc.refusal
            error = ServiceError(refused.detail, refused.status, retry_after=refused.retry_after)
            response = service_error(error)
            response.headers["connection"] = "close"  # the body is not read: do not drain it
            return response
        except ChatError as exc:
            return openai_error(400, str(exc), param=exc.param)
        except ServiceError as exc:
            return service_error(exc)
        headers = {"x-run-id": started.run_id}
        base, name = base_url(request), read.name
        if read.stream:
            return StreamingResponse(
                stream(service, started, name, base, read.usage_chunk),
                media_type="text/event-stream",
                headers={**SSE_HEADERS, **headers},
            )
        outcome = await follow(service, started)
        text = fmt.TraceText()
        for event in outcome.events:
            text.add(event)
        if outcome.answer is None:
            return JSONResponse(
                fmt.failure_body(outcome, base),
                status_code=fmt.failure_status(outcome),
                headers={**headers, **NO_RETRY},
            )
        return JSONResponse(fmt.completion(outcome, name, now(), text, base), headers=headers)

    return router


def now() -> int:
    return int(time.time())


@dataclass
class ChatRequest:
    """What a request asks, without its JSON (which may be large)."""

    name: str  # the model as the client named it
    model: ModelChoice
    stream: bool
    usage_chunk: bool  # stream_options.include_usage
    chat: ParsedChat | None  # its audio decoded; None once taken to be stored

    def take_chat(self) -> ParsedChat:
        chat, self.chat = self.chat, None
        assert chat is not None
        return chat


def read_request(file: IO[bytes], service: AgentService) -> ChatRequest | JSONResponse:
    """The request in ``file``, or the 400/404 that says what is wrong with it (blocking: the
    JSON may be large)."""
    try:
        document, lifted = load_lifted(file)
        body = ChatBody.model_validate(document)
        check_parameters(body.model_extra or {})
        chat = parse_chat(body, lifted)
        model = resolve_model(service.registry, body.model)
    except RecursionError:
        return openai_error(400, "The request body is JSON nested too deeply.")
    except LargeText as exc:
        return openai_error(400, str(exc), param="messages")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return openai_error(400, "The request body is not valid JSON (UTF-8).")
    except ValidationError as exc:
        first = exc.errors()[0]  # its message only: the input may not be sendable back
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return openai_error(400, f"{where}: {first['msg']}", param=where)
    except ChatError as exc:
        return openai_error(400, str(exc), param=exc.param)
    except UnknownModel as exc:
        return openai_error(404, str(exc), param="model", code="model_not_found")
    usage_chunk = bool((body.stream_options or {}).get("include_usage"))
    return ChatRequest(body.model, model, body.stream, usage_chunk, chat)


def begin(
    service: AgentService, owner: str, chat: ParsedChat, model: ModelChoice, address: str
) -> Started:
    """Store the recording, find the conversation of a follow-up, start the run."""
    audio_id = store_audio(service, owner, chat.audio(), address)
    conversation_id = None
    if chat.earlier:
        first = chat.turns[0]
        first_audio = first.audio[0].id if first.audio else None
        conversation_id = find_conversation(service, owner, first.question, first_audio)
    current = chat.current
    return start_question(
        service,
        owner,
        question=current.question,
        choices=current.choices,
        audio_id=audio_id,
        model=model,
        conversation_id=conversation_id,
    )


def store_audio(service: AgentService, owner: str, part: AudioPart, address: str) -> str:
    """The owner's audio id for a part: an earlier upload, or the bytes stored now, counted
    against the address's upload windows (the same bytes again cost nothing: a follow-up
    that resends its recording is not a new upload)."""
    if part.audio_id is not None:
        return owned_audio(service, owner, part.audio_id).id
    return service.upload(part.data or b"", part.name, owner=owner, address=address).id


async def stream(
    service: AgentService, started: Started, model: str, base: str, usage_chunk: bool
) -> AsyncIterator[str]:
    """The run as chat completion chunks: reasoning as it happens, then the answer as
    content, then a last chunk with ``finish_reason``, usage (with cost) and the run's
    details; ``data: [DONE]`` ends it. A run that ends without an answer ends the stream
    with an ``error`` object, as OpenAI streams errors."""
    run_id, created = started.run_id, now()
    outcome = RunOutcome(started.run_id, started.conversation_id)
    text = fmt.TraceText()
    yield sse(fmt.chunk(run_id, model, created, {"role": "assistant", "content": ""}))
    try:
        async for event in keepalive(service.follow([run_id]), KEEPALIVE_S):
            if event is None:
                yield ": keep-alive\n\n"
                continue
            outcome.add(event)
            reasoning, _ = text.add(event)
            if reasoning:
                yield sse(fmt.chunk(run_id, model, created, {"reasoning_content": reasoning}))
    except Exception as exc:  # the run itself goes on and is stored; tell this client
        message = f"Following the run failed: {type(exc).__name__}: {exc}"
        yield sse(fmt.error_body(message, "server_error", code="internal_error"))
        yield "data: [DONE]\n\n"
        return
    if outcome.answer is None:
        yield sse(fmt.failure_body(outcome, base))
        yield "data: [DONE]\n\n"
        return
    # The answer after all of the reasoning (also after a note that a tool failed).
    yield sse(fmt.chunk(run_id, model, created, {"content": "".join(text.content)}))
    usage = fmt.usage(outcome)
    details = {fmt.EXTENSION: outcome.summary(base)}
    yield sse(fmt.chunk(run_id, model, created, {}, "stop", usage=usage, **details))
    if usage_chunk:  # stream_options.include_usage: OpenAI's own last chunk, no choices
        last = fmt.chunk(run_id, model, created, {}) | {"choices": [], "usage": usage}
        yield sse(last)
    yield "data: [DONE]\n\n"


def sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def keepalive(items: AsyncIterator[T], every_s: float) -> AsyncIterator[T | None]:
    """``items``, with a None whenever ``every_s`` passes without one."""
    iterator = aiter(items)
    pending: asyncio.Future[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            done, _ = await asyncio.wait({pending}, timeout=every_s)
            if not done:
                yield None
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                pending = None
                return
            pending = None
            yield item
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
