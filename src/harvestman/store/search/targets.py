"""What can be searched: crawled pages and products, their filters as SQL, and the reads that
turn ranked ids into hits (``harvestman.search.hits``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Engine, bindparam, text
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import StoreError
from harvestman.search.hits import MAX_LIMIT, RANK_WINDOW, PageHit, ProductHit, SearchResult
from harvestman.search.query import Query, parse_query, snippet
from harvestman.store import dialect
from harvestman.store.search.plan import Filter, Target
from harvestman.store.search.ranking import Ranked, rank

# On PostgreSQL pages are ranked on a short vector (title, description, the text's first 1,000
# characters; migration 0008): reading each match's whole vector cost 55 ms a query.
PAGES = Target("crawled_pages", ("title", "description", "text"), (10.0, 4.0, 1.0),
               "rank_vector", "pair_vector")  # fmt: skip
PRODUCTS = Target("products", ("name", "brand", "category", "description"), (10.0, 5.0, 3.0, 1.0))


def search_pages(
    engine: Engine,
    crawl_id: int | None,
    q: str,
    *,
    domain: str | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = 20,
    offset: int = 0,
    window: int = RANK_WINDOW,
) -> SearchResult[PageHit]:
    """Pages of ``crawl_id`` (every crawl when None) matching ``q`` (see :mod:`.query`).

    ``domain`` keeps pages of that host, ``example.com`` also ``www.example.com``; ``since`` <=
    ``fetched_at`` < ``until`` (epoch seconds). Titles weigh most, then descriptions, then the
    visible text. Raises ValueError for a limit outside 1..100 or a negative offset.
    """
    _check_page(limit, offset)
    filters = _crawl_filter(crawl_id)
    if domain:
        # Pages of a host are indexed by crawl, host and id: a crawl's are walked newest first.
        filters.append(_host_filter(domain, "p.host", "host", walkable=crawl_id is not None))
    if since is not None:
        filters.append(Filter("p.fetched_at >= :since", {"since": since}))
    if until is not None:
        # Pages fetched before a date are among the oldest rows, not the newest.
        filters.append(Filter("p.fetched_at < :until", {"until": until}, narrow=True))
    query = parse_query(q)
    columns = "id, crawl_id, final_url, url, title, description, text, fetched_at, host"
    ranked, rows = _run(engine, PAGES, query, filters, limit, offset, window, columns)
    hits = [
        PageHit(
            url=row.final_url,
            requested_url=row.url,
            title=row.title,
            snippet=snippet(row.text or row.description or row.title, ranked.query.words),
            rank=score,
            fetched_at=row.fetched_at,
            host=row.host,
            crawl_id=row.crawl_id,
            page_id=row.id,
        )
        for row, score in rows
    ]
    return SearchResult(ranked.total, ranked.is_exact, hits, ranked.ignored)


def search_products(
    engine: Engine,
    crawl_id: int | None,
    q: str,
    *,
    domain: str | None = None,
    min_price: Decimal | None = None,
    max_price: Decimal | None = None,
    currency: str | None = None,
    availability: str | Iterable[str] | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = 20,
    offset: int = 0,
    window: int = RANK_WINDOW,
) -> SearchResult[ProductHit]:
    """Products of ``crawl_id`` (every crawl when None) matching ``q`` in name, brand, category
    or description (weighed in that order).

    ``min_price`` <= price <= ``max_price`` (a product without a price fails a price filter;
    prices in different currencies compare as numbers, so give ``currency`` with a range);
    ``availability`` one or several normalized values (``in_stock``, ...); ``domain`` as in
    :func:`search_pages`, on the host of the page the product was found on; ``since`` <=
    ``updated_at`` < ``until`` (when the product last changed).
    """
    _check_page(limit, offset)
    filters = _crawl_filter(crawl_id)
    sqlite = dialect.is_sqlite(engine)
    if domain:
        host = "split_part(split_part(p.page_url, '://', 2), '/', 1)"
        filters.append(_host_filter(domain, host, None))
    # pysqlite binds no Decimal; SQLite compares its NUMERIC column as a REAL anyway.
    convert = float if sqlite else Decimal
    if min_price is not None:
        filters.append(Filter("p.price >= :min_price", {"min_price": convert(min_price)}))
    if max_price is not None:
        filters.append(Filter("p.price <= :max_price", {"max_price": convert(max_price)}))
    if currency:
        code = currency.strip().upper()
        filters.append(
            Filter("p.currency = :currency", {"currency": code}, _token("k", code), narrow=True)
        )
    if availability is not None:
        values = [availability] if isinstance(availability, str) else sorted(set(availability))
        tokens = "(" + " OR ".join(_token("a", v) for v in values) + ")" if values else None
        filters.append(
            Filter("p.availability IN :availability", {"availability": values}, tokens,
                   ("availability",), narrow=True)
        )  # fmt: skip
    if since is not None:
        filters.append(Filter("p.updated_at >= :since", {"since": since}))
    if until is not None:
        filters.append(Filter("p.updated_at < :until", {"until": until}, narrow=True))
    query = parse_query(q)
    columns = (
        "id, name, brand, price, currency, availability, product_url, page_url, description, "
        "updated_at, sku, gtin, mpn, condition, low_price, high_price, offer_count, rating, "
        "best_rating, worst_rating, review_count, rating_count, sources, confidence, crawl_id"
    )
    ranked, rows = _run(engine, PRODUCTS, query, filters, limit, offset, window, columns)
    hits = [
        ProductHit(
            name=row.name,
            brand=row.brand,
            price=_decimal(row.price),
            currency=row.currency,
            availability=row.availability,
            url=row.product_url or row.page_url,
            page_url=row.page_url,
            snippet=snippet(row.description or row.name, ranked.query.words),
            rank=score,
            updated_at=row.updated_at,
            host=urlsplit(row.page_url).netloc.rpartition("@")[2],
            sku=row.sku,
            gtin=row.gtin,
            mpn=row.mpn,
            condition=row.condition,
            low_price=_decimal(row.low_price),
            high_price=_decimal(row.high_price),
            offer_count=row.offer_count,
            rating=_decimal(row.rating),
            best_rating=_decimal(row.best_rating),
            worst_rating=_decimal(row.worst_rating),
            review_count=row.review_count,
            rating_count=row.rating_count,
            sources=tuple(json.loads(row.sources)) if row.sources else (),
            confidence=row.confidence,
            crawl_id=row.crawl_id,
        )
        for row, score in rows
    ]
    return SearchResult(ranked.total, ranked.is_exact, hits, ranked.ignored)


def _decimal(value: Any) -> Decimal | None:
    """A NUMERIC column's value as a Decimal (SQLite hands back a float: read its shortest repr)."""
    return None if value is None else Decimal(str(value))


def _check_page(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be within 1..{MAX_LIMIT}, not {limit}")
    if offset < 0:
        raise ValueError(f"offset must not be negative, not {offset}")


def _crawl_filter(crawl_id: int | None) -> list[Filter]:
    if crawl_id is None:
        return []
    # A crawl that holds most of the store is checked on each candidate; a small one is
    # intersected in the index, so its matches are not looked for among everyone else's.
    crawl = int(crawl_id)
    return [
        Filter("p.crawl_id = :crawl_id", {"crawl_id": crawl}, f"c{crawl}", tokens_if_rare=True,
               equals=("crawl_id", (crawl,)))
    ]  # fmt: skip


def _host_filter(
    domain: str, host_sql: str, column: str | None, *, walkable: bool = False
) -> Filter:
    """``column``: the table's own host column, if it has one (its statistics size the scan)."""
    host = domain.strip().lower().rstrip(".")
    hosts = (host, f"www.{host}")
    # The SQLite index holds each page's host and its host without "www." (migration 0006).
    return Filter(
        f"{host_sql} IN (:host, :www_host)",
        {"host": host, "www_host": hosts[1]},
        _token("h", host),
        narrow=True,
        equals=(column, hosts) if column else None,
        walkable=walkable,
    )


def _token(prefix: str, value: str) -> str:
    """A scope token as migration 0006 writes it: prefix + the value's UTF-8 bytes in hex."""
    return prefix + value.encode("utf-8").hex()


def _run(
    engine: Engine,
    target: Target,
    query: Query,
    filters: list[Filter],
    limit: int,
    offset: int,
    window: int,
    columns: str,
) -> tuple[Ranked, list[tuple[Any, float]]]:
    """Rank, then read the page of hits' rows, in one read transaction."""
    try:
        with engine.connect() as conn:
            ranked = rank(conn, target, query, filters, limit=limit, offset=offset, window=window)
            if not ranked.rows:
                return ranked, []
            select = text(f"SELECT {columns} FROM {target.table} WHERE id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            )
            found = {
                row.id: row for row in conn.execute(select, {"ids": [i for i, _ in ranked.rows]})
            }
    except SQLAlchemyError as exc:
        raise StoreError(f"{type(exc).__name__}: {exc}") from exc
    # A row deleted between the two reads is left out rather than shown empty.
    return ranked, [(found[i], score) for i, score in ranked.rows if i in found]
