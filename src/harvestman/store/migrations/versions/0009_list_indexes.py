"""indexes for the API's keyset-paged lists (issue 4)

Revision ID: 0009
Revises: 0008

Each list endpoint reads ``WHERE <filters> AND id >/< :after ORDER BY id LIMIT n``; these
indexes end in the order column after the equality filters, so a page is one index range on
SQLite and PostgreSQL alike (SQLite appends the rowid to every index, PostgreSQL does not).
On a large PostgreSQL store the indexes are built under a write lock: seconds per million rows.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# (table, index, columns) created by this revision
NEW = (
    ("urls", "ix_urls_crawl_id", ["crawl_id", "id"]),
    ("urls", "ix_urls_status", ["crawl_id", "status", "id"]),
    ("urls", "ix_urls_host", ["crawl_id", "host", "id"]),
    ("crawled_pages", "ix_crawled_pages_crawl_id", ["crawl_id", "id"]),
    ("crawled_pages", "ix_crawled_pages_status_code", ["crawl_id", "status_code", "id"]),
    (
        "crawled_pages",
        "ix_crawled_pages_validation_status",
        ["crawl_id", "validation_status", "id"],
    ),
    ("jobs", "ix_jobs_status", ["status", "id"]),
)
# (table, index, columns before, columns after): the order column appended
WIDENED = (
    ("crawled_pages", "ix_crawled_pages_host", ["crawl_id", "host"], ["crawl_id", "host", "id"]),
    ("jobs", "ix_jobs_source_id", ["source_id"], ["source_id", "id"]),
)


def upgrade() -> None:
    for table, name, _before, after in WIDENED:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, after, unique=False)
    for table, name, columns in NEW:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    for table, name, _columns in reversed(NEW):
        op.drop_index(name, table_name=table)
    for table, name, before, _after in reversed(WIDENED):
        op.drop_index(name, table_name=table)
        op.create_index(name, table, before, unique=False)
