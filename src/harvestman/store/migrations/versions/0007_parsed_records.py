"""extraction records, main text and parser statistics (issue 7)

Revision ID: 0007
Revises: 0006

- ``parsed_records``: what site parsers found, one row per (crawl, page, parser, record key).
- ``parser_stats``: parse outcomes per (crawl, host, parser, version, day).
- ``crawled_pages.main_text``: the article text without boilerplate (opt-in).
- ``sources.options``: per-source crawl options (main text, feeds, pagination, ...), JSON.

Columns are added with ``ALTER TABLE ADD COLUMN`` and dropped with ``ALTER TABLE DROP COLUMN``
(SQLite >= 3.35) rather than a batch copy of the table: a copy would drop the full-text search
triggers that migration 0006 put on ``crawled_pages``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "parsed_records",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("crawl_id", Id, nullable=False),
        sa.Column("url_hash", sa.String(length=64), nullable=False),
        sa.Column("page_url", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("parser", sa.String(length=100), nullable=False),
        sa.Column("parser_version", sa.String(length=50), nullable=False),
        sa.Column("record_key", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("first_seen_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_parsed_records_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_parsed_records")),
        sa.UniqueConstraint(
            "crawl_id",
            "url_hash",
            "parser",
            "record_key",
            name=op.f("uq_parsed_records_crawl_id_url_hash_parser_record_key"),
        ),
    )
    op.create_index("ix_parsed_records_parser", "parsed_records", ["crawl_id", "parser", "kind"])
    op.create_table(
        "parser_stats",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("crawl_id", Id, nullable=False),
        sa.Column("day", sa.Float(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("parser", sa.String(length=100), nullable=False),
        sa.Column("parser_version", sa.String(length=50), nullable=False),
        sa.Column("attempts", sa.BigInteger(), nullable=False),
        sa.Column("successes", sa.BigInteger(), nullable=False),
        sa.Column("empty", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["crawl_id"],
            ["crawls.id"],
            name=op.f("fk_parser_stats_crawl_id_crawls"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_parser_stats")),
        sa.UniqueConstraint(
            "crawl_id",
            "host",
            "parser",
            "parser_version",
            "day",
            name=op.f("uq_parser_stats_crawl_id_host_parser_parser_version_day"),
        ),
    )
    op.add_column("crawled_pages", sa.Column("main_text", sa.Text(), nullable=True))
    op.add_column("sources", sa.Column("options", sa.Text(), nullable=False, server_default="{}"))


def downgrade() -> None:
    op.drop_column("sources", "options")
    op.drop_column("crawled_pages", "main_text")
    op.drop_table("parser_stats")
    op.drop_index("ix_parsed_records_parser", table_name="parsed_records")
    op.drop_table("parsed_records")
