"""the frontier's rows in progress get a small index; PostgreSQL drops ix_urls_lease

Revision ID: 0027
Revises: 0026

``ix_urls_lease (crawl_id, status, host, priority, next_crawl_at)`` stopped serving leases at
0021 (``ix_urls_ready`` does, in their order), yet every version of every URL row still writes
an entry into it: the row's insert, its lease and its completion (none is a HOT update:
``status`` is indexed). On PostgreSQL it goes: a crawl of 20,000 pages then costs the server
12 % less CPU and runs 7 % faster (bench/pg_cost.py, six runs each way in one sitting;
docs/SCALING.md §1.1), and the planner, from its statistics, serves what the index still served
from the others (counts by status and a host's failed URLs by ``ix_urls_status``, the hosts
with pending rows and the rows due by ``ix_urls_ready``, index-only). SQLite keeps it: it plans
without statistics and took ``ix_urls_status`` or ``ix_urls_host`` for those, reading the table
behind them (``harvestman status`` 5x slower at 20,000 URLs), for a write cost that is in-process
and small there.

The heartbeat, the release of a worker's leases and the sweep of stale leases name no crawl, so
no index served them: each read the whole table (128-141 ms at 1,000,000 rows, docs/SCALING.md
§2.1). ``ix_urls_leased_by`` holds the rows in progress only (the leases out, not the
frontier): one entry a URL while it is leased. ``lease_until`` stays out of it, so the
heartbeat's update of it can stay HOT.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_IN_PROGRESS = "status = 'in_progress'"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_urls_lease", table_name="urls")
    op.create_index(
        "ix_urls_leased_by",
        "urls",
        ["leased_by"],
        sqlite_where=sa.text(_IN_PROGRESS),
        postgresql_where=sa.text(_IN_PROGRESS),
    )


def downgrade() -> None:
    op.drop_index("ix_urls_leased_by", table_name="urls")
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(
            "ix_urls_lease", "urls", ["crawl_id", "status", "host", "priority", "next_crawl_at"]
        )
