"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-25 22:13:20.972773
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawls",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("seeds", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crawls")),
        sa.UniqueConstraint("name", name=op.f("uq_crawls_name")),
    )
    op.create_table(
        "domains",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("robots_txt", sa.Text(), nullable=True),
        sa.Column("robots_status", sa.SmallInteger(), nullable=True),
        sa.Column("robots_fetched_at", sa.Float(), nullable=True),
        sa.Column("crawl_delay", sa.Float(), nullable=True),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("page_count", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domains")),
        sa.UniqueConstraint("host", name=op.f("uq_domains_host")),
    )
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workers")),
    )
    op.create_table(
        "crawled_pages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("crawl_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("final_url", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("status_code", sa.SmallInteger(), nullable=True),
        sa.Column("content_type", sa.String(length=200), nullable=True),
        sa.Column("content_length", sa.BigInteger(), nullable=True),
        sa.Column("charset", sa.String(length=64), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("canonical", sa.Text(), nullable=True),
        sa.Column("lang", sa.String(length=35), nullable=True),
        sa.Column("links_count", sa.Integer(), nullable=False),
        sa.Column("redirects", sa.Text(), nullable=True),
        sa.Column("crawl_duration_ms", sa.Integer(), nullable=True),
        sa.Column("fetched_at", sa.Float(), nullable=False),
        sa.Column("error_class", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_crawled_pages_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crawled_pages")),
        sa.UniqueConstraint(
            "crawl_id", "url_hash", name=op.f("uq_crawled_pages_crawl_id_url_hash")
        ),
    )
    with op.batch_alter_table("crawled_pages", schema=None) as batch_op:
        batch_op.create_index(
            "ix_crawled_pages_fetched_at", ["crawl_id", "fetched_at"], unique=False
        )
        batch_op.create_index("ix_crawled_pages_host", ["crawl_id", "host"], unique=False)

    op.create_table(
        "urls",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("crawl_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.SmallInteger(), nullable=False),
        sa.Column("depth", sa.SmallInteger(), nullable=False),
        sa.Column("next_crawl_at", sa.Float(), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("leased_by", sa.String(length=64), nullable=True),
        sa.Column("attempts", sa.SmallInteger(), nullable=False),
        sa.Column("discovered_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("last_fetched_at", sa.Float(), nullable=True),
        sa.Column("status_code", sa.SmallInteger(), nullable=True),
        sa.Column("error_class", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=True),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["crawl_id"], ["crawls.id"], name=op.f("fk_urls_crawl_id_crawls"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_urls")),
        sa.UniqueConstraint("crawl_id", "url_hash", name=op.f("uq_urls_crawl_id_url_hash")),
    )
    with op.batch_alter_table("urls", schema=None) as batch_op:
        batch_op.create_index(
            "ix_urls_lease",
            ["crawl_id", "status", "host", "priority", "next_crawl_at"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("urls", schema=None) as batch_op:
        batch_op.drop_index("ix_urls_lease")

    op.drop_table("urls")
    with op.batch_alter_table("crawled_pages", schema=None) as batch_op:
        batch_op.drop_index("ix_crawled_pages_host")
        batch_op.drop_index("ix_crawled_pages_fetched_at")

    op.drop_table("crawled_pages")
    op.drop_table("workers")
    op.drop_table("domains")
    op.drop_table("crawls")
