"""Run leases: the worker (server process) running each run and its heartbeat.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

runs.worker_id     the process running the run (host:pid:random or AUDIO_AGENT_WORKER_ID).
runs.heartbeat_at  refreshed every few seconds while that process lives; a running run whose
                   heartbeat is older than the lease belongs to a dead process and is marked
                   interrupted (its events up to the crash kept) by whichever process sees it.
ix_runs_status     finds running runs without scanning every run.
Statuses gain degraded (a tool failed or timed out) and interrupted (was failed/interrupted).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATUS_COMMENT = (
    "running while events arrive (or while queued for a slot); then ok | forced "
    "(answered because the tool budget was spent) | degraded (a tool failed or timed "
    "out) | failed | cancelled (stopped by the user) | interrupted (the server stopped or "
    "its process died)."
)
OLD_STATUS_COMMENT = (
    "running while events arrive; then ok | forced (answered because the "
    "tool budget was spent) | failed | cancelled."
)


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column(
                "worker_id",
                sa.String(128),
                nullable=True,
                comment="The server process running it (host:pid:random, or "
                "AUDIO_AGENT_WORKER_ID); NULL for runs stored outside the run manager.",
            )
        )
        batch.add_column(
            sa.Column(
                "heartbeat_at",
                sa.DateTime(timezone=True),
                nullable=True,
                comment="Lease: refreshed every few seconds while the run's process lives; a "
                "running run whose heartbeat is older than the lease is marked interrupted.",
            )
        )
        batch.alter_column(
            "status",
            existing_type=sa.String(16),
            existing_nullable=False,
            comment=STATUS_COMMENT,
            existing_comment=OLD_STATUS_COMMENT,
        )
    op.create_index("ix_runs_status", "runs", ["status"])
    # Runs closed by a restart before this revision were stored as failed/interrupted.
    op.execute(
        "UPDATE runs SET status = 'interrupted' "
        "WHERE status = 'failed' AND error_kind = 'interrupted'"
    )


def downgrade() -> None:
    op.execute("UPDATE runs SET status = 'failed' WHERE status = 'interrupted'")
    op.drop_index("ix_runs_status", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("worker_id")
        batch.alter_column(
            "status",
            existing_type=sa.String(16),
            existing_nullable=False,
            comment=OLD_STATUS_COMMENT,
            existing_comment=STATUS_COMMENT,
        )
