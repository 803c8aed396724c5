"""SQLAlchemy tables: conversations, audio, messages, runs, events, the tool cache, upload
references, share links, login sessions and pending page uploads.

Every column that is not obvious from its name carries a ``comment=`` (stored in the
database on PostgreSQL) so the schema explains itself to whoever opens it with a SQL
client. Types are kept portable (SQLite by default, PostgreSQL when hosted); text columns are
``SafeText`` (``storage/types.py``), which stores NUL and lone surrogates on both.

Any change here needs a new Alembic migration in ``storage/migrations/versions``;
``tests/test_storage.py`` fails when the migrated schema and these models differ.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.types import SafeText

# Deterministic constraint names: needed so SQLite batch migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

DEFAULT_TITLE = "New conversation"
DEFAULT_OWNER = "local"


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


def _ts(comment: str) -> Any:
    return mapped_column(DateTime(timezone=True), default=utc_now, comment=comment)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_owner_updated_at", "owner", "updated_at"),
        {"comment": "One chat thread: a list of messages in the history sidebar."},
    )

    id: Mapped[str] = mapped_column(
        String(32), primary_key=True, default=new_id, comment="uuid4 hex"
    )
    owner: Mapped[str] = mapped_column(
        String(255),
        default=DEFAULT_OWNER,
        comment="Who the conversation belongs to: 'local' in the single-user app, "
        "an account id in a hosted deployment.",
    )
    title: Mapped[str] = mapped_column(
        SafeText,
        default=DEFAULT_TITLE,
        comment="Shown in the sidebar; set from the first question while it is still "
        "the default 'New conversation', or renamed by the user.",
    )
    created_at: Mapped[datetime] = _ts("When the conversation was created (UTC).")
    updated_at: Mapped[datetime] = _ts(
        "Last activity (UTC): creation, a new message or a rename; the sidebar sorts on it."
    )


class Audio(Base):
    __tablename__ = "audio"
    __table_args__ = ({"comment": "Recordings by content: one row per distinct upload."},)

    id: Mapped[str] = mapped_column(
        String(64),
        primary_key=True,
        comment="sha256 hex of the original uploaded bytes; also AudioRef.id and the "
        "folder name in the audio store, so identical uploads share one row.",
    )
    name: Mapped[str] = mapped_column(
        SafeText,
        default="",
        comment="Original file name as uploaded; empty for recordings made with the microphone.",
    )
    format: Mapped[str] = mapped_column(
        String(16), comment="Format of the original: wav, mp3, ogg, flac, m4a, webm ..."
    )
    duration_s: Mapped[float] = mapped_column(
        Float, comment="Length in seconds of the decoded audio."
    )
    sample_rate: Mapped[int] = mapped_column(
        Integer, comment="Sample rate of the ORIGINAL in Hz; the stored copy is always 16 kHz."
    )
    channels: Mapped[int] = mapped_column(
        Integer, comment="Channel count of the ORIGINAL; the stored copy is mono."
    )
    stored_path: Mapped[str] = mapped_column(
        SafeText, comment="Path of the decoded 16 kHz mono 16-bit wav that tools read."
    )
    original_path: Mapped[str] = mapped_column(
        SafeText, comment="Path of the original bytes as uploaded (kept for export/playback)."
    )
    size_bytes: Mapped[int] = mapped_column(
        Integer, comment="Size of the original upload in bytes."
    )
    created_at: Mapped[datetime] = _ts("When the recording was first stored (UTC).")


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("conversation_id", "position"),
        {"comment": "Chat messages: user questions and the assistant's final answers."},
    )

    id: Mapped[str] = mapped_column(
        String(32), primary_key=True, default=new_id, comment="uuid4 hex"
    )
    conversation_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(
        Integer, comment="Order within the conversation: 1, 2, 3 ..."
    )
    role: Mapped[str] = mapped_column(
        String(16),
        comment="'user' (a question, which runs answer) or 'assistant' (the final "
        "answer text the app adds after a run).",
    )
    text: Mapped[str] = mapped_column(SafeText, default="")
    choices: Mapped[list[str]] = mapped_column(
        JSON,
        default=list,
        comment="Answer choices offered with a question, as a JSON list of strings; "
        "empty for open questions and assistant messages.",
    )
    audio_id: Mapped[str | None] = mapped_column(
        String(64),
        ForeignKey("audio.id", ondelete="SET NULL"),
        nullable=True,
        comment="The recording the question is about; NULL when there is none or the "
        "audio row was deleted.",
    )
    created_at: Mapped[datetime] = _ts("When the message was added (UTC).")


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_status", "status"),
        {
            "comment": "One run: one question answered by one planner with one tool set "
            "under one strategy. Its steps are in events."
        },
    )

    id: Mapped[str] = mapped_column(
        String(128),
        primary_key=True,
        comment="Generated by the agent (uuid hex); the run_id carried by every event.",
    )
    message_id: Mapped[str] = mapped_column(
        String(32),
        ForeignKey("messages.id", ondelete="CASCADE"),
        index=True,
        comment="The user message (question) this run answers.",
    )
    group_id: Mapped[str | None] = mapped_column(
        String(128),
        nullable=True,
        index=True,
        comment="Sibling runs of one message started together in compare mode share "
        "this id; NULL for a single run.",
    )
    planner: Mapped[str] = mapped_column(
        String(128), comment="Planner name from the registry (which LLM planned)."
    )
    strategy: Mapped[str] = mapped_column(
        String(64), comment="Strategy name: react, caption_first, refine, evidence ..."
    )
    tools: Mapped[list[str]] = mapped_column(
        JSON, default=list, comment="JSON list of the tool names the planner could call."
    )
    status: Mapped[str] = mapped_column(
        String(16),
        default="running",
        comment="running while events arrive (or while queued for a slot); then ok | forced "
        "(answered because the tool budget was spent) | degraded (a tool failed or timed "
        "out) | failed | cancelled (stopped by the user) | interrupted (the server stopped or "
        "its process died).",
    )
    answer_text: Mapped[str | None] = mapped_column(
        SafeText, nullable=True, comment="Text of the run's answer event; NULL until one arrives."
    )
    answer_choice: Mapped[str | None] = mapped_column(
        SafeText,
        nullable=True,
        comment="The choice (exact option text) the answer matched; NULL for open "
        "questions or no match.",
    )
    calls: Mapped[int] = mapped_column(
        Integer, default=0, comment="Tool calls made (from run_finished)."
    )
    input_tokens: Mapped[int] = mapped_column(
        Integer, default=0, comment="Input tokens, planner and tools (from run_finished)."
    )
    output_tokens: Mapped[int] = mapped_column(
        Integer, default=0, comment="Output tokens, planner and tools (from run_finished)."
    )
    cost: Mapped[float] = mapped_column(
        Float, default=0.0, comment="Estimated cost in USD (from run_finished)."
    )
    wall_s: Mapped[float | None] = mapped_column(
        Float, nullable=True, comment="Wall-clock seconds (from run_finished); NULL until then."
    )
    error: Mapped[str | None] = mapped_column(
        SafeText, nullable=True, comment="Message of run_failed, a person can act on it."
    )
    error_kind: Mapped[str | None] = mapped_column(
        String(64), nullable=True, comment="Kind of run_failed (e.g. planner, interrupted)."
    )
    created_at: Mapped[datetime] = _ts("When the run was created (UTC).")
    worker_id: Mapped[str | None] = mapped_column(
        String(128),
        nullable=True,
        comment="The server process running it (host:pid:random, or AUDIO_AGENT_WORKER_ID); "
        "NULL for runs stored outside the run manager.",
    )
    heartbeat_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True),
        nullable=True,
        comment="Lease: refreshed every few seconds while the run's process lives; a "
        "running run whose heartbeat is older than the lease is marked interrupted.",
    )
    finished_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True),
        nullable=True,
        comment="Time of the terminal event (run_finished / run_failed), UTC.",
    )


class EventRow(Base):
    __tablename__ = "events"
    __table_args__ = (
        UniqueConstraint("run_id", "seq"),
        Index("ix_events_run_id", "run_id"),
        {"comment": "The event stream of each run, appended as it happens."},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(128), ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(
        Integer, comment="1, 2, 3 ... within the run: the order to replay."
    )
    type: Mapped[str] = mapped_column(
        String(32),
        comment="The event's type discriminator (run_started, tool_call ...), copied "
        "out of the payload to filter without parsing JSON.",
    )
    payload: Mapped[dict[str, Any]] = mapped_column(
        JSON,
        comment="The whole event as event.model_dump(mode='json'); "
        "agent.events.parse_event rebuilds it.",
    )
    at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), comment="When the event happened (event.at, UTC)."
    )


class ToolCacheEntry(Base):
    __tablename__ = "tool_cache"
    __table_args__ = (
        {"comment": "Results of identical tool calls (same audio, tool, arguments, model)."},
    )

    key: Mapped[str] = mapped_column(
        String(64),
        primary_key=True,
        comment="agent.tools.base.cache_key(audio sha256, tool, arguments, model).",
    )
    tool: Mapped[str] = mapped_column(String(128), comment="Tool name.")
    audio_id: Mapped[str] = mapped_column(
        String(64),
        index=True,
        comment="sha256 of the audio the call ran on. Not a foreign key: the benchmark "
        "caches calls on audio that has no row in audio.",
    )
    result: Mapped[dict[str, Any]] = mapped_column(
        JSON, comment="ToolResult.model_dump(mode='json'); results with an error are never stored."
    )
    created_at: Mapped[datetime] = _ts("When the result was stored (UTC).")
    hits: Mapped[int] = mapped_column(
        Integer, default=0, comment="How many lookups this entry has answered."
    )


class AudioOwnerRef(Base):
    __tablename__ = "audio_refs"
    __table_args__ = (
        {
            "comment": "Who may use which recording: one row per (owner, audio). Identical "
            "uploads share the bytes and the audio row, but each owner reaches audio only "
            "through their own reference, under the file name they uploaded it with."
        },
    )

    owner: Mapped[str] = mapped_column(
        String(255), primary_key=True, comment="The owner (visitor or user) who uploaded it."
    )
    audio_id: Mapped[str] = mapped_column(
        String(64),
        ForeignKey("audio.id", ondelete="CASCADE"),
        primary_key=True,
        index=True,
        comment="sha256 of the recording (audio.id).",
    )
    name: Mapped[str] = mapped_column(
        SafeText,
        default="",
        comment="The file name this owner uploaded it with; never shown to another owner.",
    )
    created_at: Mapped[datetime] = _ts("When this owner first uploaded it (UTC).")


class ShareLink(Base):
    __tablename__ = "share_links"
    __table_args__ = (
        {
            "comment": "Read-only share links of conversations. Only the sha256 of each "
            "token is stored; the token itself is shown once, to the owner who made it."
        },
    )

    token_hash: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="sha256 hex of the share token."
    )
    conversation_id: Mapped[str] = mapped_column(
        String(32),
        ForeignKey("conversations.id", ondelete="CASCADE"),
        index=True,
        comment="The shared conversation; one live link per conversation.",
    )
    created_at: Mapped[datetime] = _ts("When the link was made (UTC).")


class BenchRun(Base):
    __tablename__ = "bench_runs"
    __table_args__ = (
        Index("ix_bench_runs_owner_created_at", "owner", "created_at"),
        {
            "comment": "One benchmark run, attribution or ablation (python -m bench): its "
            "configuration. Each question's run is an ordinary run of the conversation it "
            "names; bench_results links them."
        },
    )

    id: Mapped[str] = mapped_column(
        String(32), primary_key=True, default=new_id, comment="uuid4 hex"
    )
    owner: Mapped[str] = mapped_column(
        String(255),
        default=DEFAULT_OWNER,
        comment="Whose it is: its conversation's owner. 'local' (the CLI's default) is "
        "shown to everyone in the Benchmarks tab; any other owner only to that owner.",
    )
    kind: Mapped[str] = mapped_column(
        String(16), comment="run (bench run) | attribution (Shapley) | ablation (bench analyse)."
    )
    name: Mapped[str] = mapped_column(SafeText, default="", comment="Label shown in reports.")
    benchmark: Mapped[str] = mapped_column(
        String(16), comment="Format of the questions file: mmau | mmar | mmau-pro | demo."
    )
    questions_path: Mapped[str] = mapped_column(
        SafeText, comment="The questions file as given on the command line (resolved)."
    )
    questions_sha256: Mapped[str] = mapped_column(
        String(64), comment="sha256 of the questions file's bytes when the run started."
    )
    fingerprint: Mapped[str] = mapped_column(
        String(64),
        index=True,
        comment="sha256 of kind, questions and configuration: the same command again "
        "continues the unfinished run with this fingerprint instead of starting anew.",
    )
    config: Mapped[dict[str, Any]] = mapped_column(
        JSON,
        comment="Everything that was asked for: planners, strategies, tools, seeds, "
        "budget, limit, judge, executor.",
    )
    conversation_id: Mapped[str | None] = mapped_column(
        String(32),
        ForeignKey("conversations.id", ondelete="SET NULL"),
        nullable=True,
        comment="The conversation holding its questions and their runs (NULL once deleted).",
    )
    total: Mapped[int] = mapped_column(
        Integer, default=0, comment="Planned (question, configuration) runs."
    )
    created_at: Mapped[datetime] = _ts("When it was started (UTC).")
    finished_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True),
        nullable=True,
        comment="When every planned run had its result (UTC); NULL while unfinished.",
    )


class BenchResult(Base):
    __tablename__ = "bench_results"
    __table_args__ = (
        UniqueConstraint("bench_run_id", "item_id", "config_key"),
        {
            "comment": "One question under one configuration of a benchmark run: the run "
            "that answered it and its score."
        },
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    bench_run_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("bench_runs.id", ondelete="CASCADE"), index=True
    )
    item_id: Mapped[str] = mapped_column(
        String(255), comment="The question's id in the benchmark file (or its position)."
    )
    config_key: Mapped[str] = mapped_column(
        String(64), comment="sha256 of the configuration (planner, strategy, tools, seed, budget)."
    )
    run_key: Mapped[str] = mapped_column(
        String(64),
        index=True,
        comment="sha256 of the question (audio sha256s, text, choices, answer) and the "
        "configuration: identical runs are never repeated, across benchmark runs.",
    )
    config: Mapped[dict[str, Any]] = mapped_column(
        JSON, comment="planner, strategy, tools (sorted), seed, budget."
    )
    labels: Mapped[dict[str, Any]] = mapped_column(
        JSON,
        comment="The question's answer and groups (task, category, sub-category, "
        "difficulty, modality) copied from the benchmark file, for reports without it.",
    )
    run_id: Mapped[str | None] = mapped_column(
        String(128),
        ForeignKey("runs.id", ondelete="SET NULL"),
        nullable=True,
        comment="The run that answered it (set before it starts; NULL before, or once "
        "deleted). A run of another benchmark run with the same run_key is reused.",
    )
    message_id: Mapped[str | None] = mapped_column(
        String(32),
        ForeignKey("messages.id", ondelete="SET NULL"),
        nullable=True,
        comment="The question's message in the conversation (a rerun answers the same one).",
    )
    score: Mapped[dict[str, Any] | None] = mapped_column(
        JSON(none_as_null=True),  # None is SQL NULL (not JSON null): "not scored yet"
        nullable=True,
        comment="The scores (bench.scoring.Score) once its run ended: prediction, token "
        "rule, exact choice, MMAU-Pro match or judge, guess, tool calls; NULL before.",
    )
    created_at: Mapped[datetime] = _ts("When it was planned (UTC).")


class LoginSession(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_owner", "owner"),
        {
            "comment": "Logins and API tokens (AUDIO_AGENT_USERS): one row per login cookie or "
            "bearer token, so that logging out revokes it on the server. Only the sha256 of "
            "the session id (carried, signed, in the cookie or token) is stored."
        },
    )

    token_hash: Mapped[str] = mapped_column(
        String(64), primary_key=True, comment="sha256 hex of the session id."
    )
    owner: Mapped[str] = mapped_column(String(255), comment="The logged-in owner ('user:<name>').")
    kind: Mapped[str] = mapped_column(
        String(16), comment="'cookie' (a browser login) or 'token' (POST /api/token)."
    )
    created_at: Mapped[datetime] = _ts("When the user logged in or made the token (UTC).")
    expires_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), comment="When it stops working on its own (UTC)."
    )
    revoked_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True),
        nullable=True,
        comment="When it was revoked (logout, or logout everywhere); NULL while valid.",
    )


class UploadFile(Base):
    __tablename__ = "upload_files"
    __table_args__ = (
        Index("ix_upload_files_owner", "owner"),
        Index("ix_upload_files_created_at", "created_at"),
        {
            "comment": "Files the page's upload route (Gradio's /gradio_api/upload) kept on "
            "disk for an owner before any question used them: counted in the owner's storage "
            "quota and removed after AUDIO_AGENT_UPLOAD_TTL_HOURS."
        },
    )

    id: Mapped[str] = mapped_column(
        String(32), primary_key=True, default=new_id, comment="uuid4 hex"
    )
    path: Mapped[str] = mapped_column(SafeText, comment="Where Gradio stored the file.")
    owner: Mapped[str] = mapped_column(String(255), comment="The owner who uploaded it.")
    address: Mapped[str | None] = mapped_column(
        String(64), nullable=True, comment="The client address it came from."
    )
    size_bytes: Mapped[int] = mapped_column(Integer, comment="Bytes on disk.")
    audio_id: Mapped[str | None] = mapped_column(
        String(64),
        nullable=True,
        comment="The recording a question made of it (its bytes then count there, not "
        "here); NULL while nothing used it.",
    )
    created_at: Mapped[datetime] = _ts("When it was uploaded (UTC).")
