"""backups: the scheduled backups and their outcome; pages by archive key

Revision ID: 0017
Revises: 0014

``backups``: one row per backup the service takes on its schedule (``store.lifecycle.schedule``):
when, where, how big, whether a restore verified it, or why it failed. ``GET /metrics`` reads its
last success and its failures from here, so every instance reports the same.

``ix_crawled_pages_archive_path`` (partial: archived pages only): retention deletes an archived
body once no page refers to its key, and looks the key up here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "backups",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=True),
        sa.Column("rows", sa.BigInteger(), nullable=True),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backups")),
    )
    op.create_index("ix_backups_status", "backups", ["status", "finished_at"])
    archived = sa.text("archive_path IS NOT NULL")
    op.create_index(
        "ix_crawled_pages_archive_path",
        "crawled_pages",
        ["archive_path"],
        sqlite_where=archived,
        postgresql_where=archived,
    )


def downgrade() -> None:
    op.drop_index("ix_crawled_pages_archive_path", table_name="crawled_pages")
    op.drop_index("ix_backups_status", table_name="backups")
    op.drop_table("backups")
