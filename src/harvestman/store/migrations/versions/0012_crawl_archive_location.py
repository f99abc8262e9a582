"""crawls: where the raw archive keeps a crawl's bodies

Revision ID: 0012
Revises: 0011

A WARC export read bodies from wherever its own settings pointed; when they differed from the
crawl's (another working directory, another bucket), every page was "lost". A crawl with the
raw archive on now records the location when it starts, and the export reads it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("crawls", sa.Column("archive_location", sa.Text(), nullable=True))


def downgrade() -> None:
    # Not in batch mode: on SQLite that rebuilds the table, and dropping `crawls` with foreign
    # keys on would cascade to every row of the crawl. SQLite >= 3.35 drops a column in place.
    op.drop_column("crawls", "archive_location")
