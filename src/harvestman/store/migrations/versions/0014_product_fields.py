"""products: identifiers, condition, aggregate offer and rating, agreement of the forms

Revision ID: 0014
Revises: 0013

A product row gains what schema.org's Product, AggregateOffer and AggregateRating say beyond
name and price: ``mpn``; ``condition`` (OfferItemCondition: new, used, refurbished, damaged);
``low_price``, ``high_price`` and ``offer_count``; ``best_rating``, ``worst_rating`` and
``rating_count`` (``review_count`` stays the page's reviewCount); and which structured data
forms agreed on it: ``sources`` (a JSON list, "json-ld", "microdata", "opengraph") and
``confidence`` (0..1). All nullable: rows stored before have none of them until recrawled.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("mpn", sa.Text),
    ("condition", lambda: sa.String(16)),
    ("low_price", lambda: sa.Numeric(18, 4)),
    ("high_price", lambda: sa.Numeric(18, 4)),
    ("offer_count", sa.Integer),
    ("best_rating", lambda: sa.Numeric(6, 2)),
    ("worst_rating", lambda: sa.Numeric(6, 2)),
    ("rating_count", sa.Integer),
    ("sources", sa.Text),
    ("confidence", sa.Float),
)


def upgrade() -> None:
    for name, kind in _COLUMNS:
        op.add_column("products", sa.Column(name, kind(), nullable=True))


def downgrade() -> None:
    # Not in batch mode: on SQLite that rebuilds the table, and dropping `products` with
    # foreign keys on would cascade to its images. SQLite >= 3.35 drops a column in place.
    for name, _ in reversed(_COLUMNS):
        op.drop_column("products", name)
