"""What the crawler writes: a batch of outcomes and the URLs they discovered, in one
transaction (``record``), with the URL states, pages, errors, products and parsed records."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, text, update

from harvestman.errors import RobotsDenied, error_category
from harvestman.records import NewUrl, Outcome
from harvestman.recrawl import RecrawlRule
from harvestman.store import dialect, isolation, parsed, pgbatch
from harvestman.store.bulk import execute_many
from harvestman.store.connection import StoreConnection
from harvestman.store.crawl.frontier import insert_urls
from harvestman.store.crawl.images import (
    carry_downloads,
    delete_product_images,
    write_image_outcomes,
)
from harvestman.store.products import history
from harvestman.store.products.query import domain_of
from harvestman.store.schema import crawled_pages, domains, error_logs, images, products, urls

_PAGE_COLUMNS = (
    "url", "final_url", "host", "status_code", "content_type", "content_length", "charset",
    "content_hash", "title", "description", "canonical", "lang", "links_count",
    "crawl_duration_ms", "fetched_at", "error_class", "error", "validation_status",
    "rejection_reason", "simhash", "near_duplicate_of", "proxy", "archive_path", "text",
    "main_text",
)  # fmt: skip
_PAGE_ROW_COLUMNS = ("crawl_id", "url_hash", *_PAGE_COLUMNS, "redirects")

# Statements built once: store.bulk compiles each once.
_COUNT_PAGES = (
    update(domains)
    .where(domains.c.host == bindparam("h"))
    .values(page_count=domains.c.page_count + bindparam("n"), updated_at=bindparam("now"))
)
_FINISH_URL = (
    update(urls)
    .where(urls.c.id == bindparam("row_id"))
    .values(
        status=bindparam("new_status"),
        next_crawl_at=bindparam("new_next"),
        attempts=bindparam("new_attempts"),
        lease_until=None,
        leased_by=None,
        updated_at=bindparam("now"),
        last_fetched_at=bindparam("fetched_at"),
        status_code=bindparam("code"),
        error_class=bindparam("err_class"),
        error=bindparam("err"),
        # A 304 carries no body: keep what the last full fetch stored.
        content_hash=func.coalesce(bindparam("hash"), urls.c.content_hash),
        etag=func.coalesce(bindparam("new_etag"), urls.c.etag),
        last_modified=func.coalesce(bindparam("new_lm"), urls.c.last_modified),
    )
)


@functools.cache
def _page_upsert(backend: str) -> dialect.Upsert:
    """The pages' upsert on the dialect named ``backend``, built once (26 columns: ~0.5 ms a
    batch)."""
    stmt = dialect.insert_of(backend, crawled_pages)
    return stmt.on_conflict_do_update(
        index_elements=["crawl_id", "url_hash"],
        set_={name: stmt.excluded[name] for name in (*_PAGE_COLUMNS, "redirects")},
    )


# SQLite's search index of pages (migrations 0006 and 0026), written by the batch writer itself.
_DEFER_INDEX = text("INSERT INTO crawled_pages_fts_deferred (deferred) VALUES (1)")
_RESUME_INDEX = text("DELETE FROM crawled_pages_fts_deferred")
_INDEX_NEWER = text(
    "INSERT INTO crawled_pages_fts (rowid, title, description, text, scope) "
    "SELECT id, title, description, text, scope FROM crawled_pages_search WHERE id > :newest"
)
_NEWEST_PAGE = select(func.max(crawled_pages.c.id))
_HOSTS_NEWER = select(crawled_pages.c.host).where(crawled_pages.c.id > bindparam("newest"))


class OutcomeRepository(StoreConnection):
    """Batch writes of the crawl's outcomes."""

    async def record(
        self, crawl_id: int, outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl], now: float
    ) -> dict[int, str]:
        """Write a batch in one transaction: discovered URLs, URL states and pages.

        Values are fitted to their columns first; a record the store still refuses is
        dead-lettered and the rest written (``store.isolation``). Raises only transient errors.
        Returns the dead-lettered outcomes: their request ids and the store's message.
        """

        def _write(
            conn: Connection, outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl]
        ) -> None:
            insert_urls(conn, crawl_id, new_urls, now)
            if outcomes:
                self._write_outcomes(conn, crawl_id, outcomes, now)

        report = await self._run(
            isolation.write_batch, self._begin_batch, _write, crawl_id, outcomes, new_urls, now
        )
        return {
            unit.request.id: message
            for unit, message in report.rejected
            if isinstance(unit, Outcome)
        }

    def _write_outcomes(
        self, conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
    ) -> None:
        # In id order, the order every statement that waits on urls rows locks them in (see
        # store.transaction.locked_ids): a batch write and a lease extension once deadlocked.
        outcomes = sorted(outcomes, key=lambda o: o.request.id)
        if self.is_embedded:
            self._finish_urls(conn, outcomes, now)
        else:
            pgbatch.finish_urls(conn, outcomes, now)
        self._write_errors(conn, crawl_id, outcomes, now)
        self._write_products(conn, crawl_id, [o for o in outcomes if o.products is not None], now)
        write_image_outcomes(conn, crawl_id, outcomes, now)
        not_modified = {
            o.request.id: o.recrawl
            for o in outcomes
            if o.recrawl is not None and o.products is None and o.status_code == 304
        }
        if not_modified:
            unchanged = history.unchanged_product_pages(conn, not_modified)
            history.apply_recrawl(conn, unchanged, now)
        parsed.write_parsed(conn, self.engine, crawl_id, outcomes, now)
        pages = [o for o in outcomes if o.page is not None]
        if not pages:
            return
        rows = []
        for o in pages:
            page = o.page
            assert page is not None
            row = {name: getattr(page, name) for name in _PAGE_COLUMNS}
            row["crawl_id"] = crawl_id
            row["url_hash"] = o.request.url_hash
            row["redirects"] = json.dumps(page.redirects) if page.redirects else None
            rows.append(row)
        # A host's page_count counts its pages, not its fetches: a re-crawl replaces its row.
        if self.is_embedded:
            new_hosts = self._upsert_pages(conn, rows)
        else:
            # One row per page (the last fetch's), as one statement.
            unique = list({row["url_hash"]: row for row in rows}.values())
            new_hosts = pgbatch.upsert_pages(conn, _PAGE_ROW_COLUMNS, unique)
        per_host = Counter(new_hosts)
        execute_many(
            conn,
            _COUNT_PAGES,
            # Host order: two workers counting pages of the same hosts must not deadlock.
            ({"h": host, "n": n} for host, n in sorted(per_host.items())),
            shared={"now": now},
        )

    def _upsert_pages(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Insert or replace the pages' rows (SQLite: the driver's executemany); returns the
        host of each page that had no row."""
        # One row per page (the last fetch's): a row inserted here is never updated here, which
        # its search index row, written after the upsert, relies on.
        rows = list({row["url_hash"]: row for row in rows}.values())
        # SQLite gives a new row the largest id + 1: the rows past the largest id before the
        # upsert are the pages that had no row.
        newest = conn.execute(_NEWEST_PAGE).scalar() or 0
        # The insert trigger, indexing row by row, made a search index segment of each row
        # (migration 0026): it stands aside, and the new rows are indexed in one statement.
        conn.execute(_DEFER_INDEX)
        execute_many(conn, _page_upsert(self.engine.dialect.name), rows)
        conn.execute(_RESUME_INDEX)
        conn.execute(_INDEX_NEWER, {"newest": newest})
        return list(conn.execute(_HOSTS_NEWER, {"newest": newest}).scalars())

    def _finish_urls(self, conn: Connection, outcomes: Sequence[Outcome], now: float) -> None:
        """The outcomes' URL rows take their new state (SQLite: the driver's executemany)."""
        execute_many(
            conn,
            _FINISH_URL,
            (
                {
                    "row_id": o.request.id,
                    "new_status": o.status.value,
                    "new_next": o.next_crawl_at,
                    "new_attempts": o.attempts,
                    "fetched_at": o.page.fetched_at if o.page else None,
                    "code": o.status_code,
                    "err_class": o.error_class,
                    "err": o.error,
                    "hash": o.content_hash,
                    "new_etag": o.etag,
                    "new_lm": o.last_modified,
                }
                for o in outcomes
            ),
            shared={"now": now},
        )

    def _write_errors(
        self, conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
    ) -> None:
        rows = [
            {
                "crawl_id": crawl_id,
                "category": error_category(o.error_class),
                "error_class": o.error_class,
                "message": (o.error or o.error_class)[:4000],
                "task": o.request.url,
                "stack_trace": o.stack_trace,
                "created_at": now,
            }
            for o in outcomes
            if o.error_class is not None and o.error_class != RobotsDenied.__name__
        ]
        if rows:
            conn.execute(error_logs.insert(), rows)

    def _write_products(
        self, conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
    ) -> None:
        """Upsert each page's products by position; an unchanged one (same content hash) is
        not rewritten, so its ``updated_at`` tells when it last changed. A change of price,
        currency or availability (or a first sighting) adds a ``product_history`` row, and a
        page with a re-crawl rule is made due by it (``store.products.history``)."""
        if not outcomes:
            return
        hashes = [o.request.url_hash for o in outcomes]
        known = {
            (row.url_hash, row.position): row
            for row in conn.execute(
                select(products.c.id, products.c.url_hash, products.c.position,
                       products.c.content_hash, *(products.c[n] for n in history.TRACKED))
                .where(products.c.crawl_id == crawl_id, products.c.url_hash.in_(hashes))
            )
        }  # fmt: skip
        image_urls: list[str] = []
        downloaded: dict[str, Any] = {}  # what the images rows rewritten below knew
        changes: list[dict[str, Any]] = []
        recrawls: dict[int, tuple[RecrawlRule, bool]] = {}
        for outcome in outcomes:
            url_hash = outcome.request.url_hash
            found = outcome.products or []
            changed = False
            for position, product in enumerate(found):
                digest = product.content_hash()
                existing = known.get((url_hash, position))
                if existing is not None and existing.content_hash == digest:
                    continue
                values = _product_row(product, digest, now)
                if existing is None:
                    product_id = conn.execute(
                        products.insert()
                        .values(crawl_id=crawl_id, url_hash=url_hash, position=position,
                                page_url=outcome.request.url,
                                domain=domain_of(outcome.request.host),
                                created_at=now, **values)
                        .returning(products.c.id)
                    ).scalar_one()  # fmt: skip
                    changes.append(history.history_row(product_id, values, now))
                    changed = True
                else:
                    product_id = existing.id
                    conn.execute(
                        update(products).where(products.c.id == product_id).values(**values)
                    )
                    downloaded.update(delete_product_images(conn, product_id))
                    if history.is_change(existing._mapping, values):
                        changes.append(history.history_row(product_id, values, now))
                        changed = True
                if product.image_details:
                    image_urls.extend(image.url for image in product.image_details)
                    conn.execute(
                        images.insert(),
                        [
                            {"product_id": product_id, "position": i, "url": image.url,
                             "alt": image.alt, "width": image.width, "height": image.height}
                            for i, image in enumerate(product.image_details)
                        ],
                    )  # fmt: skip
            gone = [
                row.id for (h, pos), row in known.items() if h == url_hash and pos >= len(found)
            ]
            if gone:
                conn.execute(products.delete().where(products.c.id.in_(gone)))
                changed = True
            if outcome.recrawl is not None and found:
                recrawls[outcome.request.id] = (outcome.recrawl, changed)
        history.write_history(conn, changes)
        history.apply_recrawl(conn, recrawls, now)
        carry_downloads(conn, crawl_id, image_urls, downloaded)


def _product_row(product: Any, digest: str, now: float) -> dict[str, Any]:
    return {
        "product_url": product.url,
        "name": product.name,
        "description": product.description,
        "price": product.price,
        "currency": product.currency,
        "availability": product.availability,
        "rating": product.rating,
        "review_count": product.review_count,
        "brand": product.brand,
        "category": product.category,
        "sku": product.sku,
        "gtin": product.gtin,
        "source": product.source,
        "parser": getattr(product, "parser", None) or f"harvestman.products@{PRODUCTS_PARSER}",
        "errors": json.dumps(product.errors) if product.errors else None,
        "mpn": product.mpn,
        "condition": product.condition,
        "low_price": product.low_price,
        "high_price": product.high_price,
        "offer_count": product.offer_count,
        "best_rating": product.best_rating,
        "worst_rating": product.worst_rating,
        "rating_count": product.rating_count,
        "sources": json.dumps(product.sources) if product.sources else None,
        "confidence": product.confidence,
        "content_hash": digest,
        "updated_at": now,
    }


# The built-in product extractor's version: bump it when its output changes.
PRODUCTS_PARSER = "2"
