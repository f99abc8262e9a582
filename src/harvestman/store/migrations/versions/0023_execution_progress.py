"""job_executions: a running execution's live counters and its samples for a chart

Revision ID: 0023
Revises: 0022

The process running an execution stores its counters every ``jobs_progress_interval`` (5 s):
``items_crawled`` and ``items_indexed`` (already there, written at the end until now),
``items_failed``, ``pages_per_second`` (between the last two samples) and ``progress``, the
samples as JSON ``[[at, fetched, stored, failed], ...]`` (at most ``jobs_progress_samples``,
thinned when full). Rows written before have no samples.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "job_executions",
        sa.Column("items_failed", sa.Integer(), nullable=False, server_default="0"),
    )
    op.add_column("job_executions", sa.Column("pages_per_second", sa.Float(), nullable=True))
    op.add_column("job_executions", sa.Column("progress", sa.Text(), nullable=True))


def downgrade() -> None:
    # Not in batch mode: SQLite >= 3.35 drops a column in place (see 0018).
    op.drop_column("job_executions", "progress")
    op.drop_column("job_executions", "pages_per_second")
    op.drop_column("job_executions", "items_failed")
