"""Products as a data product: the query (``ProductQuery``), one product, its history, and a
bulk loader for benchmarks. Reads are synchronous: the API runs them on the store's threads.

Each product comes with its images, its offer (the price the page gives, an AggregateOffer's
range) and where it was seen: the page, when first stored, when its content last changed and
when its page was last fetched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select, tuple_
from sqlalchemy.engine import RowMapping

from harvestman.store.connection import StoreConnection
from harvestman.store.keyset import Keyset
from harvestman.store.products.query import ProductQuery
from harvestman.store.schema import images, product_history, products, urls

_LISTED = tuple(c for c in products.c if c.name not in ("description", "errors"))
_HISTORY = Keyset(product_history.c.id)
OFFER_FIELDS = (
    "price", "currency", "availability", "condition", "low_price", "high_price", "offer_count",
)  # fmt: skip
_PRODUCT_FIELDS = (
    "id", "name", "brand", "category", "sku", "gtin", "mpn", "rating", "best_rating",
    "worst_rating", "review_count", "rating_count", "source", "parser", "confidence",
)  # fmt: skip


class ProductRepository(StoreConnection):
    """The product query's reads, and its bulk loader."""

    def list_products(
        self, query: ProductQuery, *, after: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Up to ``limit`` products past the cursor key ``after`` (ValueError when it is not
        one of this query's) and the key of the next page (None at the end)."""
        past = query.parse_key(after) if after is not None else None
        with self.engine.connect() as conn:
            rows = list(conn.execute(query.paged(select(*_LISTED), past, limit)).mappings())
            more = len(rows) > limit
            rows = rows[:limit]
            items = _complete(conn, rows)
        return items, query.key_of(rows[-1]) if more else None

    def get_product(self, product_id: int) -> dict[str, Any] | None:
        """One product with its description and the parts its extraction skipped."""
        with self.engine.connect() as conn:
            rows = list(
                conn.execute(select(products).where(products.c.id == product_id)).mappings()
            )
            if not rows:
                return None
            item = _complete(conn, rows)[0]
        row = rows[0]
        item["description"] = row["description"]
        item["errors"] = json.loads(row["errors"]) if row["errors"] else []
        return item

    def product_history(
        self, product_id: int, *, after: int | None = None, limit: int = 200
    ) -> tuple[list[dict[str, Any]], int | None] | None:
        """A product's changes, oldest first, and the key of the next page; None when there
        is no such product."""
        with self.engine.connect() as conn:
            found = conn.execute(
                select(products.c.id).where(products.c.id == product_id)
            ).scalar_one_or_none()
            if found is None:
                return None
            columns = (product_history.c.id, product_history.c.changed_at,
                       product_history.c.price, product_history.c.currency,
                       product_history.c.availability)  # fmt: skip
            rows, next_after = _HISTORY.page(
                conn,
                select(*columns).where(product_history.c.product_id == product_id),
                after=after,
                limit=limit,
                prefix=[product_history.c.product_id],
            )
        return [dict(row) for row in rows], next_after  # type: ignore[return-value]

    def load_products(self, crawl_id: int, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert ready product rows (the columns of ``products`` but ``crawl_id``) in one
        transaction: the benchmarks' and tests' loader, not the crawl's writer."""
        batch = [{**row, "crawl_id": crawl_id} for row in rows]
        if batch:
            with self._begin() as conn:
                conn.execute(products.insert(), batch)
        return len(batch)


def _complete(conn: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """The API's shape of ``rows``: images, offers and where each was seen, in two reads."""
    if not rows:
        return []
    pictures: dict[int, list[dict[str, Any]]] = {}
    for image in conn.execute(
        select(images.c.product_id, images.c.url, images.c.alt, images.c.width,
               images.c.height)
        .where(images.c.product_id.in_([row["id"] for row in rows]))
        .order_by(images.c.product_id, images.c.position)
    ).mappings():  # fmt: skip
        picture = {k: image[k] for k in ("url", "alt", "width", "height")}
        pictures.setdefault(image["product_id"], []).append(picture)
    pages = {(row["crawl_id"], row["url_hash"]) for row in rows}
    fetched = {
        (crawl_id, url_hash): at
        for crawl_id, url_hash, at in conn.execute(
            select(urls.c.crawl_id, urls.c.url_hash, urls.c.last_fetched_at).where(
                tuple_(urls.c.crawl_id, urls.c.url_hash).in_(sorted(pages))
            )
        )
    }
    items = []
    for row in rows:
        item = {name: row[name] for name in _PRODUCT_FIELDS}
        item["url"] = row["product_url"] or row["page_url"]
        item["domain"] = row["host"]
        item["crawl_id"] = row["crawl_id"]
        item["sources"] = json.loads(row["sources"]) if row["sources"] else []
        item["offers"] = [{name: row[name] for name in OFFER_FIELDS}]
        item["images"] = pictures.get(row["id"], [])
        item["seen"] = {
            "page_url": row["page_url"],
            "first_seen_at": row["created_at"],
            "changed_at": row["updated_at"],
            "last_seen_at": fetched.get((row["crawl_id"], row["url_hash"])),
        }
        items.append(item)
    return items
