"""REST and server-sent-event routes. Thin: each route calls one service method."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, File, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from agent.events import TERMINAL_TYPES, RunFailed
from backend.access.auth import current_owner
from backend.access.body_limits import Text, check_title, validation_error_response
from backend.access.clients import client_address
from backend.access.security import audio_response
from backend.errors import ServiceError
from backend.host import warm_up
from backend.runs import faults
from backend.service import AgentService, AskRequest, default_strategy
from storage.schemas import AudioInfo, ConversationInfo

API_VERSION = "1"


class NewConversation(BaseModel):
    title: Text = "New conversation"


class Rename(BaseModel):
    title: Text  # trimmed and length-checked by check_title (a 422 with a sentence)


class Contender(BaseModel):
    planner: Text | None = None
    strategy: Text = Field(default_factory=default_strategy)  # the registry's default


@pydantic_dataclass(kw_only=True)
class CompareRequest(AskRequest):
    """A question for several planner/strategy pairs at once (``POST .../compare``)."""

    contenders: Annotated[list[Contender], Field(min_length=1, max_length=8)]


def sse_frame(kind: str, data: str, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {data}\n\n"


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def public_audio(info: AudioInfo) -> dict[str, Any]:
    data = info.model_dump(mode="json", exclude={"stored_path", "original_path"})
    data["url"] = f"/api/audio/{info.id}"
    return data


def build_router(service: AgentService) -> APIRouter:
    router = APIRouter(prefix="/api")

    @router.get("/health")
    def health() -> dict[str, Any]:
        catalogue = service.catalogue()
        return {
            "status": "ok",
            "version": API_VERSION,
            "planners_available": sum(p["available"] for p in catalogue["planners"]),
            "tools_available": sum(t["available"] for t in catalogue["tools"]),
            # "temporary" on a Space without persistent storage (backend/host/space.py)
            "storage": "temporary" if service.storage_notice() else "persistent",
            "warm_up": warm_up.status(),  # per local tool: waiting, warming up, ready, failed
        }

    @router.get("/catalogue")
    async def catalogue(check: bool = False) -> dict[str, Any]:
        """``?check=1``: also make the doctor's smallest real call to each remote entry."""
        if check:
            from agent.doctor import checked_catalogue

            return await checked_catalogue(service.registry, shared=service.model_checks)
        return service.catalogue()

    @router.get("/conversations")
    def list_conversations(owner: str = Depends(current_owner)) -> list[ConversationInfo]:
        return service.data_of(owner).list_conversations()

    @router.post("/conversations", status_code=201)
    def create_conversation(
        body: NewConversation | None = None, owner: str = Depends(current_owner)
    ) -> ConversationInfo:
        title = check_title((body or NewConversation()).title, service.settings.limits)
        return service.data_of(owner).create_conversation(title)

    @router.get("/conversations/{conversation_id}")
    def get_conversation(
        conversation_id: str,
        last: int | None = Query(
            None, ge=1, le=10_000, description="only the last N messages (a page from the end)"
        ),
        owner: str = Depends(current_owner),
    ) -> dict[str, Any]:
        """The conversation with its messages and their runs (rows, no events; a run's
        events: /runs/{id}/events). ``?last=N`` returns the last N messages only, so that
        opening a long conversation costs what opening a short one does; ``total_messages``
        says how many there are."""
        conv = service.conversation_or_404(conversation_id, owner=owner)
        views = service.conversation_view(
            conversation_id, owner=owner, events=False, last_messages=last
        )
        total = (
            len(views) if last is None else service.data_of(owner).count_messages(conversation_id)
        )
        return {
            "conversation": conv.model_dump(mode="json"),
            "total_messages": total,
            "messages": [
                {
                    **view.message.model_dump(mode="json"),
                    "runs": [run.info.public() for run in view.runs],
                }
                for view in views
            ],
        }

    @router.patch("/conversations/{conversation_id}")
    def rename(
        conversation_id: str, body: Rename, owner: str = Depends(current_owner)
    ) -> ConversationInfo:
        service.conversation_or_404(conversation_id, owner=owner)
        title = check_title(body.title, service.settings.limits)
        renamed = service.data_of(owner).rename_conversation(conversation_id, title)
        assert renamed is not None
        return renamed

    @router.delete("/conversations/{conversation_id}", status_code=204)
    def delete(conversation_id: str, owner: str = Depends(current_owner)) -> None:
        service.conversation_or_404(conversation_id, owner=owner)
        service.delete_conversation(conversation_id)  # with its orphaned audio, cache, files

    @router.get("/conversations/{conversation_id}/export")
    def export(conversation_id: str, owner: str = Depends(current_owner)) -> JSONResponse:
        service.conversation_or_404(conversation_id, owner=owner)
        return JSONResponse(
            service.data_of(owner).conversation_export(conversation_id),
            headers={
                "Content-Disposition": f'attachment; filename="conversation-{conversation_id}.json"'
            },
        )

    @router.post("/audio", status_code=201)
    async def upload(
        file: UploadFile = File(...), owner: str = Depends(current_owner)
    ) -> dict[str, Any]:
        limit = service.audio.max_bytes
        data = await file.read(limit + 1)
        if len(data) > limit:
            raise ServiceError(
                f"{file.filename or 'The upload'} is larger than the limit of "
                f"{service.settings.max_upload_mb:.0f} MB.",
                status=413,
            )
        # Decoding a long file takes seconds: off the event loop, so other requests go on.
        info = await asyncio.to_thread(service.upload, data, file.filename or "", owner=owner)
        return public_audio(info)

    @router.get("/audio/{audio_id}")
    def audio_file(audio_id: str, owner: str = Depends(current_owner)) -> FileResponse:
        info = service.audio_or_404(audio_id, owner=owner)
        return audio_response(info, info.name)

    @router.get("/audio/{audio_id}/info")
    def audio_info(audio_id: str, owner: str = Depends(current_owner)) -> dict[str, Any]:
        return public_audio(service.audio_or_404(audio_id, owner=owner))

    @router.post("/conversations/{conversation_id}/ask")
    async def ask(
        conversation_id: str,
        body: AskRequest,
        http: Request,
        owner: str = Depends(current_owner),
    ) -> StreamingResponse:
        """Start a run (it belongs to the server) and follow it as server-sent events. A
        client that goes away stops following; ``GET /api/runs/{id}/events?after=SEQ``
        picks it up again."""
        request, _ = await asyncio.to_thread(
            service.prepare,
            conversation_id,
            body,
            owner=owner,
            address=client_address(http.scope),
        )  # off the event loop: it reads and writes the database
        run_ids = service.start_runs(conversation_id, [request], owner=owner)
        return StreamingResponse(
            follow_sse(service, run_ids, owner=owner),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Id": request.run_id},
        )

    @router.post("/conversations/{conversation_id}/compare")
    async def compare(
        conversation_id: str,
        body: CompareRequest,
        http: Request,
        owner: str = Depends(current_owner),
    ) -> StreamingResponse:
        """Several planners/strategies on one question at once; events of all runs interleave
        (each carries its run_id); a final ``summary`` event compares their answers."""
        requests, message = await asyncio.to_thread(
            service.prepare_many,
            conversation_id,
            body,
            [(c.planner, c.strategy) for c in body.contenders],
            owner=owner,
            address=client_address(http.scope),
        )
        run_ids = service.start_runs(conversation_id, requests, owner=owner)

        async def sse() -> AsyncIterator[str]:
            async for frame in follow_sse(service, run_ids, owner=owner, with_ids=False):
                yield frame
            summary = service.compare_summary(run_ids)
            yield sse_frame("summary", json.dumps({"message_id": message.id, **summary.public()}))

        return StreamingResponse(
            sse(),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Ids": ",".join(run_ids)},
        )

    @router.get("/messages/{message_id}/summary")
    def message_summary(message_id: str, owner: str = Depends(current_owner)) -> dict[str, Any]:
        return service.message_summary(message_id, owner=owner).public()

    @router.get("/runs/{run_id}")
    def run(run_id: str, owner: str = Depends(current_owner)) -> dict[str, Any]:
        info = service.run_or_404(run_id, owner=owner)
        return {
            "run": info.public(),
            "events": [
                e.model_dump(mode="json") for e in service.data_of(owner).run_events(run_id)
            ],
        }

    @router.get("/runs/{run_id}/events", response_model=None)
    async def run_events(
        run_id: str,
        request: Request,
        after: int = Query(0, ge=0, description="only events after this seq"),
        owner: str = Depends(current_owner),
    ) -> list[dict[str, Any]] | StreamingResponse:
        """The run's events after ``after``. With ``Accept: text/event-stream``: the stored
        ones, then the live ones as they happen, until the run ends (SSE ``id`` = seq, so a
        client can resume with ``?after=`` its last id); otherwise a JSON list."""
        await asyncio.to_thread(service.run_or_404, run_id, owner=owner)
        if "text/event-stream" in request.headers.get("accept", ""):
            resume = request.headers.get("last-event-id", "")
            start = max(after, int(resume) if resume.isdigit() else 0)
            return StreamingResponse(
                follow_sse(service, [run_id], owner=owner, after=start),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        events = await asyncio.to_thread(service.data_of(owner).run_events, run_id, after)
        return [e.model_dump(mode="json") for e in events]

    @router.post("/runs/{run_id}/stop")
    def stop_run(run_id: str, owner: str = Depends(current_owner)) -> dict[str, Any]:
        """Stop a live run: it ends with status ``cancelled`` (its events so far kept). A run
        that ended while its end could not be stored has it stored now (its status then)."""
        info = service.run_or_404(run_id, owner=owner)
        if info.status != "running":
            return {"run_id": run_id, "stopped": False, "status": info.status}
        if not service.stop_runs([run_id]):
            raise HTTPException(
                409, f"Run {run_id} is running in another server process; stop it there."
            )
        return {
            "run_id": run_id,
            "stopped": True,
            "status": service.run_or_404(run_id, owner=owner).status,
        }

    return router


STREAM_CUT = (
    "The run's events stopped before its end: the server process running it stopped or "
    "stalled. Reload the conversation to see how it stands."
)


async def follow_sse(
    service: AgentService,
    run_ids: list[str],
    *,
    owner: str,
    after: int = 0,
    with_ids: bool = True,
) -> AsyncIterator[str]:
    """Server-sent events of runs being followed (``id`` = seq when ``with_ids``). Every
    stream ends with each run's terminal event: when the run manager could not give one (a
    fault, a stalled process), a ``run_failed`` that says so."""
    last: dict[str, int] = {}
    ended: set[str] = set()

    def frame(event: RunFailed) -> str:
        return sse_frame(event.type, event.model_dump_json(), event.seq if with_ids else None)

    try:
        async for event in service.follow(run_ids, after):
            last[event.run_id] = event.seq
            if event.type in TERMINAL_TYPES:
                ended.add(event.run_id)
            yield sse_frame(event.type, event.model_dump_json(), event.seq if with_ids else None)
    except Exception as exc:  # the run itself is stored by the manager; tell the client
        fault = faults.describe(exc)
        for run_id in [r for r in run_ids if r not in ended]:
            seq = last.get(run_id, after) + 1
            yield frame(RunFailed(run_id=run_id, seq=seq, kind=fault.kind, message=fault.message))
        return
    for run_id in [r for r in run_ids if r not in ended]:
        info = await asyncio.to_thread(service.data_of(owner).get_run, run_id)
        if info is not None and info.status != "running":
            continue  # its end is stored (before ``after``, or sent another way)
        seq = last.get(run_id, after) + 1
        yield frame(RunFailed(run_id=run_id, seq=seq, kind="interrupted", message=STREAM_CUT))


def install(app: FastAPI, service: AgentService) -> None:
    from backend.http import sharing

    app.include_router(build_router(service))
    app.include_router(sharing.build_router(service))

    app.add_exception_handler(RequestValidationError, validation_error_response)
    faults.install(app)  # a full disk, a database error, a bug: JSON, never plain text

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=headers)
