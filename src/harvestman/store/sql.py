"""The SQL store: one implementation of the ``Store`` contract for SQLite and PostgreSQL.

Calls are async; each runs synchronously on the store's own thread(s), so the event loop never
blocks on the database and SQLite sees a single writer. Hot-path writes arrive in batches
(``record``): one transaction per batch, ``executemany`` per statement.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    bindparam,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import StoreError, error_category
from harvestman.records import (
    CrawlCounts,
    CrawlRequest,
    DomainRecord,
    NewUrl,
    Outcome,
    UrlStatus,
)
from harvestman.store import dialect, history, keyset, migrate, parsed
from harvestman.store.keyset import Key
from harvestman.store.lists import RowFilter, columns
from harvestman.store.schema import (
    cookies,
    crawled_pages,
    crawls,
    domains,
    error_logs,
    images,
    products,
    proxies,
    urls,
    workers,
)

T = TypeVar("T")

_LEASE_SQL = (
    "SELECT id, url, url_hash, host, depth, priority, attempts, etag, last_modified, kind"
    " FROM urls"
    " WHERE crawl_id = :crawl_id AND status = 'pending' AND host = :host"
    " AND next_crawl_at <= :now ORDER BY priority DESC, next_crawl_at, id LIMIT :limit"
)
_NEXT_DUE_SQL = (
    "SELECT min(next_crawl_at) FROM urls"
    " WHERE crawl_id = :crawl_id AND status = 'pending' AND host = :host"
)

# Hashes per re-crawl UPDATE: well under SQLite's limit of 32,766 bound parameters.
_RECRAWL_CHUNK = 5000

_PAGE_COLUMNS = (
    "url", "final_url", "host", "status_code", "content_type", "content_length", "charset",
    "content_hash", "title", "description", "canonical", "lang", "links_count",
    "crawl_duration_ms", "fetched_at", "error_class", "error", "validation_status",
    "rejection_reason", "simhash", "near_duplicate_of", "proxy", "archive_path", "text",
    "main_text",
)  # fmt: skip


class SqlStore:
    """The store on a SQLAlchemy engine. Use as ``async with SqlStore(url) as store``."""

    def __init__(self, database_url: str, *, threads: int = 4) -> None:
        self.database_url = database_url
        self.engine: Engine = dialect.make_engine(database_url)
        # SQLite: exactly one thread, the single writer. PostgreSQL: a few, so a heartbeat
        # never waits behind a long lease or flush (a late heartbeat reads as a dead worker).
        self._threads = 1 if dialect.is_sqlite(self.engine) else max(1, threads)
        self._executor: ThreadPoolExecutor | None = None
        self._lease_sql = text(_LEASE_SQL + dialect.lock_suffix(self.engine))
        self._next_due_sql = text(_NEXT_DUE_SQL)
        self._write_options = dialect.write_options(self.engine)

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A write transaction (IMMEDIATE on SQLite: the write lock is taken at BEGIN)."""
        with self.engine.connect() as conn:
            conn.execution_options(**self._write_options)
            with conn.begin():
                yield conn

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> SqlStore:
        self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="harvestman-store")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.engine.dispose()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise StoreError("the store is not open: use `async with SqlStore(...)`")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, *args)
        except SQLAlchemyError as exc:
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    async def upgrade(self) -> None:
        """Bring the schema to the code's head revision (Alembic)."""
        await self._run(migrate.upgrade, self.engine)

    async def check_schema(self) -> None:
        """Raise SchemaOutdated when the database is behind the code."""
        await self._run(migrate.check_current, self.engine)

    async def check(self) -> None:
        """Prove the database answers on a NEW connection (a pooled SQLite connection keeps a
        deleted file open and would say all is well)."""

        def _check() -> None:
            if dialect.is_sqlite(self.engine):
                import sqlite3

                path = self.engine.url.database or ""
                conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=5)
                try:
                    conn.execute("SELECT 1 FROM crawls LIMIT 1").fetchall()
                finally:
                    conn.close()
                return
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        try:
            await self._run(_check)
        except Exception as exc:  # sqlite3 errors are not SQLAlchemy's
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    async def reconnect(self) -> None:
        """Drop every pooled connection; the next use opens new ones."""
        await self._run(self.engine.dispose)

    async def ping(self) -> None:
        def _ping() -> None:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        await self._run(_ping)

    # -- crawls -----------------------------------------------------------------------------

    async def ensure_crawl(self, name: str, seeds: Sequence[str] = ()) -> int:
        """The id of crawl namespace ``name``, created on first use; seeds accumulate."""

        def _ensure() -> int:
            with self._begin() as conn:
                row = conn.execute(
                    select(crawls.c.id, crawls.c.seeds).where(crawls.c.name == name)
                ).first()
                if row is None:
                    stmt = dialect.insert_ignore(self.engine, crawls, "name").values(
                        name=name, created_at=time.time(), seeds=json.dumps(list(seeds))
                    )
                    conn.execute(stmt)
                    row = conn.execute(
                        select(crawls.c.id, crawls.c.seeds).where(crawls.c.name == name)
                    ).one()
                known = json.loads(row.seeds)
                merged = known + [seed for seed in seeds if seed not in known]
                if merged != known:
                    conn.execute(
                        update(crawls).where(crawls.c.id == row.id).values(seeds=json.dumps(merged))
                    )
                return int(row.id)

        return await self._run(_ensure)

    async def crawl_seeds(self, crawl_id: int) -> list[str]:
        def _seeds() -> list[str]:
            with self.engine.connect() as conn:
                value = conn.execute(select(crawls.c.seeds).where(crawls.c.id == crawl_id)).scalar()
            return json.loads(value or "[]")

        return await self._run(_seeds)

    async def set_archive_location(self, crawl_id: int, location: str) -> None:
        """Record where the raw archive keeps the crawl's bodies (the latest start wins)."""

        def _set() -> None:
            with self._begin() as conn:
                conn.execute(
                    update(crawls).where(crawls.c.id == crawl_id).values(archive_location=location)
                )

        await self._run(_set)

    def archive_location(self, crawl_id: int) -> str | None:
        """Where the raw archive keeps the crawl's bodies; None when never recorded."""
        with self.engine.connect() as conn:
            return conn.execute(
                select(crawls.c.archive_location).where(crawls.c.id == crawl_id)
            ).scalar()

    async def find_crawl(self, name: str) -> int | None:
        def _find() -> int | None:
            with self.engine.connect() as conn:
                return conn.execute(select(crawls.c.id).where(crawls.c.name == name)).scalar()

        return await self._run(_find)

    # -- frontier -----------------------------------------------------------------------------

    def _insert_urls(
        self, conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float
    ) -> None:
        if not rows:
            return
        if not dialect.is_sqlite(self.engine):
            # Concurrent writers: in url_hash order, two workers' batches meet each other's new
            # rows in the same order and cannot wait on each other in a circle (they did:
            # deadlocks in a 2-worker crawl). SQLite has one writer: discovery order is kept.
            rows = sorted(rows, key=lambda row: row.url_hash)
        dated = [row for row in rows if row.lastmod is not None]
        plain = [row for row in rows if row.lastmod is None]
        if plain:
            self._insert_links(conn, crawl_id, plain, now)
        if not dated:
            return
        stmt = dialect.insert(self.engine, urls)
        # A known URL is left alone unless it is completed and due for a re-crawl again: its
        # visited TTL ran out, or a sitemap or feed says it changed since it was fetched.
        stmt = stmt.on_conflict_do_update(
            index_elements=["crawl_id", "url_hash"],
            set_={
                "status": UrlStatus.PENDING.value,
                "next_crawl_at": stmt.excluded.next_crawl_at,
                "attempts": 0,
                "lastmod": func.coalesce(stmt.excluded.lastmod, urls.c.lastmod),
                "updated_at": stmt.excluded.updated_at,
            },
            where=and_(
                urls.c.status == UrlStatus.COMPLETED.value,
                or_(
                    urls.c.next_crawl_at <= now,
                    stmt.excluded.lastmod > func.coalesce(urls.c.last_fetched_at, 0.0),
                ),
            ),
        )
        conn.execute(
            stmt,
            [_pending_row(crawl_id, row, now, row.lastmod) for row in dated],
        )

    def _insert_links(
        self, conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float
    ) -> None:
        """Insert URLs without a lastmod (links: the bulk of ingestion).

        ON CONFLICT DO NOTHING, not DO UPDATE: a DO UPDATE locks every known row it meets even
        when its WHERE is false, so two workers ingesting overlapping links deadlocked (measured
        by bench/pg_frontier.py: 6-8 deadlocks in 15 s with 2 workers) and wrote WAL for each
        lock. Known rows that are completed and due again go back to pending by their hash.
        """
        insert = dialect.insert(self.engine, urls).on_conflict_do_nothing(
            index_elements=["crawl_id", "url_hash"]
        )
        conn.execute(
            insert,
            [_pending_row(crawl_id, row, now, None) for row in rows],
        )
        hashes = [row.url_hash for row in rows]
        for start in range(0, len(hashes), _RECRAWL_CHUNK):
            conn.execute(
                update(urls)
                .where(
                    urls.c.crawl_id == crawl_id,
                    urls.c.url_hash.in_(hashes[start : start + _RECRAWL_CHUNK]),
                    urls.c.status == UrlStatus.COMPLETED.value,
                    urls.c.next_crawl_at <= now,
                )
                .values(
                    status=UrlStatus.PENDING.value, next_crawl_at=now, attempts=0, updated_at=now
                )
            )

    async def add_urls(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        """Add URLs to the frontier; known ones stay as they are unless due for re-crawl."""

        def _add() -> None:
            with self._begin() as conn:
                self._insert_urls(conn, crawl_id, rows, now)

        await self._run(_add)

    async def pending_hosts(self, crawl_id: int) -> dict[str, float]:
        """Every host with pending rows, with the earliest time one of them is due."""

        def _hosts() -> dict[str, float]:
            with self.engine.connect() as conn:
                result = conn.execute(
                    select(urls.c.host, func.min(urls.c.next_crawl_at))
                    .where(urls.c.crawl_id == crawl_id, urls.c.status == UrlStatus.PENDING.value)
                    .group_by(urls.c.host)
                )
                return {host: float(due) for host, due in result}

        return await self._run(_hosts)

    async def lease(
        self,
        crawl_id: int,
        wanted: dict[str, int],
        now: float,
        lease_until: float,
        worker_id: str,
    ) -> tuple[list[CrawlRequest], dict[str, float | None]]:
        """Lease up to ``wanted[host]`` due rows per host, in priority order.

        Returns the leased requests and, for each host that ran dry, when its next pending row
        is due (``None``: the host has no pending rows left).
        """

        def _lease() -> tuple[list[CrawlRequest], dict[str, float | None]]:
            leased: list[CrawlRequest] = []
            short: list[str] = []
            with self._begin() as conn:
                for host, limit in wanted.items():
                    rows = conn.execute(
                        self._lease_sql,
                        {"crawl_id": crawl_id, "host": host, "now": now, "limit": limit},
                    ).all()
                    leased.extend(CrawlRequest(*row) for row in rows)
                    if len(rows) < limit:
                        short.append(host)
                if leased:
                    conn.execute(
                        update(urls)
                        .where(urls.c.id == bindparam("row_id"))
                        .values(
                            status=UrlStatus.IN_PROGRESS.value,
                            lease_until=lease_until,
                            leased_by=worker_id,
                            updated_at=now,
                        ),
                        [{"row_id": request.id} for request in leased],
                    )
                # The leased rows are in progress now: what is still pending is due later.
                dry: dict[str, float | None] = {}
                for host in short:
                    due = conn.execute(
                        self._next_due_sql, {"crawl_id": crawl_id, "host": host}
                    ).scalar()
                    dry[host] = None if due is None else float(due)
            return leased, dry

        return await self._run(_lease)

    async def record(
        self, crawl_id: int, outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl], now: float
    ) -> None:
        """Write a batch in one transaction: discovered URLs, URL states and pages."""

        def _record() -> None:
            with self._begin() as conn:
                self._insert_urls(conn, crawl_id, new_urls, now)
                if outcomes:
                    self._write_outcomes(conn, crawl_id, outcomes, now)

        await self._run(_record)

    def _write_outcomes(
        self, conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
    ) -> None:
        # In id order, the order every statement that waits on urls rows locks them in (see
        # _locked_ids): a batch write and a lease extension once deadlocked on each other.
        outcomes = sorted(outcomes, key=lambda o: o.request.id)
        conn.execute(
            update(urls)
            .where(urls.c.id == bindparam("row_id"))
            .values(
                status=bindparam("new_status"),
                next_crawl_at=bindparam("new_next"),
                attempts=bindparam("new_attempts"),
                lease_until=None,
                leased_by=None,
                updated_at=now,
                last_fetched_at=bindparam("fetched_at"),
                status_code=bindparam("code"),
                error_class=bindparam("err_class"),
                error=bindparam("err"),
                # A 304 carries no body: keep what the last full fetch stored.
                content_hash=func.coalesce(bindparam("hash"), urls.c.content_hash),
                etag=func.coalesce(bindparam("new_etag"), urls.c.etag),
                last_modified=func.coalesce(bindparam("new_lm"), urls.c.last_modified),
            ),
            [
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
            ],
        )
        self._write_errors(conn, crawl_id, outcomes, now)
        self._write_products(conn, crawl_id, [o for o in outcomes if o.products is not None], now)
        parsed.write_parsed(conn, self.engine, crawl_id, outcomes, now)
        pages = [o for o in outcomes if o.page is not None]
        if not pages:
            return
        stmt = dialect.insert(self.engine, crawled_pages)
        stmt = stmt.on_conflict_do_update(
            index_elements=["crawl_id", "url_hash"],
            set_={name: stmt.excluded[name] for name in (*_PAGE_COLUMNS, "redirects")},
        )
        rows = []
        per_host: dict[str, int] = {}
        for o in pages:
            page = o.page
            assert page is not None
            row = {name: getattr(page, name) for name in _PAGE_COLUMNS}
            row["crawl_id"] = crawl_id
            row["url_hash"] = o.request.url_hash
            row["redirects"] = json.dumps(page.redirects) if page.redirects else None
            rows.append(row)
            per_host[page.host] = per_host.get(page.host, 0) + 1
        conn.execute(stmt, rows)
        conn.execute(
            update(domains)
            .where(domains.c.host == bindparam("h"))
            .values(page_count=domains.c.page_count + bindparam("n"), updated_at=now),
            # Host order: two workers counting pages of the same hosts must not deadlock.
            [{"h": host, "n": n} for host, n in sorted(per_host.items())],
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
            if o.error_class is not None and o.error_class != "RobotsDenied"
        ]
        if rows:
            conn.execute(error_logs.insert(), rows)

    def _write_products(
        self, conn: Connection, crawl_id: int, outcomes: Sequence[Outcome], now: float
    ) -> None:
        """Upsert each page's products by position; an unchanged one (same content hash) is
        not rewritten, so its ``updated_at`` tells when it last changed."""
        if not outcomes:
            return
        hashes = [o.request.url_hash for o in outcomes]
        known = {
            (row.url_hash, row.position): (row.id, row.content_hash)
            for row in conn.execute(
                select(products.c.id, products.c.url_hash, products.c.position,
                       products.c.content_hash)
                .where(products.c.crawl_id == crawl_id, products.c.url_hash.in_(hashes))
            )
        }  # fmt: skip
        for outcome in outcomes:
            url_hash = outcome.request.url_hash
            found = outcome.products or []
            for position, product in enumerate(found):
                digest = product.content_hash()
                existing = known.get((url_hash, position))
                if existing is not None and existing[1] == digest:
                    continue
                values = _product_row(product, digest, now)
                if existing is None:
                    product_id = conn.execute(
                        products.insert()
                        .values(crawl_id=crawl_id, url_hash=url_hash, position=position,
                                page_url=outcome.request.url, created_at=now, **values)
                        .returning(products.c.id)
                    ).scalar_one()  # fmt: skip
                else:
                    product_id = existing[0]
                    conn.execute(
                        update(products).where(products.c.id == product_id).values(**values)
                    )
                    conn.execute(images.delete().where(images.c.product_id == product_id))
                if product.image_details:
                    conn.execute(
                        images.insert(),
                        [
                            {"product_id": product_id, "position": i, "url": image.url,
                             "alt": image.alt, "width": image.width, "height": image.height}
                            for i, image in enumerate(product.image_details)
                        ],
                    )  # fmt: skip
            gone = [
                pid for (h, pos), (pid, _) in known.items() if h == url_hash and pos >= len(found)
            ]
            if gone:
                conn.execute(products.delete().where(products.c.id.in_(gone)))

    async def release(self, worker_id: str, now: float) -> int:
        """Return every row leased by ``worker_id`` to pending (a clean shutdown)."""
        return await self._return_leases(urls.c.leased_by == worker_id, now)

    async def recover(self, now: float, dead_workers: Iterable[str] = ()) -> int:
        """Return expired leases, and every lease of ``dead_workers``, to pending."""
        dead = list(dead_workers)
        condition = urls.c.lease_until < now
        if dead:
            condition = condition | urls.c.leased_by.in_(dead)
        return await self._return_leases(condition, now)

    async def _return_leases(self, condition: Any, now: float) -> int:
        def _return() -> int:
            with self._begin() as conn:
                result = conn.execute(
                    update(urls)
                    .where(_locked_ids(urls.c.status == UrlStatus.IN_PROGRESS.value, condition))
                    .values(
                        status=UrlStatus.PENDING.value,
                        lease_until=None,
                        leased_by=None,
                        updated_at=now,
                    )
                )
                return result.rowcount or 0

        return await self._run(_return)

    # -- workers ------------------------------------------------------------------------------

    async def register_worker(self, worker_id: str, hostname: str, pid: int, now: float) -> None:
        def _register() -> None:
            with self._begin() as conn:
                conn.execute(
                    dialect.insert_ignore(self.engine, workers, "id").values(
                        id=worker_id, hostname=hostname, pid=pid, started_at=now, heartbeat_at=now
                    )
                )

        await self._run(_register)

    async def heartbeat(
        self, worker_id: str, now: float, lease_until: float, info: dict[str, Any] | None = None
    ) -> bool:
        """Mark the worker alive, note its status and extend the leases it holds.

        Returns False when the worker was no longer registered (others took it for dead).
        """

        def _beat() -> bool:
            with self._begin() as conn:
                known = conn.execute(
                    update(workers)
                    .where(workers.c.id == worker_id)
                    .values(heartbeat_at=now, info=json.dumps(info) if info else None)
                ).rowcount
                conn.execute(
                    update(urls)
                    .where(
                        _locked_ids(
                            urls.c.status == UrlStatus.IN_PROGRESS.value,
                            urls.c.leased_by == worker_id,
                        )
                    )
                    .values(lease_until=lease_until)
                )
                return bool(known)

        return await self._run(_beat)

    async def workers(self) -> list[tuple[str, str, int, float]]:
        """Registered workers: (id, hostname, pid, heartbeat_at)."""
        return [
            (w["id"], w["hostname"], w["pid"], w["heartbeat_at"]) for w in await self.worker_rows()
        ]

    async def worker_rows(self) -> list[dict[str, Any]]:
        """Registered workers with their last reported status (``info``, a dict or None)."""

        def _rows() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(workers).order_by(workers.c.started_at)).mappings()
                return [
                    {**row, "info": json.loads(row["info"]) if row["info"] else None}
                    for row in rows
                ]

        return await self._run(_rows)

    async def unregister_workers(self, worker_ids: Iterable[str]) -> None:
        ids = list(worker_ids)

        def _unregister() -> None:
            with self._begin() as conn:
                conn.execute(workers.delete().where(workers.c.id.in_(ids)))

        if ids:
            await self._run(_unregister)

    # -- domains ------------------------------------------------------------------------------

    async def get_domain(self, host: str) -> DomainRecord | None:
        def _get() -> DomainRecord | None:
            with self.engine.connect() as conn:
                row = conn.execute(select(domains).where(domains.c.host == host)).first()
            if row is None:
                return None
            return DomainRecord(
                host=row.host,
                robots_txt=row.robots_txt,
                robots_status=row.robots_status,
                robots_fetched_at=row.robots_fetched_at,
                crawl_delay=row.crawl_delay,
                allowed=bool(row.allowed),
                page_count=int(row.page_count),
            )

        return await self._run(_get)

    async def save_robots(self, record: DomainRecord, now: float) -> None:
        """Store a host's robots.txt (creating the domain row on first sight)."""

        def _save() -> None:
            values = {
                "robots_txt": record.robots_txt,
                "robots_status": record.robots_status,
                "robots_fetched_at": record.robots_fetched_at,
                "crawl_delay": record.crawl_delay,
                "allowed": record.allowed,
                "updated_at": now,
            }
            stmt = dialect.insert(self.engine, domains).values(
                host=record.host, page_count=0, **values
            )
            stmt = stmt.on_conflict_do_update(index_elements=["host"], set_=values)
            with self._begin() as conn:
                conn.execute(stmt)

        await self._run(_save)

    # -- politeness fallback (when Redis is away) --------------------------------------------

    async def acquire_host(self, host: str, now: float, hold: float) -> float:
        """Take ``host`` for one request of at most ``hold`` seconds: 0.0 when taken, else the
        seconds to wait. One request at a time per host, across every process on this store."""

        def _acquire() -> float:
            with self._begin() as conn:
                conn.execute(
                    dialect.insert_ignore(self.engine, domains, "host").values(
                        host=host, allowed=True, page_count=0, updated_at=now
                    )
                )
                taken = conn.execute(
                    update(domains)
                    .where(
                        domains.c.host == host,
                        func.coalesce(domains.c.busy_until, 0.0) <= now,
                        func.coalesce(domains.c.next_allowed_at, 0.0) <= now,
                    )
                    .values(busy_until=now + hold)
                ).rowcount
                if taken:
                    return 0.0
                busy, allowed = conn.execute(
                    select(domains.c.busy_until, domains.c.next_allowed_at).where(
                        domains.c.host == host
                    )
                ).one()
            if allowed is not None and allowed > now:
                return float(allowed) - now
            return min(0.25, max(0.01, float(busy or now) - now))

        return await self._run(_acquire)

    async def release_host(self, host: str, now: float, delay: float) -> None:
        def _release() -> None:
            with self._begin() as conn:
                conn.execute(
                    update(domains)
                    .where(domains.c.host == host)
                    .values(busy_until=None, next_allowed_at=now + delay)
                )

        await self._run(_release)

    # -- discovery state per host -----------------------------------------------------------

    async def discovery_state(self, host: str) -> tuple[dict[str, Any] | None, float | None]:
        """A host's learnt pagination rules and when archive discovery last ran there."""

        def _get() -> tuple[dict[str, Any] | None, float | None]:
            with self.engine.connect() as conn:
                row = conn.execute(
                    select(domains.c.pagination_rules, domains.c.archives_run_at).where(
                        domains.c.host == host
                    )
                ).first()
            if row is None:
                return None, None
            return (json.loads(row[0]) if row[0] else None), row[1]

        return await self._run(_get)

    async def save_discovery_state(
        self,
        now: float,
        rules: dict[str, dict[str, Any]] | None = None,
        archives_run: Sequence[str] = (),
    ) -> None:
        """Store pagination rules per host and mark archive discovery done for hosts."""

        def _save() -> None:
            with self._begin() as conn:
                for host in {*(rules or {}), *archives_run}:
                    conn.execute(
                        dialect.insert_ignore(self.engine, domains, "host").values(
                            host=host, allowed=True, page_count=0, updated_at=now
                        )
                    )
                for host, host_rules in (rules or {}).items():
                    conn.execute(
                        update(domains)
                        .where(domains.c.host == host)
                        .values(pagination_rules=json.dumps(host_rules), updated_at=now)
                    )
                for host in archives_run:
                    conn.execute(
                        update(domains).where(domains.c.host == host).values(archives_run_at=now)
                    )

        await self._run(_save)

    async def sample_urls(self, crawl_id: int, host: str, limit: int = 1000) -> list[str]:
        """Up to ``limit`` known URLs of a host, newest first (archive discovery learns dates)."""

        def _sample() -> list[str]:
            with self.engine.connect() as conn:
                return list(
                    conn.execute(
                        select(urls.c.url)
                        .where(urls.c.crawl_id == crawl_id, urls.c.host == host)
                        .order_by(urls.c.id.desc())
                        .limit(limit)
                    ).scalars()
                )

        return await self._run(_sample)

    # -- sessions: cookies and proxy health -------------------------------------------------

    async def load_cookies(self, crawl_id: int) -> list[dict[str, Any]]:
        def _load() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(cookies.c.data).where(cookies.c.crawl_id == crawl_id))
                return [json.loads(data) for (data,) in rows]

        return await self._run(_load)

    async def save_cookies(self, crawl_id: int, rows: Sequence[dict[str, Any]]) -> None:
        """Replace a crawl's cookies with ``rows`` (cookies.dump_cookies) in one transaction."""

        def _save() -> None:
            with self._begin() as conn:
                conn.execute(cookies.delete().where(cookies.c.crawl_id == crawl_id))
                if rows:
                    conn.execute(
                        cookies.insert(),
                        [
                            {
                                "crawl_id": crawl_id,
                                "domain": row["domain"],
                                "path": row["path"],
                                "name": row["name"],
                                "data": json.dumps(row),
                            }
                            for row in rows
                        ],
                    )

        await self._run(_save)

    async def load_proxies(self) -> list[dict[str, Any]]:
        def _load() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                return [dict(row) for row in conn.execute(select(proxies)).mappings()]

        return await self._run(_load)

    async def save_proxies(self, health: Sequence[dict[str, Any]], now: float) -> None:
        """Upsert each proxy's health (fields of proxies.ProxyHealth)."""

        def _save() -> None:
            if not health:
                return
            stmt = dialect.insert(self.engine, proxies)
            columns = [c.name for c in proxies.columns if c.name not in ("id", "url")]
            stmt = stmt.on_conflict_do_update(
                index_elements=["url"], set_={name: stmt.excluded[name] for name in columns}
            )
            with self._begin() as conn:
                conn.execute(stmt, [{**row, "updated_at": now} for row in health])

        await self._run(_save)

    # -- reading ------------------------------------------------------------------------------

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

    def crawl_ids(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return {
                name: int(cid) for cid, name in conn.execute(select(crawls.c.id, crawls.c.name))
            }

    def url_hashes(self, crawl_id: int) -> list[str]:
        """Every URL hash of a crawl (for rebuilding a shared seen set)."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(select(urls.c.url_hash).where(urls.c.crawl_id == crawl_id)).scalars()
            )

    def robots_records(self) -> list[DomainRecord]:
        """Every host whose robots.txt is stored."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(domains).where(domains.c.robots_fetched_at.is_not(None))
            ).mappings()
            return [
                DomainRecord(
                    host=r["host"],
                    robots_txt=r["robots_txt"],
                    robots_status=r["robots_status"],
                    robots_fetched_at=r["robots_fetched_at"],
                    crawl_delay=r["crawl_delay"],
                    allowed=bool(r["allowed"]),
                    page_count=int(r["page_count"]),
                )
                for r in rows
            ]

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

    def parser_stats(self, crawl_id: int, **filters: Any) -> list[dict[str, Any]]:
        """Success rates per (host, parser, version): ``store.parsed.parser_stats_report``."""
        return parsed.parser_stats_report(self.engine, crawl_id, **filters)

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

    def count_rows(self, where: RowFilter) -> int:
        """How many rows the list holds (exact: a scan of its index range)."""
        with self.engine.connect() as conn:
            return keyset.count(conn, where.table, where.conditions())

    def iter_pages(self, crawl_id: int, batch: int = 1000) -> Iterator[dict[str, Any]]:
        """Every stored page of a crawl with its URL row's depth, in id order, in constant memory.

        Synchronous on purpose: exports stream straight to a file from their own thread.
        """
        last_id = 0
        query = (
            select(crawled_pages, urls.c.depth)
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
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"last": last_id}).mappings().all()
            if not rows:
                return
            for row in rows:
                yield dict(row)
            last_id = rows[-1]["id"]

    def iter_urls(self, crawl_id: int, status: str | None = None) -> Iterator[dict[str, Any]]:
        """Every frontier row of a crawl (optionally one status), in id order."""
        last_id = 0
        query = select(urls).where(urls.c.crawl_id == crawl_id, urls.c.id > bindparam("last"))
        if status:
            query = query.where(urls.c.status == status)
        query = query.order_by(urls.c.id).limit(1000)
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(query, {"last": last_id}).mappings().all()
            if not rows:
                return
            for row in rows:
                yield dict(row)
            last_id = rows[-1]["id"]


def _locked_ids(*where: ColumnElement[bool]) -> ColumnElement[bool]:
    """``urls.id IN (the ids matching where, locked in id order)``, for an UPDATE of many rows.

    A plain ``UPDATE urls ... WHERE leased_by = ...`` locks rows in whatever order its plan
    scans them, and a batch write locks them in batch order: two such statements sharing rows
    deadlocked on PostgreSQL. Every multi-row urls UPDATE that may wait locks in id order
    (SQLite, a single writer, ignores FOR UPDATE).
    """
    ids = select(urls.c.id).where(*where).order_by(urls.c.id).with_for_update()
    return urls.c.id.in_(ids.scalar_subquery())


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
        "content_hash": digest,
        "updated_at": now,
    }


# The built-in product extractor's version: bump it when its output changes.
PRODUCTS_PARSER = "1"


def _pending_row(crawl_id: int, row: NewUrl, now: float, lastmod: float | None) -> dict[str, Any]:
    """A discovered URL as a new frontier row."""
    return {
        "crawl_id": crawl_id,
        "url_hash": row.url_hash,
        "url": row.url,
        "host": row.host,
        "status": UrlStatus.PENDING.value,
        "priority": row.priority,
        "depth": row.depth,
        "next_crawl_at": now,
        "attempts": 0,
        "discovered_at": now,
        "updated_at": now,
        "kind": row.kind,
        "lastmod": lastmod,
    }
