"""urls: where a URL was found (parent row, discovery kind); parser rollouts

Revision ID: 0018
Revises: 0014

``urls.parent_id`` is the frontier row of the page, sitemap or feed that first revealed the URL
and ``urls.discovered_via`` how (link, sitemap, feed, pagination, archive; seed for start URLs);
both NULL for rows written before. Only the first discovery is kept: a URL met again is not
written again (the insert is ON CONFLICT DO NOTHING), which keeps the ingest write one
statement. ``ix_urls_parent`` serves the links a page yielded. ``parser_rollouts`` holds, per
site parser and domain ('*': every domain), the candidate version and the share of pages it
parses.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("urls", sa.Column("parent_id", Id, nullable=True))
    op.add_column("urls", sa.Column("discovered_via", sa.String(16), nullable=True))
    op.create_index("ix_urls_parent", "urls", ["crawl_id", "parent_id", "id"])
    op.create_table(
        "parser_rollouts",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("parser", sa.String(100), nullable=False),
        sa.Column("domain", sa.String(300), nullable=False),
        sa.Column("version", sa.String(50), nullable=False),
        sa.Column("share", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_parser_rollouts"),
        sa.UniqueConstraint("parser", "domain", name="uq_parser_rollouts_parser_domain"),
    )


def downgrade() -> None:
    op.drop_table("parser_rollouts")
    op.drop_index("ix_urls_parent", table_name="urls")
    # Not in batch mode: on SQLite that rebuilds the table, and dropping `urls` with foreign
    # keys on would cascade. SQLite >= 3.35 drops a column in place.
    op.drop_column("urls", "discovered_via")
    op.drop_column("urls", "parent_id")
