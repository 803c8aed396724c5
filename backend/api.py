"""REST and server-sent-event routes. Thin: each route calls one service method."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, File, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from agent.events import RunFailed
from backend.auth import current_owner
from backend.limits import check_title
from backend.service import AgentService, AskRequest, ServiceError
from storage.schemas import AudioInfo, ConversationInfo

API_VERSION = "1"


class NewConversation(BaseModel):
    title: str = "New conversation"


class Rename(BaseModel):
    title: str  # trimmed and length-checked by check_title (a 422 with a sentence)


class AskBody(BaseModel):
    question: str
    choices: list[str] = Field(default_factory=list)
    audio_id: str | None = None
    planner: str | None = None
    tools: list[str] | None = None
    strategy: str = "react"
    budget: int | None = Field(default=None, ge=1, le=100)

    def to_request(self) -> AskRequest:
        return AskRequest(
            question=self.question,
            choices=self.choices,
            audio_id=self.audio_id,
            planner=self.planner,
            tools=self.tools,
            strategy=self.strategy,
            budget=self.budget,
        )


class Contender(BaseModel):
    planner: str | None = None
    strategy: str = "react"


class CompareBody(AskBody):
    contenders: list[Contender] = Field(min_length=1, max_length=8)


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
        }

    @router.get("/catalogue")
    async def catalogue(check: bool = False) -> dict[str, Any]:
        """``?check=1``: also make the doctor's smallest real call to each remote entry."""
        if check:
            from agent.doctor import checked_catalogue

            return await checked_catalogue(service.registry)
        return service.catalogue()

    @router.get("/conversations")
    def list_conversations() -> list[ConversationInfo]:
        return service.store.list_conversations()

    @router.post("/conversations", status_code=201)
    def create_conversation(body: NewConversation | None = None) -> ConversationInfo:
        title = check_title((body or NewConversation()).title, service.settings.limits)
        return service.store.create_conversation(title)

    @router.get("/conversations/{conversation_id}")
    def get_conversation(conversation_id: str) -> dict[str, Any]:
        conv = service.conversation_or_404(conversation_id)
        return {
            "conversation": conv.model_dump(mode="json"),
            "messages": [
                {
                    **view.message.model_dump(mode="json"),
                    "runs": [run.info.model_dump(mode="json") for run in view.runs],
                }
                for view in service.conversation_view(conversation_id, events=False)
            ],
        }

    @router.patch("/conversations/{conversation_id}")
    def rename(conversation_id: str, body: Rename) -> ConversationInfo:
        service.conversation_or_404(conversation_id)
        title = check_title(body.title, service.settings.limits)
        renamed = service.store.rename_conversation(conversation_id, title)
        assert renamed is not None
        return renamed

    @router.delete("/conversations/{conversation_id}", status_code=204)
    def delete(conversation_id: str) -> None:
        service.conversation_or_404(conversation_id)
        service.delete_conversation(conversation_id)  # with its orphaned audio, cache, files

    @router.get("/conversations/{conversation_id}/export")
    def export(conversation_id: str) -> JSONResponse:
        service.conversation_or_404(conversation_id)
        return JSONResponse(
            service.store.conversation_export(conversation_id),
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
    def audio_file(audio_id: str) -> FileResponse:
        info = service.store.get_audio(audio_id)
        if info is None:
            raise HTTPException(404, f"No audio {audio_id}.")
        return FileResponse(info.original_path, filename=info.name or None)

    @router.get("/audio/{audio_id}/info")
    def audio_info(audio_id: str) -> dict[str, Any]:
        info = service.store.get_audio(audio_id)
        if info is None:
            raise HTTPException(404, f"No audio {audio_id}.")
        return public_audio(info)

    @router.post("/conversations/{conversation_id}/ask")
    async def ask(conversation_id: str, body: AskBody) -> StreamingResponse:
        # Off the event loop: other requests and running streams do not wait for it.
        request, _ = await asyncio.to_thread(service.prepare, conversation_id, body.to_request())

        async def sse() -> AsyncIterator[str]:
            last = 0
            try:
                async for event in service.stream(conversation_id, request):
                    last = event.seq
                    yield sse_frame(event.type, event.model_dump_json(), event.seq)
            except Exception as exc:  # stored as run_failed by the service; tell the client too
                failed = RunFailed(
                    run_id=request.run_id,
                    seq=last + 1,
                    kind="internal_error",
                    message=f"{type(exc).__name__}: {exc}",
                )
                yield sse_frame(failed.type, failed.model_dump_json(), failed.seq)

        return StreamingResponse(
            sse(),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Id": request.run_id},
        )

    @router.post("/conversations/{conversation_id}/compare")
    async def compare(conversation_id: str, body: CompareBody) -> StreamingResponse:
        """Several planners/strategies on one question at once; events of all runs interleave
        (each carries its run_id); a final ``summary`` event compares their answers."""
        requests, message = await asyncio.to_thread(
            service.prepare_many,
            conversation_id,
            body.to_request(),
            [(c.planner, c.strategy) for c in body.contenders],
        )

        async def sse() -> AsyncIterator[str]:
            async for event in service.stream_many(conversation_id, requests):
                yield sse_frame(event.type, event.model_dump_json())
            summary = service.compare_summary([r.run_id for r in requests])
            yield sse_frame("summary", json.dumps({"message_id": message.id, **summary.public()}))

        return StreamingResponse(
            sse(),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Ids": ",".join(r.run_id for r in requests)},
        )

    @router.get("/messages/{message_id}/summary")
    def message_summary(message_id: str) -> dict[str, Any]:
        return service.message_summary(message_id).public()

    @router.get("/runs/{run_id}")
    def run(run_id: str) -> dict[str, Any]:
        info = service.store.get_run(run_id)
        if info is None:
            raise HTTPException(404, f"No run {run_id}.")
        return {
            "run": info.model_dump(mode="json"),
            "events": [e.model_dump(mode="json") for e in service.store.run_events(run_id)],
        }

    @router.get("/runs/{run_id}/events")
    def run_events(run_id: str) -> list[dict[str, Any]]:
        if service.store.get_run(run_id) is None:
            raise HTTPException(404, f"No run {run_id}.")
        return [e.model_dump(mode="json") for e in service.store.run_events(run_id)]

    return router


def install(app: FastAPI, service: AgentService) -> None:
    app.include_router(build_router(service))

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return JSONResponse({"detail": str(exc)}, status_code=exc.status, headers=headers)
