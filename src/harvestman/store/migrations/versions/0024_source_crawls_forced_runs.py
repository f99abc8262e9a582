"""a source's crawl is named after it; a forced run is marked on its job

Revision ID: 0024
Revises: 0023

``sources.crawl``: the crawl namespace a source's jobs crawl into, fixed when the source is
created (a slug of its name and its id: ``my-shop-12``, ``jobs.records.crawl_name``) and never
moved by a rename. Every source that exists keeps the namespace it has crawled into so far,
``source-<id>``, so no page or frontier row is orphaned. Unique: two sources never share a crawl.

``jobs.forced_planned_at``: set by force-run ("Run now") to the run it brought forward, cleared
when that run starts; a run that finds it set re-visits every known page of the crawl and
leaves the adaptive interval alone, and the job's next run is the one it had planned.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sources", sa.Column("crawl", sa.String(200), nullable=True))
    op.execute(sa.text("UPDATE sources SET crawl = 'source-' || CAST(id AS VARCHAR(20))"))
    op.create_index("ix_sources_crawl", "sources", ["crawl"], unique=True)
    op.add_column("jobs", sa.Column("forced_planned_at", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "forced_planned_at")
    op.drop_index("ix_sources_crawl", table_name="sources")
    op.drop_column("sources", "crawl")
