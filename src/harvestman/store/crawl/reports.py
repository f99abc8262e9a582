"""Reading a crawl back: counts and reports, per-host states, the paged lists and the exports'
constant-memory iterators; and the stats history's minute counters."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from sqlalchemy import Select, and_, bindparam, func, select

from harvestman.records import CrawlCounts
from harvestman.store import history, keyset, parsed
from harvestman.store.connection import StoreConnection
from harvestman.store.keyset import Key
from harvestman.store.lists import RowFilter, columns
from harvestman.store.schema import crawled_pages, crawls, domains, images, products, urls

# What a page's detail shows of its row: everything but its text (large: the search reads it)
# and its SimHash (a number for the near-duplicate check, meaningless to a reader).
_DETAIL_SKIPS = {"text", "main_text", "simhash", "url_hash"}
_DETAIL_URL_FIELDS = (
    "id", "status", "kind", "priority", "depth", "next_crawl_at", "attempts", "discovered_at",
    "last_fetched_at", "discovered_via", "parent_id", "etag", "last_modified",
)  # fmt: skip
# A page's own products are few (one per position on it); this bounds a listing page's.
_DETAIL_PRODUCTS = 100


class ReportRepository(StoreConnection):
    """Read-only views of a crawl (and ``add_stats``, the history's writer)."""

    async def add_stats(self, crawl_id: int, buckets: Mapping[float, Mapping[str, int]]) -> None:
        """Add per-minute counter deltas to the stats history (one additive upsert)."""

        def _add() -> None:
            with self._begin() as conn:
                history.add_counts(conn, crawl_id, "minute", buckets)

        await self._run(_add)

    async def counts(self, crawl_id: int) -> CrawlCounts:
        def _counts() -> CrawlCounts:
            with self.engine.connect() as conn:
                by_status = {
                    status: int(n)
                    for status, n in conn.execute(
                        select(urls.c.status, func.count())
                        .where(urls.c.crawl_id == crawl_id)
                        .group_by(urls.c.status)
                    )
                }
                pages = conn.execute(
                    select(func.count())
                    .select_from(crawled_pages)
                    .where(crawled_pages.c.crawl_id == crawl_id)
                ).scalar_one()
            return CrawlCounts(by_status=by_status, pages=int(pages))

        return await self._run(_counts)

    def report(self, crawl_id: int, top: int = 20) -> dict[str, Any]:
        """A summary of a crawl for ``harvestman stats`` (synchronous, read-only)."""

        def grouped(column: Any, table: Any, *where: Any) -> dict[str, int]:
            query = (
                select(column, func.count())
                .where(table.c.crawl_id == crawl_id, *where)
                .group_by(column)
                .order_by(func.count().desc())
                .limit(top)
            )
            with self.engine.connect() as conn:
                # A fetch that got no response has no status code.
                return {
                    "none" if key is None else str(key): int(n) for key, n in conn.execute(query)
                }

        with self.engine.connect() as conn:
            pages = conn.execute(
                select(func.count())
                .select_from(crawled_pages)
                .where(crawled_pages.c.crawl_id == crawl_id)
            ).scalar_one()
        return {
            "urls": grouped(urls.c.status, urls),
            "pages": int(pages),
            "status_codes": grouped(crawled_pages.c.status_code, crawled_pages),
            "errors": grouped(urls.c.error_class, urls, urls.c.error_class.is_not(None)),
            "hosts": grouped(crawled_pages.c.host, crawled_pages),
            "parsers": parsed.parser_stats_report(self.engine, crawl_id)[:top],
            "records": parsed.record_count(self.engine, crawl_id),
        }

    def host_states(self, crawl_id: int, top: int = 20) -> list[dict[str, Any]]:
        """Per-host frontier state for ``harvestman status``: the hosts with most pending rows."""
        query = (
            select(urls.c.host, urls.c.status, func.count())
            .where(urls.c.crawl_id == crawl_id)
            .group_by(urls.c.host, urls.c.status)
        )
        hosts: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for host, status, n in conn.execute(query):
                hosts.setdefault(host, {"host": host})[status] = int(n)
            ranked = sorted(
                hosts.values(), key=lambda h: (-h.get("pending", 0), -h.get("in_progress", 0))
            )[:top]
            gates = {
                row.host: row
                for row in conn.execute(
                    select(domains.c.host, domains.c.crawl_delay, domains.c.next_allowed_at).where(
                        domains.c.host.in_([h["host"] for h in ranked])
                    )
                )
            }
        for state in ranked:
            gate = gates.get(state["host"])
            state["crawl_delay"] = gate.crawl_delay if gate else None
            state["next_allowed_at"] = gate.next_allowed_at if gate else None
        return ranked

    def iter_products(self, crawl_id: int, batch: int = 1000) -> Iterator[dict[str, Any]]:
        """Every stored product of a crawl with its image URLs, in id order, constant memory."""
        last_id = 0
        query = (
            select(products)
            .where(products.c.crawl_id == crawl_id, products.c.id > bindparam("last"))
            .order_by(products.c.id)
            .limit(batch)
        )
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"last": last_id}).mappings().all()
                pictures: dict[int, list[str]] = {}
                if rows:
                    for product_id, url in conn.execute(
                        select(images.c.product_id, images.c.url)
                        .where(images.c.product_id.in_([r["id"] for r in rows]))
                        .order_by(images.c.product_id, images.c.position)
                    ):
                        pictures.setdefault(product_id, []).append(url)
            if not rows:
                return
            for row in rows:
                yield {**row, "images": pictures.get(row["id"], [])}
            last_id = rows[-1]["id"]

    def iter_records(self, crawl_id: int, parser: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record site parsers stored for a crawl, in id order, constant memory."""
        return parsed.iter_records(self.engine, crawl_id, parser=parser)

    def parser_stats(self, crawl_id: int | None, **filters: Any) -> list[dict[str, Any]]:
        """Success rates per (host, parser, version): ``store.parsed.parser_stats_report``."""
        return parsed.parser_stats_report(self.engine, crawl_id, **filters)

    def parser_health(self, now: float) -> list[dict[str, Any]]:
        """Parser success ratios and their baselines: ``store.parsed.parser_health``."""
        return parsed.parser_health(self.engine, now)

    def list_rows(
        self, where: RowFilter, *, after: Key | None = None, limit: int = 50, offset: int = 0
    ) -> tuple[list[dict[str, Any]], Key | None]:
        """One page of a browsable list (``store.lists``) and the key of the next (None at
        the end). Synchronous: the API runs it off the event loop."""
        query = select(*columns(where)).where(*where.page_conditions(self.engine.dialect.name))
        with self.engine.connect() as conn:
            rows, next_after = where.keyset.page(
                conn, query, after=after, limit=limit, offset=offset, prefix=where.index_prefix()
            )
        return [dict(row) for row in rows], next_after

    def find_row(self, where: RowFilter, key: Key) -> dict[str, Any] | None:
        """The row of a list (``store.lists``) whose key is ``key``, if the filter holds it."""
        query = select(*columns(where)).where(*where.conditions(), where.keyset.key == key)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else dict(row)

    def page_detail(self, page_id: int) -> dict[str, Any] | None:
        """One stored page for its detail view: its row (without its text), its crawl's name
        and raw archive location, its frontier row (how it was found, its parent's URL and
        stored page, how many URLs it revealed first: ``children``), the page it nearly
        duplicates and the products found on it (the first 100, by position). None: no such
        page."""
        page_columns = [c for c in crawled_pages.c if c.name not in _DETAIL_SKIPS]
        with self.engine.connect() as conn:
            found = conn.execute(
                select(*page_columns, crawled_pages.c.url_hash, crawls.c.name,
                       crawls.c.archive_location)
                .join(crawls, crawls.c.id == crawled_pages.c.crawl_id)
                .where(crawled_pages.c.id == page_id)
            ).mappings().first()  # fmt: skip
            if found is None:
                return None
            page = dict(found)
            crawl_id, digest = page["crawl_id"], page.pop("url_hash")
            page["crawl"] = page.pop("name")
            row = (
                conn.execute(
                    select(*(urls.c[name] for name in _DETAIL_URL_FIELDS)).where(
                        urls.c.crawl_id == crawl_id, urls.c.url_hash == digest
                    )
                )
                .mappings()
                .first()
            )
            frontier = None if row is None else dict(row)
            if frontier is not None:
                frontier["parent_url"] = frontier["parent_page_id"] = None
                if frontier["parent_id"] is not None:
                    parent = conn.execute(
                        select(urls.c.url, crawled_pages.c.id)
                        .select_from(urls)
                        .outerjoin(
                            crawled_pages,
                            and_(
                                crawled_pages.c.crawl_id == urls.c.crawl_id,
                                crawled_pages.c.url_hash == urls.c.url_hash,
                            ),
                        )
                        .where(urls.c.id == frontier["parent_id"])
                    ).first()
                    if parent is not None:
                        frontier["parent_url"], frontier["parent_page_id"] = parent
                frontier["children"] = conn.execute(
                    select(func.count()).where(
                        urls.c.crawl_id == crawl_id, urls.c.parent_id == frontier["id"]
                    )
                ).scalar_one()
            page["frontier"] = frontier
            page["near_duplicate"] = None
            if page["near_duplicate_of"] is not None:
                twin = conn.execute(
                    select(crawled_pages.c.id, crawled_pages.c.url).where(
                        crawled_pages.c.crawl_id == crawl_id,
                        crawled_pages.c.url_hash == page["near_duplicate_of"],
                    )
                ).first()
                page["near_duplicate"] = None if twin is None else {"id": twin.id, "url": twin.url}
            p = products.c
            page["products"] = [
                dict(product)
                for product in conn.execute(
                    select(p.id, p.position, p.name, p.price, p.currency, p.availability)
                    .where(p.crawl_id == crawl_id, p.url_hash == digest)
                    .order_by(p.position)
                    .limit(_DETAIL_PRODUCTS)
                ).mappings()
            ]
        return page

    def url_of_ids(self, crawl_id: int | None, ids: Collection[int]) -> dict[int, str]:
        """The URLs of a crawl's (any crawl's: None) frontier rows by id (the parents of
        discovered links)."""
        if not ids:
            return {}
        query = select(urls.c.id, urls.c.url).where(urls.c.id.in_(sorted(set(ids))))
        if crawl_id is not None:
            query = query.where(urls.c.crawl_id == crawl_id)
        with self.engine.connect() as conn:
            return {row.id: row.url for row in conn.execute(query)}

    def count_rows(self, where: RowFilter) -> int:
        """How many rows the list holds (exact: a scan of its index range)."""
        with self.engine.connect() as conn:
            return keyset.count(conn, where.table, where.conditions())

    def iter_pages(
        self, crawl_id: int, batch: int = 1000, *, kinds: Collection[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every stored page of a crawl with its URL row's depth and kind, in id order, in
        constant memory; only those whose URL is of ``kinds`` (page, sitemap, feed) if given.

        Synchronous on purpose: exports stream straight to a file from their own thread.
        """
        kind = func.coalesce(urls.c.kind, "page")  # a page whose URL row is gone: a page
        query = (
            select(crawled_pages, urls.c.depth, kind.label("kind"))
            .join(
                urls,
                and_(
                    urls.c.crawl_id == crawled_pages.c.crawl_id,
                    urls.c.url_hash == crawled_pages.c.url_hash,
                ),
                isouter=True,
            )
            .where(crawled_pages.c.crawl_id == crawl_id, crawled_pages.c.id > bindparam("last"))
            .order_by(crawled_pages.c.id)
            .limit(batch)
        )
        if kinds is not None:
            query = query.where(kind.in_(sorted(kinds)))
        yield from self._by_id(query)

    def iter_urls(self, crawl_id: int, status: str | None = None) -> Iterator[dict[str, Any]]:
        """Every frontier row of a crawl (optionally one status), in id order."""
        query = select(urls).where(urls.c.crawl_id == crawl_id, urls.c.id > bindparam("last"))
        if status:
            query = query.where(urls.c.status == status)
        query = query.order_by(urls.c.id).limit(1000)
        yield from self._by_id(query)

    def _by_id(self, query: Select[Any]) -> Iterator[dict[str, Any]]:
        """The rows of ``query`` (ordered by id, limited, ``id > :last``) batch by batch, each
        batch on a connection of its own: the caller may stop, and holds no transaction."""
        last_id = 0
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"last": last_id}).mappings().all()
            if not rows:
                return
            for row in rows:
                yield dict(row)
            last_id = rows[-1]["id"]
