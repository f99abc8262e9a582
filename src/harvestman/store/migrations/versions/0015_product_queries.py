"""products as a data product: query indexes, the domain, price history, adaptive re-crawl

Revision ID: 0015
Revises: 0014

``products.domain`` (the page's host in lower case, without a leading ``www.``) is filled for
the rows stored before, so the domain filter is one index range. Indexes serve the product
query's filters and its orders (price, rating, last change), each ending in ``id``, the
keyset's tie-break; brand and category (then price) are indexed on their first 100
characters in lower case (a PostgreSQL B-tree refuses an entry over ~2,700 bytes, which would
refuse the batch). ``product_history`` keeps each change of a product's price, currency or
availability; ``urls.recrawl_unchanged`` counts a product page's re-crawls in a row that
changed none of them (its adaptive re-crawl interval). On a large PostgreSQL store the
indexes are built under a write lock: seconds per million products.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# (index, columns) on products
INDEXES = (
    ("ix_products_price", ["price", "id"]),
    ("ix_products_rating", ["rating", "id"]),
    ("ix_products_updated_at", ["updated_at", "id"]),
    ("ix_products_availability", ["availability", "price", "id"]),
    ("ix_products_currency", ["currency", "price", "id"]),
    ("ix_products_domain", ["domain", "updated_at", "id"]),
    ("ix_products_parser", ["parser", "id"]),
)
EXPRESSIONS = (
    ("ix_products_brand", "brand"),
    ("ix_products_category", "category"),
)
_BATCH = 5000


def upgrade() -> None:
    op.add_column("products", sa.Column("domain", sa.String(300), nullable=True))
    op.add_column("urls", sa.Column("recrawl_unchanged", sa.SmallInteger(), nullable=True))
    _fill_domains()
    for name, columns in INDEXES:
        op.create_index(name, "products", columns, unique=False)
    for name, column in EXPRESSIONS:
        expression = sa.text(f"lower(substr({column}, 1, 100))")
        op.create_index(name, "products", [expression, "price", "id"])
    op.create_table(
        "product_history",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("product_id", Id, nullable=False),
        sa.Column("price", sa.Numeric(18, 4), nullable=True),
        sa.Column("currency", sa.String(3), nullable=True),
        sa.Column("availability", sa.String(16), nullable=True),
        sa.Column("changed_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["product_id"],
            ["products.id"],
            ondelete="CASCADE",
            name="fk_product_history_product_id_products",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_product_history"),
    )
    op.create_index(
        "ix_product_history_product_id", "product_history", ["product_id", "changed_at", "id"]
    )


def _fill_domains() -> None:
    """The domain of every stored product's page, in id order, a batch at a time."""
    conn = op.get_bind()
    table = sa.table(
        "products", sa.column("id", sa.BigInteger), sa.column("page_url"), sa.column("domain")
    )
    last = 0
    while True:
        rows = conn.execute(
            sa.select(table.c.id, table.c.page_url)
            .where(table.c.id > last)
            .order_by(table.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        conn.execute(
            table.update()
            .where(table.c.id == sa.bindparam("row_id"))
            .values(domain=sa.bindparam("d")),
            [{"row_id": row.id, "d": _domain(row.page_url)} for row in rows],
        )
        last = rows[-1].id


def _domain(url: str) -> str | None:
    """The URL's host as the crawler keys it (``urls.host_key``: ``host:port`` off the default
    port; stored page URLs are normalized, so the netloc is that, less any userinfo), without
    a leading ``www.``: what ``store.products.query.domain_of`` makes of it, frozen here."""
    try:
        host = urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        return None
    return host.removeprefix("www.")[:300] or None


def downgrade() -> None:
    op.drop_index("ix_product_history_product_id", table_name="product_history")
    op.drop_table("product_history")
    for name, _ in reversed(EXPRESSIONS):
        op.drop_index(name, table_name="products")
    for name, _ in reversed(INDEXES):
        op.drop_index(name, table_name="products")
    # Not in batch mode: on SQLite that rebuilds the table, and dropping `products` with
    # foreign keys on would cascade to its images. SQLite >= 3.35 drops a column in place.
    op.drop_column("urls", "recrawl_unchanged")
    op.drop_column("products", "domain")
