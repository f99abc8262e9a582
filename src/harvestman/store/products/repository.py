"""Products as a data product: the query (``ProductQuery``), one product, its history, and a
bulk loader for benchmarks. Reads are synchronous: the API runs them on the store's threads.

Each product comes with its images, its offer (the price the page gives, an AggregateOffer's
range) and where it was seen: the page, when first stored, when its content last changed and
when its page was last fetched.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from sqlalchemy import Connection, Select, and_, bindparam, select

from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.keyset import Keyset
from harvestman.store.products.query import ProductQuery, Shape
from harvestman.store.schema import images, product_history, products, urls

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
# An item's columns in the order ``_item`` reads them; then its page's last fetch and images.
_ITEM_COLUMNS = (
    *_PRODUCT_FIELDS, *OFFER_FIELDS,
    "product_url", "page_url", "domain", "crawl_id", "sources", "created_at", "updated_at",
)  # fmt: skip
_OFFER_AT = len(_PRODUCT_FIELDS)
_REST_AT = _OFFER_AT + len(OFFER_FIELDS)
_IMAGE_FIELDS = ("url", "alt", "width", "height")


class ProductRepository(StoreConnection):
    """The product query's reads, and its bulk loader."""

    def list_products(
        self, query: ProductQuery, *, after: str | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Up to ``limit`` products past the cursor key ``after`` (ValueError when it is not
        one of this query's) and the key of the next page (None at the end)."""
        past = query.parse_key(after) if after is not None else None
        listing = _listing(query.shape(paged=past is not None), self.engine.dialect.name)
        with self._reading() as conn:
            rows = conn.execute(listing, query.values(past, limit)).all()
        more = len(rows) > limit
        items = [_item(row) for row in rows[:limit]]
        if not more:
            return items, None
        last = rows[limit - 1]
        value = last[_ITEM_COLUMNS.index(query.sort_column.name)]
        return items, query.key_of(value, last[0])

    def get_product(self, product_id: int) -> dict[str, Any] | None:
        """One product with its description and the parts its extraction skipped."""
        one = _product(self.engine.dialect.name)
        with self._reading() as conn:
            row = conn.execute(one, {"product_id": product_id}).first()
        if row is None:
            return None
        item = _item(row)
        description, errors = row[-2:]
        item["description"] = description
        item["errors"] = json.loads(errors) if errors else []
        return item

    def _reading(self) -> Connection:
        """A connection for one read statement."""
        return self.engine.connect().execution_options(**dialect.read_options(self.engine))

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


@functools.lru_cache(maxsize=256)
def _listing(shape: Shape, backend: str) -> Select[Any]:
    """The statement of a product query's shape: built and compiled once (SQLAlchemy caches
    the compiled form by the statement's memoized key), then run with each query's values.
    Building it each time was a quarter of a page's CPU, most of it the subquery's columns.

    The page is cut first and then joined to each row's frontier row (its last fetch) and
    images, one index probe a row: a plan that sorts (a brand by rating) joined every match
    first, and the images in a second statement cost a round trip."""
    page = shape.page(select(*(products.c[name] for name in _ITEM_COLUMNS), products.c.url_hash))
    cut = page.subquery("page")
    seen = cut.outerjoin(
        urls, and_(urls.c.crawl_id == cut.c.crawl_id, urls.c.url_hash == cut.c.url_hash)
    )
    columns = [cut.c[name] for name in _ITEM_COLUMNS]
    return (
        select(*columns, urls.c.last_fetched_at, _images_of(cut.c.id, backend))
        .select_from(seen)
        .order_by(*shape.order(cut.c[shape.sort_column.name], cut.c.id))
    )


@functools.lru_cache(maxsize=4)
def _product(backend: str) -> Select[Any]:
    """One product's statement: ``_listing``'s columns, then its description and errors."""
    columns = [products.c[name] for name in _ITEM_COLUMNS]
    return (
        select(*columns, urls.c.last_fetched_at, _images_of(products.c.id, backend),
               products.c.description, products.c.errors)
        .select_from(_SEEN)
        .where(products.c.id == bindparam("product_id"))
    )  # fmt: skip


def _images_of(product_id: Any, backend: str) -> Any:
    """A product's images as JSON text: [position, url, alt, width, height] each."""
    pictures = images.c
    return (
        select(dialect.json_rows(backend, pictures.position,
                                 *(pictures[name] for name in _IMAGE_FIELDS)))
        .where(pictures.product_id == product_id)
        .scalar_subquery()
    )  # fmt: skip


def _item(row: Sequence[Any]) -> dict[str, Any]:
    """The API's shape of a row of ``_ITEM_COLUMNS``, its page's last fetch and images."""
    item = dict(zip(_PRODUCT_FIELDS, row[:_OFFER_AT], strict=True))
    (product_url, page_url, domain, crawl_id, sources, created_at, updated_at, last_fetched_at,
     pictures) = row[_REST_AT : _REST_AT + 9]  # fmt: skip
    item["url"] = product_url or page_url
    item["domain"] = domain
    item["crawl_id"] = crawl_id
    item["sources"] = orjson.loads(sources) if sources else []
    item["offers"] = [dict(zip(OFFER_FIELDS, row[_OFFER_AT:_REST_AT], strict=True))]
    item["images"] = _pictures(pictures)
    item["seen"] = {
        "page_url": page_url,
        "first_seen_at": created_at,
        "changed_at": updated_at,
        "last_seen_at": last_fetched_at,
    }
    return item


def _pictures(found: str | None) -> list[dict[str, Any]]:
    """``_images_of``'s JSON as the API's images, by position."""
    if not found:
        return []
    rows = orjson.loads(found)
    if len(rows) > 1:
        rows.sort(key=lambda picture: picture[0])
    return [dict(zip(_IMAGE_FIELDS, picture[1:], strict=True)) for picture in rows]
