"""the product query's orders carry the last change; a brand by rating is an index walk

Revision ID: 0022
Revises: 0021

``ix_products_price`` and ``ix_products_rating`` end in ``updated_at`` after ``id``: a list
sorted by price or rating and filtered by ``since`` (changed at or after) then checks each
entry's last change in the index, rather than fetching every walked row from the table. On a
million products, changed in the last day and sorted by price, the first page read 17,687
rows to keep 51 (136 ms, 12,000 blocks read); now it fetches the 51 (1.1 ms).
``ix_products_brand_rating`` serves a brand by rating, whose ~1,000 rows were all fetched
and sorted for each page (17 ms warm, ~90 ms cold; now 0.4 ms). Each index is built under a
write lock: a few seconds per million products on PostgreSQL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# (index, its columns before, after)
ORDERS = (
    ("ix_products_price", ["price", "id"], ["price", "id", "updated_at"]),
    ("ix_products_rating", ["rating", "id"], ["rating", "id", "updated_at"]),
)
BRAND = sa.text("lower(substr(brand, 1, 100))")


def upgrade() -> None:
    for name, _, columns in ORDERS:
        op.drop_index(name, table_name="products")
        op.create_index(name, "products", columns)
    op.create_index("ix_products_brand_rating", "products", [BRAND, "rating", "id"])


def downgrade() -> None:
    op.drop_index("ix_products_brand_rating", table_name="products")
    for name, columns, _ in reversed(ORDERS):
        op.drop_index(name, table_name="products")
        op.create_index(name, "products", columns)
