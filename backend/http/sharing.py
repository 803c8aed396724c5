"""Read-only share links of conversations.

- ``POST /api/conversations/{id}/share`` -> ``{"token", "url"}``: a new link (192 random bits,
  ``secrets.token_urlsafe``); only its sha256 is stored, so the token is shown once. A new
  link replaces the conversation's older one.
- ``DELETE /api/conversations/{id}/share``: revoke (204, also when there was none).
- ``GET /api/shared/{token}``: the conversation with every run's events (the export format,
  without the owner id); ``GET /api/shared/{token}/audio/{audio_id}``: its recordings.
- ``/shared/{token}``: the read-only page (``frontend.shared_view``).

Both owner routes answer another owner's conversation with the same 404 as a missing one.
``AgentService.share_is_valid(token, conversation_id)`` is the cheap check an open shared view
makes on each event, so that revoking a link ends the views already open.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import FileResponse

from backend.access.auth import current_owner
from backend.access.security import audio_response
from backend.errors import ServiceError
from backend.service import AgentService

SHARED_PAGE = "/shared"


def share_url(request: Request, token: str) -> str:
    return str(request.base_url).rstrip("/") + f"{SHARED_PAGE}/{token}"


def shared_export(service: AgentService, token: str) -> dict[str, Any]:
    """What a share link shows: the export of the conversation, without its owner id."""
    data = service.shared_export(token)
    data["conversation"].pop("owner", None)
    for audio in data["audio"]:
        audio["url"] = f"/api/shared/{token}/audio/{audio['id']}"
    return data


def build_router(service: AgentService) -> APIRouter:
    router = APIRouter(prefix="/api")

    @router.post("/conversations/{conversation_id}/share", status_code=201)
    def share(
        conversation_id: str, request: Request, owner: str = Depends(current_owner)
    ) -> dict[str, str]:
        token = service.share(conversation_id, owner=owner)
        return {"token": token, "url": share_url(request, token)}

    @router.delete("/conversations/{conversation_id}/share", status_code=204)
    def unshare(conversation_id: str, owner: str = Depends(current_owner)) -> Response:
        service.unshare(conversation_id, owner=owner)
        return Response(status_code=204)

    @router.get("/shared/{token}")
    def shared(token: str) -> dict[str, Any]:
        return shared_export(service, token)

    @router.get("/shared/{token}/audio/{audio_id}")
    def shared_audio(token: str, audio_id: str) -> FileResponse:
        data = shared_export(service, token)
        item = next((a for a in data["audio"] if a["id"] == audio_id), None)
        info = service.shared_recording(audio_id, data) if item else None
        if item is None or info is None:
            raise ServiceError(f"No audio {audio_id}.", status=404)
        return audio_response(info, item["name"])

    return router
