"""Benchmark runs and their results.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

bench_runs     one `python -m bench run` / `bench analyse` with its configuration; its
               questions and runs are an ordinary conversation (conversation_id).
bench_results  (benchmark run, question, configuration) -> the run that answered it and its
               score; run_key finds an identical run made before, which is reused.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bench_runs",
        sa.Column("id", sa.String(32), nullable=False, comment="uuid4 hex"),
        sa.Column("owner", sa.String(255), nullable=False,
                  comment="Whose it is: its conversation's owner. 'local' (the CLI's default) "
                  "is shown to everyone in the Benchmarks tab; any other owner only to that "
                  "owner."),
        sa.Column("kind", sa.String(16), nullable=False,
                  comment="run (bench run) | attribution (Shapley) | ablation (bench analyse)."),
        sa.Column("name", sa.Text(), nullable=False, comment="Label shown in reports."),
        sa.Column("benchmark", sa.String(16), nullable=False,
                  comment="Format of the questions file: mmau | mmar | mmau-pro | demo."),
        sa.Column("questions_path", sa.Text(), nullable=False,
                  comment="The questions file as given on the command line (resolved)."),
        sa.Column("questions_sha256", sa.String(64), nullable=False,
                  comment="sha256 of the questions file's bytes when the run started."),
        sa.Column("fingerprint", sa.String(64), nullable=False,
                  comment="sha256 of kind, questions and configuration: the same command again "
                  "continues the unfinished run with this fingerprint instead of starting "
                  "anew."),
        sa.Column("config", sa.JSON(), nullable=False,
                  comment="Everything that was asked for: planners, strategies, tools, seeds, "
                  "budget, limit, judge, executor."),
        sa.Column("conversation_id", sa.String(32), nullable=True,
                  comment="The conversation holding its questions and their runs (NULL once "
                  "deleted)."),
        sa.Column("total", sa.Integer(), nullable=False,
                  comment="Planned (question, configuration) runs."),
        sa.Column("created_at", TS, nullable=False, comment="When it was started (UTC)."),
        sa.Column("finished_at", TS, nullable=True,
                  comment="When every planned run had its result (UTC); NULL while "
                  "unfinished."),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="SET NULL",
                                name=op.f("fk_bench_runs_conversation_id_conversations")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bench_runs")),
        comment="One benchmark run, attribution or ablation (python -m bench): its "
        "configuration. Each question's run is an ordinary run of the conversation it names; "
        "bench_results links them.",
    )  # fmt: skip
    with op.batch_alter_table("bench_runs") as batch:
        batch.create_index(batch.f("ix_bench_runs_fingerprint"), ["fingerprint"], unique=False)
        batch.create_index("ix_bench_runs_owner_created_at", ["owner", "created_at"], unique=False)
    op.create_table(
        "bench_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("bench_run_id", sa.String(32), nullable=False),
        sa.Column("item_id", sa.String(255), nullable=False,
                  comment="The question's id in the benchmark file (or its position)."),
        sa.Column("config_key", sa.String(64), nullable=False,
                  comment="sha256 of the configuration (planner, strategy, tools, seed, "
                  "budget)."),
        sa.Column("run_key", sa.String(64), nullable=False,
                  comment="sha256 of the question (audio sha256s, text, choices, answer) and "
                  "the configuration: identical runs are never repeated, across benchmark "
                  "runs."),
        sa.Column("config", sa.JSON(), nullable=False,
                  comment="planner, strategy, tools (sorted), seed, budget."),
        sa.Column("labels", sa.JSON(), nullable=False,
                  comment="The question's answer and groups (task, category, sub-category, "
                  "difficulty, modality) copied from the benchmark file, for reports without "
                  "it."),
        sa.Column("run_id", sa.String(128), nullable=True,
                  comment="The run that answered it (set before it starts; NULL before, or "
                  "once deleted). A run of another benchmark run with the same run_key is "
                  "reused."),
        sa.Column("message_id", sa.String(32), nullable=True,
                  comment="The question's message in the conversation (a rerun answers the "
                  "same one)."),
        sa.Column("score", sa.JSON(), nullable=True,
                  comment="The scores (bench.scoring.Score) once its run ended: prediction, "
                  "token rule, exact choice, MMAU-Pro match or judge, guess, tool calls; NULL "
                  "before."),
        sa.Column("created_at", TS, nullable=False, comment="When it was planned (UTC)."),
        sa.ForeignKeyConstraint(["bench_run_id"], ["bench_runs.id"], ondelete="CASCADE",
                                name=op.f("fk_bench_results_bench_run_id_bench_runs")),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="SET NULL",
                                name=op.f("fk_bench_results_run_id_runs")),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="SET NULL",
                                name=op.f("fk_bench_results_message_id_messages")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bench_results")),
        sa.UniqueConstraint("bench_run_id", "item_id", "config_key",
                            name=op.f("uq_bench_results_bench_run_id_item_id_config_key")),
        comment="One question under one configuration of a benchmark run: the run that "
        "answered it and its score.",
    )  # fmt: skip
    with op.batch_alter_table("bench_results") as batch:
        batch.create_index(batch.f("ix_bench_results_bench_run_id"), ["bench_run_id"])
        batch.create_index(batch.f("ix_bench_results_run_key"), ["run_key"])


def downgrade() -> None:
    op.drop_table("bench_results")
    op.drop_table("bench_runs")
