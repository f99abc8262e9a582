"""frontier kinds and lastmod, validation and near-duplicates, proxies, cookies, discovery state

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("urls") as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(16), nullable=False, server_default="page"))
        batch_op.add_column(sa.Column("lastmod", sa.Float(), nullable=True))
    with op.batch_alter_table("crawled_pages") as batch_op:
        batch_op.add_column(sa.Column("validation_status", sa.String(8), nullable=True))
        batch_op.add_column(sa.Column("rejection_reason", sa.String(64), nullable=True))
        batch_op.add_column(sa.Column("simhash", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("near_duplicate_of", sa.String(64), nullable=True))
        batch_op.add_column(sa.Column("proxy", sa.Text(), nullable=True))
    with op.batch_alter_table("domains") as batch_op:
        batch_op.add_column(sa.Column("pagination_rules", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("archives_run_at", sa.Float(), nullable=True))
    op.create_table(
        "proxies",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("successes", sa.BigInteger(), nullable=False),
        sa.Column("failures", sa.BigInteger(), nullable=False),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("avg_response_ms", sa.Float(), nullable=True),
        sa.Column("last_used_at", sa.Float(), nullable=True),
        sa.Column("last_success_at", sa.Float(), nullable=True),
        sa.Column("last_failure_at", sa.Float(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("retired_until", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_proxies")),
        sa.UniqueConstraint("url", name=op.f("uq_proxies_url")),
    )
    op.create_table(
        "cookies",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("crawl_id", Id, nullable=False),
        sa.Column("domain", sa.String(300), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["crawl_id"], ["crawls.id"], name=op.f("fk_cookies_crawl_id_crawls"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cookies")),
        sa.UniqueConstraint(
            "crawl_id", "domain", "path", "name", name=op.f("uq_cookies_crawl_id_domain_path_name")
        ),
    )


def downgrade() -> None:
    op.drop_table("cookies")
    op.drop_table("proxies")
    with op.batch_alter_table("domains") as batch_op:
        batch_op.drop_column("archives_run_at")
        batch_op.drop_column("pagination_rules")
    with op.batch_alter_table("crawled_pages") as batch_op:
        for column in ("proxy", "near_duplicate_of", "simhash", "rejection_reason"):
            batch_op.drop_column(column)
        batch_op.drop_column("validation_status")
    with op.batch_alter_table("urls") as batch_op:
        batch_op.drop_column("lastmod")
        batch_op.drop_column("kind")
