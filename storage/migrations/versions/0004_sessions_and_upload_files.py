"""Login sessions (server-side logout) and page uploads counted per owner.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

sessions      one row per login cookie or API bearer token (sha256 of its session id): logout
              revokes it, so a cookie or token kept by someone else stops working at once.
upload_files  files Gradio's upload route kept for an owner before a question used them:
              counted in the owner's storage quota, removed after AUDIO_AGENT_UPLOAD_TTL_HOURS.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("token_hash", sa.String(64), nullable=False,
                  comment="sha256 hex of the session id."),
        sa.Column("owner", sa.String(255), nullable=False,
                  comment="The logged-in owner ('user:<name>')."),
        sa.Column("kind", sa.String(16), nullable=False,
                  comment="'cookie' (a browser login) or 'token' (POST /api/token)."),
        sa.Column("created_at", TS, nullable=False,
                  comment="When the user logged in or made the token (UTC)."),
        sa.Column("expires_at", TS, nullable=False,
                  comment="When it stops working on its own (UTC)."),
        sa.Column("revoked_at", TS, nullable=True,
                  comment="When it was revoked (logout, or logout everywhere); NULL while "
                  "valid."),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_sessions")),
        comment="Logins and API tokens (AUDIO_AGENT_USERS): one row per login cookie or bearer "
        "token, so that logging out revokes it on the server. Only the sha256 of the session "
        "id (carried, signed, in the cookie or token) is stored.",
    )  # fmt: skip
    with op.batch_alter_table("sessions") as batch:
        batch.create_index("ix_sessions_owner", ["owner"], unique=False)
    op.create_table(
        "upload_files",
        sa.Column("id", sa.String(32), nullable=False, comment="uuid4 hex"),
        sa.Column("path", sa.Text(), nullable=False, comment="Where Gradio stored the file."),
        sa.Column("owner", sa.String(255), nullable=False,
                  comment="The owner who uploaded it."),
        sa.Column("address", sa.String(64), nullable=True,
                  comment="The client address it came from."),
        sa.Column("size_bytes", sa.Integer(), nullable=False, comment="Bytes on disk."),
        sa.Column(
            "audio_id",
            sa.String(64),
            nullable=True,
            comment="The recording a question made of it (its bytes then count there, not "
            "here); NULL while nothing used it.",
        ),
        sa.Column("created_at", TS, nullable=False, comment="When it was uploaded (UTC)."),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_upload_files")),
        comment="Files the page's upload route (Gradio's /gradio_api/upload) kept on disk for "
        "an owner before any question used them: counted in the owner's storage quota and "
        "removed after AUDIO_AGENT_UPLOAD_TTL_HOURS.",
    )  # fmt: skip
    with op.batch_alter_table("upload_files") as batch:
        batch.create_index("ix_upload_files_owner", ["owner"], unique=False)
        batch.create_index("ix_upload_files_created_at", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_table("upload_files")
    op.drop_table("sessions")
