"""the crawl service: sources, jobs, executions, execution logs, adaptive state, leases

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("start_urls", sa.Text(), nullable=False),
        sa.Column("max_depth", sa.SmallInteger(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("crawl_delay", sa.Float(), nullable=True),
        sa.Column("max_pages", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint("name", name=op.f("uq_sources_name")),
    )
    op.create_table(
        "jobs",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("source_id", Id, nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("interval_minutes", sa.Integer(), nullable=True),
        sa.Column("interval_type", sa.String(8), nullable=False),
        sa.Column("schedule_enabled", sa.Boolean(), nullable=False),
        sa.Column("adaptive_scheduling", sa.Boolean(), nullable=False),
        sa.Column("max_retries", sa.SmallInteger(), nullable=False),
        sa.Column("retry_backoff_seconds", sa.Integer(), nullable=False),
        sa.Column("current_retry_count", sa.SmallInteger(), nullable=False),
        sa.Column("next_run_at", sa.Float(), nullable=True),
        sa.Column("last_run_at", sa.Float(), nullable=True),
        sa.Column("is_paused", sa.Boolean(), nullable=False),
        sa.Column("paused_at", sa.Float(), nullable=True),
        sa.Column("cancelled_at", sa.Float(), nullable=True),
        sa.Column("lock_token", sa.String(64), nullable=True),
        sa.Column("lock_acquired_at", sa.Float(), nullable=True),
        sa.Column("locked_by", sa.String(128), nullable=True),
        sa.Column("last_moved_at", sa.Float(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_jobs_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.create_index("ix_jobs_due", ["status", "next_run_at"], unique=False)
        batch_op.create_index("ix_jobs_source_id", ["source_id"], unique=False)
        batch_op.create_index("ix_jobs_lock_acquired_at", ["lock_acquired_at"], unique=False)
    op.create_table(
        "job_executions",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("job_id", Id, nullable=False),
        sa.Column("execution_number", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("completed_at", sa.Float(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("items_crawled", sa.Integer(), nullable=False),
        sa.Column("items_indexed", sa.Integer(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("stack_trace", sa.Text(), nullable=True),
        sa.Column("cpu_time_ms", sa.Integer(), nullable=True),
        sa.Column("memory_peak_mb", sa.Float(), nullable=True),
        sa.Column("retry_attempt", sa.SmallInteger(), nullable=False),
        sa.Column("metadata", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_executions_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_executions")),
        sa.UniqueConstraint(
            "job_id", "execution_number", name=op.f("uq_job_executions_job_id_execution_number")
        ),
    )
    with op.batch_alter_table("job_executions") as batch_op:
        batch_op.create_index("ix_job_executions_started_at", ["started_at"], unique=False)
    op.create_table(
        "execution_logs",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("execution_id", Id, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("level", sa.String(10), nullable=False),
        sa.Column("logger", sa.String(100), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["execution_id"],
            ["job_executions.id"],
            name=op.f("fk_execution_logs_execution_id_job_executions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_execution_logs")),
        sa.UniqueConstraint("execution_id", "seq", name=op.f("uq_execution_logs_execution_id_seq")),
    )
    op.create_table(
        "source_adaptive_state",
        sa.Column("source_id", Id, nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=True),
        sa.Column("url_hashes", sa.Text(), nullable=False),
        sa.Column("last_change_at", sa.Float(), nullable=True),
        sa.Column("unchanged_count", sa.Integer(), nullable=False),
        sa.Column("current_interval", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_source_adaptive_state_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("source_id", name=op.f("pk_source_adaptive_state")),
    )
    op.create_table(
        "scheduler_leases",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("acquired_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_scheduler_leases")),
    )


def downgrade() -> None:
    op.drop_table("scheduler_leases")
    op.drop_table("source_adaptive_state")
    op.drop_table("execution_logs")
    with op.batch_alter_table("job_executions") as batch_op:
        batch_op.drop_index("ix_job_executions_started_at")
    op.drop_table("job_executions")
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_index("ix_jobs_lock_acquired_at")
        batch_op.drop_index("ix_jobs_source_id")
        batch_op.drop_index("ix_jobs_due")
    op.drop_table("jobs")
    op.drop_table("sources")
