"""the lease's own order over pending rows: ix_urls_ready

Revision ID: 0021
Revises: 0014

``ix_urls_lease (crawl_id, status, host, priority, next_crawl_at)`` sorts priority ascending
while the lease orders ``priority DESC, next_crawl_at, id``: both databases scan a host's whole
top priority group and sort it on every lease, so a lease cost grew with the host's pending
rows (SQLite: 26 ms per host query at 16,000 pending rows of a host, against 0.08 ms with this
index; docs/SCALING.md §2.3 for PostgreSQL). The index is partial, over the pending rows only,
so it stays the size of the frontier. ``ix_urls_lease`` stays for the queries on other
statuses (the stale-lease sweep, counts by status).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0018"
branch_labels = None
depends_on = None

_PENDING = "status = 'pending'"


def upgrade() -> None:
    op.create_index(
        "ix_urls_ready",
        "urls",
        ["crawl_id", "host", sa.text("priority DESC"), "next_crawl_at", "id"],
        sqlite_where=sa.text(_PENDING),
        postgresql_where=sa.text(_PENDING),
    )


def downgrade() -> None:
    op.drop_index("ix_urls_ready", table_name="urls")
