"""downloaded product images, per-domain settings, proxy passwords encrypted at rest

Revision ID: 0016
Revises: 0014

``images`` gains what a download of the image found (``crawl_images``): ``path`` (its key in
the blob store), ``bytes``, ``sha256``, ``content_type``, ``fetched_at``, or why none was kept
(``error_class``, ``error``); indexed by URL, as a fetched image is written to every row that
shows it.

``domain_settings``: an operator's pause switch, crawl delay, concurrency, re-crawl interval and
priority per host.

``proxies.secret``: a proxy's password as a Fernet token; ``url`` keeps the URL with the
password masked. Rows written before held the password in clear in ``url``: they are deleted
(they are a cache of proxy health, rebuilt by the next crawl), so no clear password stays.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_IMAGE_COLUMNS = (
    ("path", lambda: sa.String(200)),
    ("bytes", sa.BigInteger),
    ("sha256", lambda: sa.String(64)),
    ("content_type", lambda: sa.String(200)),
    ("error_class", lambda: sa.String(64)),
    ("error", sa.Text),
    ("fetched_at", sa.Float),
)


def upgrade() -> None:
    # Not in batch mode: on SQLite that rebuilds the table (see 0014); adding a column is in place.
    for name, kind in _IMAGE_COLUMNS:
        op.add_column("images", sa.Column(name, kind(), nullable=True))
    op.create_index(op.f("ix_images_url"), "images", ["url"])
    op.create_table(
        "domain_settings",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("host", sa.String(300), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("crawl_delay", sa.Float(), nullable=True),
        sa.Column("concurrency", sa.Integer(), nullable=True),
        sa.Column("recrawl_interval", sa.Float(), nullable=True),
        sa.Column("priority", sa.SmallInteger(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domain_settings")),
        sa.UniqueConstraint("host", name=op.f("uq_domain_settings_host")),
    )
    op.execute("DELETE FROM proxies WHERE url LIKE '%@%'")
    op.add_column("proxies", sa.Column("secret", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("proxies", "secret")
    op.drop_table("domain_settings")
    op.drop_index(op.f("ix_images_url"), table_name="images")
    for name, _ in reversed(_IMAGE_COLUMNS):
        op.drop_column("images", name)
