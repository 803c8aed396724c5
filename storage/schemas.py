"""Plain pydantic views of stored rows; what ``Store`` returns (never ORM objects)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["user", "assistant"]
RunStatus = Literal["running", "ok", "forced", "degraded", "failed", "cancelled", "interrupted"]


class ConversationInfo(BaseModel):
    id: str
    owner: str
    title: str
    created_at: datetime
    updated_at: datetime


class AudioInfo(BaseModel):
    id: str = Field(description="sha256 of the original bytes (= AudioRef.id)")
    name: str
    format: str
    duration_s: float
    sample_rate: int = Field(description="of the original; the stored wav is 16 kHz")
    channels: int = Field(description="of the original; the stored wav is mono")
    stored_path: str
    original_path: str
    size_bytes: int
    created_at: datetime


class MessageInfo(BaseModel):
    id: str
    conversation_id: str
    position: int = Field(description="1, 2, 3 ... within the conversation")
    role: Role
    text: str
    choices: list[str] = Field(default_factory=list)
    audio_id: str | None = None
    created_at: datetime


class RunInfo(BaseModel):
    id: str
    message_id: str
    group_id: str | None = None
    planner: str
    strategy: str
    tools: list[str] = Field(default_factory=list)
    status: RunStatus
    answer_text: str | None = None
    answer_choice: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    wall_s: float | None = None
    error: str | None = None
    error_kind: str | None = None
    created_at: datetime
    finished_at: datetime | None = None
    worker_id: str | None = None  # the server process that runs (or ran) it

    def public(self) -> dict[str, Any]:
        """The run as the API and exports show it: without the server process that ran it
        (host name and pid are nobody's business outside the server)."""
        return self.model_dump(mode="json", exclude={"worker_id"})
