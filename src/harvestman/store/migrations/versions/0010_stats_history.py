"""stats history: per-minute crawl counters rolled up to daily (issue 7)

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

COUNTERS = (
    "pages", "failed", "errors", "bytes", "status_2xx", "status_3xx", "status_4xx", "status_5xx",
    "robots_denied", "new_urls",
)  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "stats_history",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("crawl_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("resolution", sa.String(length=8), nullable=False),
        sa.Column("bucket_start", sa.Float(), nullable=False),
        *(sa.Column(name, sa.BigInteger(), nullable=False) for name in COUNTERS),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_stats_history_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stats_history")),
        sa.UniqueConstraint(
            "crawl_id",
            "resolution",
            "bucket_start",
            name=op.f("uq_stats_history_crawl_id_resolution_bucket_start"),
        ),
    )
    with op.batch_alter_table("stats_history", schema=None) as batch_op:
        batch_op.create_index("ix_stats_history_time", ["resolution", "bucket_start"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("stats_history", schema=None) as batch_op:
        batch_op.drop_index("ix_stats_history_time")
    op.drop_table("stats_history")
