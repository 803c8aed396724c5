"""Per-owner audio references and share links.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

audio_refs   (owner, audio_id, name): who may use which recording, under which file name.
             Backfilled from the messages of each owner's conversations and, for audio no
             message uses, for the single local owner, both with the stored file name.
share_links  sha256 of a read-only share token -> conversation (deleted with it).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audio_refs",
        sa.Column("owner", sa.String(255), nullable=False,
                  comment="The owner (visitor or user) who uploaded it."),
        sa.Column("audio_id", sa.String(64), nullable=False,
                  comment="sha256 of the recording (audio.id)."),
        sa.Column("name", sa.Text(), nullable=False,
                  comment="The file name this owner uploaded it with; never shown to another "
                  "owner."),
        sa.Column("created_at", TS, nullable=False,
                  comment="When this owner first uploaded it (UTC)."),
        sa.ForeignKeyConstraint(["audio_id"], ["audio.id"], ondelete="CASCADE",
                                name=op.f("fk_audio_refs_audio_id_audio")),
        sa.PrimaryKeyConstraint("owner", "audio_id", name=op.f("pk_audio_refs")),
        comment="Who may use which recording: one row per (owner, audio). Identical uploads "
        "share the bytes and the audio row, but each owner reaches audio only through their "
        "own reference, under the file name they uploaded it with.",
    )  # fmt: skip
    with op.batch_alter_table("audio_refs") as batch:
        batch.create_index(batch.f("ix_audio_refs_audio_id"), ["audio_id"], unique=False)
    op.create_table(
        "share_links",
        sa.Column("token_hash", sa.String(64), nullable=False,
                  comment="sha256 hex of the share token."),
        sa.Column("conversation_id", sa.String(32), nullable=False,
                  comment="The shared conversation; one live link per conversation."),
        sa.Column("created_at", TS, nullable=False, comment="When the link was made (UTC)."),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE",
                                name=op.f("fk_share_links_conversation_id_conversations")),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_share_links")),
        comment="Read-only share links of conversations. Only the sha256 of each token is "
        "stored; the token itself is shown once, to the owner who made it.",
    )  # fmt: skip
    with op.batch_alter_table("share_links") as batch:
        batch.create_index(
            batch.f("ix_share_links_conversation_id"), ["conversation_id"], unique=False
        )
    # Existing recordings: each owner whose messages use one gets a reference to it.
    op.execute(
        "INSERT INTO audio_refs (owner, audio_id, name, created_at) "
        "SELECT DISTINCT c.owner, a.id, a.name, a.created_at FROM audio a "
        "JOIN messages m ON m.audio_id = a.id JOIN conversations c ON c.id = m.conversation_id"
    )
    op.execute(
        "INSERT INTO audio_refs (owner, audio_id, name, created_at) "
        "SELECT 'local', a.id, a.name, a.created_at FROM audio a WHERE NOT EXISTS "
        "(SELECT 1 FROM audio_refs r WHERE r.audio_id = a.id)"
    )


def downgrade() -> None:
    op.drop_table("share_links")
    op.drop_table("audio_refs")
