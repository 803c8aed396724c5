"""Initial schema: conversations, audio, messages, runs, events, tool_cache.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

conversations  one chat thread (owner, title, created/updated times); the sidebar lists them
               newest-updated first.
audio          one row per distinct recording, keyed by the sha256 of the original bytes (which
               is also AudioRef.id); paths of the decoded 16 kHz wav and of the original, plus
               the original's format, sample rate, channels and size.
messages       ordered (position 1, 2, 3 ...) user questions, with their answer choices and
               audio, and the assistant's final answers. Deleted with their conversation.
runs           one question answered by one planner / tool set / strategy. Hangs off the user
               message it answers; compare-mode siblings share group_id. Status and totals
               are filled in from the answer / run_finished / run_failed events.
events         every event of every run, appended as it happens (so a crash keeps all events
               up to the last): seq order, type, and the full event JSON in payload.
tool_cache     ToolResults of identical calls keyed by agent.tools.base.cache_key, with a hit
               counter; results with an error are never stored.

Deleting a conversation cascades to its messages, their runs and the runs' events.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(32), nullable=False, comment="uuid4 hex"),
        sa.Column(
            "owner",
            sa.String(255),
            nullable=False,
            comment="Who the conversation belongs to: 'local' in the single-user app, "
            "an account id in a hosted deployment.",
        ),
        sa.Column(
            "title",
            sa.Text(),
            nullable=False,
            comment="Shown in the sidebar; set from the first question while it is still "
            "the default 'New conversation', or renamed by the user.",
        ),
        sa.Column("created_at", TS, nullable=False,
                  comment="When the conversation was created (UTC)."),
        sa.Column(
            "updated_at",
            TS,
            nullable=False,
            comment="Last activity (UTC): creation, a new message or a rename; "
            "the sidebar sorts on it.",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        comment="One chat thread: a list of messages in the history sidebar.",
    )
    op.create_index(
        "ix_conversations_owner_updated_at", "conversations", ["owner", "updated_at"]
    )

    op.create_table(
        "audio",
        sa.Column(
            "id",
            sa.String(64),
            nullable=False,
            comment="sha256 hex of the original uploaded bytes; also AudioRef.id and the "
            "folder name in the audio store, so identical uploads share one row.",
        ),
        sa.Column(
            "name",
            sa.Text(),
            nullable=False,
            comment="Original file name as uploaded; empty for recordings made with the "
            "microphone.",
        ),
        sa.Column("format", sa.String(16), nullable=False,
                  comment="Format of the original: wav, mp3, ogg, flac, m4a, webm ..."),
        sa.Column("duration_s", sa.Float(), nullable=False,
                  comment="Length in seconds of the decoded audio."),
        sa.Column("sample_rate", sa.Integer(), nullable=False,
                  comment="Sample rate of the ORIGINAL in Hz; the stored copy is always 16 kHz."),
        sa.Column("channels", sa.Integer(), nullable=False,
                  comment="Channel count of the ORIGINAL; the stored copy is mono."),
        sa.Column("stored_path", sa.Text(), nullable=False,
                  comment="Path of the decoded 16 kHz mono 16-bit wav that tools read."),
        sa.Column("original_path", sa.Text(), nullable=False,
                  comment="Path of the original bytes as uploaded (kept for export/playback)."),
        sa.Column("size_bytes", sa.Integer(), nullable=False,
                  comment="Size of the original upload in bytes."),
        sa.Column("created_at", TS, nullable=False,
                  comment="When the recording was first stored (UTC)."),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audio")),
        comment="Recordings by content: one row per distinct upload.",
    )

    op.create_table(
        "messages",
        sa.Column("id", sa.String(32), nullable=False, comment="uuid4 hex"),
        sa.Column("conversation_id", sa.String(32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False,
                  comment="Order within the conversation: 1, 2, 3 ..."),
        sa.Column(
            "role",
            sa.String(16),
            nullable=False,
            comment="'user' (a question, which runs answer) or 'assistant' (the final "
            "answer text the app adds after a run).",
        ),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "choices",
            sa.JSON(),
            nullable=False,
            comment="Answer choices offered with a question, as a JSON list of strings; "
            "empty for open questions and assistant messages.",
        ),
        sa.Column(
            "audio_id",
            sa.String(64),
            nullable=True,
            comment="The recording the question is about; NULL when there is none or the "
            "audio row was deleted.",
        ),
        sa.Column("created_at", TS, nullable=False, comment="When the message was added (UTC)."),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["audio_id"], ["audio.id"], name=op.f("fk_messages_audio_id_audio"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "conversation_id", "position", name=op.f("uq_messages_conversation_id_position")
        ),
        comment="Chat messages: user questions and the assistant's final answers.",
    )

    op.create_table(
        "runs",
        sa.Column("id", sa.String(128), nullable=False,
                  comment="Generated by the agent (uuid hex); the run_id carried by every event."),
        sa.Column("message_id", sa.String(32), nullable=False,
                  comment="The user message (question) this run answers."),
        sa.Column(
            "group_id",
            sa.String(128),
            nullable=True,
            comment="Sibling runs of one message started together in compare mode share "
            "this id; NULL for a single run.",
        ),
        sa.Column("planner", sa.String(128), nullable=False,
                  comment="Planner name from the registry (which LLM planned)."),
        sa.Column("strategy", sa.String(64), nullable=False,
                  comment="Strategy name: react, caption_first, refine, evidence ..."),
        sa.Column("tools", sa.JSON(), nullable=False,
                  comment="JSON list of the tool names the planner could call."),
        sa.Column(
            "status",
            sa.String(16),
            nullable=False,
            comment="running while events arrive; then ok | forced (answered because the "
            "tool budget was spent) | failed | cancelled.",
        ),
        sa.Column("answer_text", sa.Text(), nullable=True,
                  comment="Text of the run's answer event; NULL until one arrives."),
        sa.Column(
            "answer_choice",
            sa.Text(),
            nullable=True,
            comment="The choice (exact option text) the answer matched; NULL for open "
            "questions or no match.",
        ),
        sa.Column("calls", sa.Integer(), nullable=False,
                  comment="Tool calls made (from run_finished)."),
        sa.Column("input_tokens", sa.Integer(), nullable=False,
                  comment="Input tokens, planner and tools (from run_finished)."),
        sa.Column("output_tokens", sa.Integer(), nullable=False,
                  comment="Output tokens, planner and tools (from run_finished)."),
        sa.Column("cost", sa.Float(), nullable=False,
                  comment="Estimated cost in USD (from run_finished)."),
        sa.Column("wall_s", sa.Float(), nullable=True,
                  comment="Wall-clock seconds (from run_finished); NULL until then."),
        sa.Column("error", sa.Text(), nullable=True,
                  comment="Message of run_failed, a person can act on it."),
        sa.Column("error_kind", sa.String(64), nullable=True,
                  comment="Kind of run_failed (e.g. planner, interrupted)."),
        sa.Column("created_at", TS, nullable=False, comment="When the run was created (UTC)."),
        sa.Column("finished_at", TS, nullable=True,
                  comment="Time of the terminal event (run_finished / run_failed), UTC."),
        sa.ForeignKeyConstraint(
            ["message_id"], ["messages.id"], name=op.f("fk_runs_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        comment="One run: one question answered by one planner with one tool set under one "
        "strategy. Its steps are in events.",
    )
    op.create_index("ix_runs_message_id", "runs", ["message_id"])
    op.create_index("ix_runs_group_id", "runs", ["group_id"])

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False,
                  comment="1, 2, 3 ... within the run: the order to replay."),
        sa.Column(
            "type",
            sa.String(32),
            nullable=False,
            comment="The event's type discriminator (run_started, tool_call ...), copied "
            "out of the payload to filter without parsing JSON.",
        ),
        sa.Column(
            "payload",
            sa.JSON(),
            nullable=False,
            comment="The whole event as event.model_dump(mode='json'); "
            "agent.events.parse_event rebuilds it.",
        ),
        sa.Column("at", TS, nullable=False, comment="When the event happened (event.at, UTC)."),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_events_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
        sa.UniqueConstraint("run_id", "seq", name=op.f("uq_events_run_id_seq")),
        comment="The event stream of each run, appended as it happens.",
    )
    op.create_index("ix_events_run_id", "events", ["run_id"])

    op.create_table(
        "tool_cache",
        sa.Column("key", sa.String(64), nullable=False,
                  comment="agent.tools.base.cache_key(audio sha256, tool, arguments, model)."),
        sa.Column("tool", sa.String(128), nullable=False, comment="Tool name."),
        sa.Column(
            "audio_id",
            sa.String(64),
            nullable=False,
            comment="sha256 of the audio the call ran on. Not a foreign key: the benchmark "
            "caches calls on audio that has no row in audio.",
        ),
        sa.Column(
            "result",
            sa.JSON(),
            nullable=False,
            comment="ToolResult.model_dump(mode='json'); results with an error are never "
            "stored.",
        ),
        sa.Column("created_at", TS, nullable=False, comment="When the result was stored (UTC)."),
        sa.Column("hits", sa.Integer(), nullable=False,
                  comment="How many lookups this entry has answered."),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_tool_cache")),
        comment="Results of identical tool calls (same audio, tool, arguments, model).",
    )
    op.create_index("ix_tool_cache_audio_id", "tool_cache", ["audio_id"])


def downgrade() -> None:
    op.drop_index("ix_tool_cache_audio_id", table_name="tool_cache")
    op.drop_table("tool_cache")
    op.drop_index("ix_events_run_id", table_name="events")
    op.drop_table("events")
    op.drop_index("ix_runs_group_id", table_name="runs")
    op.drop_index("ix_runs_message_id", table_name="runs")
    op.drop_table("runs")
    op.drop_table("messages")
    op.drop_table("audio")
    op.drop_index("ix_conversations_owner_updated_at", table_name="conversations")
    op.drop_table("conversations")
