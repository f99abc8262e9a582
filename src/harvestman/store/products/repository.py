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

from sqlalchemy import Connection, and_, select
from sqlalchemy.engine import RowMapping

from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.keyset import Keyset
from harvestman.store.products.query import ProductQuery
from harvestman.store.schema import images, product_history, products, urls

_LISTED = tuple(c for c in products.c if c.name not in ("description", "errors"))
# A product and when its page was last fetched (its frontier row).
_SEEN = products.outerjoin(
    urls, and_(urls.c.crawl_id == products.c.crawl_id, urls.c.url_hash == products.c.url_hash)
)
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
        # The page's last fetch is read in the same statement, one index probe a row (a second
        # statement for 50 rows cost a round trip and a 100-parameter parse), and joined to the
        # page once it is cut: a plan that sorts (a brand by rating) joined every match first.
        with self.engine.connect() as conn:
            page = query.paged(select(*_LISTED), past, limit).subquery("page")
            seen = page.outerjoin(
                urls, and_(urls.c.crawl_id == page.c.crawl_id, urls.c.url_hash == page.c.url_hash)
            )
            listed = (
                select(page, urls.c.last_fetched_at)
                .select_from(seen)
                .order_by(*query.order(page.c[query.sort_column.name], page.c.id))
            )
            rows = list(conn.execute(listed).mappings())
            more = len(rows) > limit
            rows = rows[:limit]
            items = _complete(conn, rows)
        return items, query.key_of(rows[-1]) if more else None

    def get_product(self, product_id: int) -> dict[str, Any] | None:
        """One product with its description and the parts its extraction skipped."""
        with self.engine.connect() as conn:
            one = select(products, urls.c.last_fetched_at).select_from(_SEEN)
            rows = list(conn.execute(one.where(products.c.id == product_id)).mappings())
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

    def load_products(
        self, crawl_id: int, rows: Iterable[Mapping[str, Any]], *, with_pages: bool = False
    ) -> int:
        """Insert ready product rows (the columns of ``products`` but ``crawl_id`` and ``id``)
        in one transaction, and with ``with_pages`` a completed frontier row for each
        (``crawl_id``, ``url_hash``) of them: the benchmarks' and tests' loader, not the crawl's
        writer. PostgreSQL takes them by COPY (a million products in about a minute here),
        SQLite by executemany."""
        batch = [{**row, "crawl_id": crawl_id} for row in rows]
        if not batch:
            return 0
        pages = []
        if with_pages:
            pages = [
                {"crawl_id": crawl_id, "url_hash": row["url_hash"], "url": row["page_url"],
                 "host": row["page_url"].split("/")[2], "status": "completed", "priority": 2,
                 "depth": 0,
                 "next_crawl_at": row["updated_at"], "attempts": 0,
                 "discovered_at": row["created_at"], "updated_at": row["updated_at"],
                 "last_fetched_at": row["updated_at"], "kind": "page"}
                for row in batch
                if row.get("position", 0) == 0
            ]  # fmt: skip
        with self._begin() as conn:
            for table, table_rows in ((products, batch), (urls, pages)):
                if not table_rows:
                    continue
                if dialect.is_sqlite(self.engine):
                    conn.execute(table.insert(), table_rows)
                else:
                    _copy(conn, table.name, table_rows)
        return len(batch)


def _copy(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """PostgreSQL's COPY FROM STDIN of ``rows`` (all with the same keys) into ``table``."""
    names = list(rows[0])
    raw: Any = conn.connection.driver_connection
    with raw.cursor() as cursor:
        sql = f"COPY {table} ({', '.join(names)}) FROM STDIN"
        with cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row([row[name] for name in names])


def _complete(conn: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """The API's shape of ``rows`` (with their page's ``last_fetched_at``): images, offers
    and where each was seen; the images in one more read."""
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
    items = []
    for row in rows:
        item = {name: row[name] for name in _PRODUCT_FIELDS}
        item["url"] = row["product_url"] or row["page_url"]
        item["domain"] = row["domain"]
        item["crawl_id"] = row["crawl_id"]
        item["sources"] = json.loads(row["sources"]) if row["sources"] else []
        item["offers"] = [{name: row[name] for name in OFFER_FIELDS}]
        item["images"] = pictures.get(row["id"], [])
        item["seen"] = {
            "page_url": row["page_url"],
            "first_seen_at": row["created_at"],
            "changed_at": row["updated_at"],
            "last_seen_at": row["last_fetched_at"],
        }
        items.append(item)
    return items
