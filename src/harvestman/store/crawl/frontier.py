"""The frontier: adding URLs, leasing due rows per host, and returning leases.

Writes follow ``store.transaction``'s locking rules: new rows go in url-hash order on
PostgreSQL, leases come back through ``locked_ids``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any, TypeVar

from sqlalchemy import (
    Connection,
    TextClause,
    and_,
    bindparam,
    func,
    or_,
    select,
    text,
    update,
)

from harvestman.errors import error_category
from harvestman.records import CrawlRequest, NewUrl, UrlStatus
from harvestman.store import dialect, pgbatch
from harvestman.store.bulk import execute_many
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import error_logs, urls
from harvestman.store.transaction import locked_ids

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

# SQLite: a lease marks the rows its SELECT found (store.bulk compiles this once).
_MARK_LEASED = (
    update(urls)
    .where(urls.c.id == bindparam("row_id"))
    .values(
        status=UrlStatus.IN_PROGRESS.value,
        lease_until=bindparam("until"),
        leased_by=bindparam("worker"),
        updated_at=bindparam("now"),
    )
)

T = TypeVar("T")

# The finished rows that come due again once their re-crawl time has passed: pages fetched,
# and dead letters (failed after their retries: the site was down, a 404), so a later run
# asks again for what failed in an earlier one. Blocked rows wait for robots.txt's start
# pages or a re-queue.
RENEWABLE: tuple[str, ...] = (UrlStatus.COMPLETED.value, UrlStatus.FAILED.value)

# Values per IN list of a lookup or UPDATE, at most.
_IN_CHUNK = 512


def insert_urls(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
    """Add URLs to the frontier in the caller's transaction; known ones stay as they are
    unless due for re-crawl."""
    if not rows:
        return
    if not dialect.is_sqlite(conn.engine):
        # Concurrent writers: in url_hash order, two workers' batches meet each other's new
        # rows in the same order and cannot wait on each other in a circle (they did:
        # deadlocks in a 2-worker crawl). SQLite has one writer: discovery order is kept.
        rows = sorted(rows, key=lambda row: row.url_hash)
    dated = [row for row in rows if row.lastmod is not None]
    plain = [row for row in rows if row.lastmod is None]
    if plain:
        insert_links(conn, crawl_id, plain, now)
    if not dated:
        return
    stmt = dialect.insert(conn.engine, urls)
    # A known URL is left alone unless it is finished and due for a re-crawl again: its
    # visited TTL ran out, or (a fetched page) a sitemap or feed says it changed since.
    stmt = stmt.on_conflict_do_update(
        index_elements=["crawl_id", "url_hash"],
        set_={
            "status": UrlStatus.PENDING.value,
            "next_crawl_at": stmt.excluded.next_crawl_at,
            "attempts": 0,
            "lastmod": func.coalesce(stmt.excluded.lastmod, urls.c.lastmod),
            "updated_at": stmt.excluded.updated_at,
        },
        where=or_(
            # One comparison each, not IN: an IN list cannot be bound per row of executemany.
            and_(or_(*(urls.c.status == s for s in RENEWABLE)), urls.c.next_crawl_at <= now),
            and_(
                urls.c.status == UrlStatus.COMPLETED.value,
                stmt.excluded.lastmod > func.coalesce(urls.c.last_fetched_at, 0.0),
            ),
        ),
    )
    conn.execute(
        stmt,
        [pending_row(crawl_id, row, now, row.lastmod) for row in dated],
    )


def insert_links(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
    """Insert URLs without a lastmod (links: the bulk of ingestion).

    ON CONFLICT DO NOTHING, not DO UPDATE: a DO UPDATE locks every known row it meets even
    when its WHERE is false, so two workers ingesting overlapping links deadlocked (measured
    by bench/pg_frontier.py: 6-8 deadlocks in 15 s with 2 workers) and wrote WAL for each
    lock. When the insert added fewer rows than it was given, some were known: those that are
    finished (``RENEWABLE``) and due again go back to pending (``make_known_due``). A batch of
    new URLs only (most of them, with a seen cache that holds the crawl) is not looked up again.
    """
    if dialect.is_sqlite(conn.engine):
        added = _insert_ignore(conn, crawl_id, rows, now)
    else:
        added = pgbatch.insert_links(conn, crawl_id, rows, now)
    if added != len(rows):  # some were known (or the driver cannot tell: -1)
        make_known_due(conn, crawl_id, [row.url_hash for row in rows], now)


def _insert_ignore(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> int:
    """INSERT ... ON CONFLICT DO NOTHING of rows without a lastmod, through the driver's
    executemany (``store.bulk``; a seeds chunk's dicts are dropped one by one, ~6 MB less at the
    peak). Returns the rows added, as the driver counts them.
    """
    statement = dialect.insert_ignore(conn.engine, urls, "crawl_id", "url_hash")
    return execute_many(conn, statement, (pending_row(crawl_id, row, now, None) for row in rows))


def make_known_due(conn: Connection, crawl_id: int, hashes: Sequence[str], now: float) -> None:
    """The rows of ``hashes`` that are finished (``RENEWABLE``) and due again go back to
    pending now: looked up by the unique index, changed by id."""
    _make_due(conn, _due_ids(_known_rows(conn, crawl_id, hashes), now), now)


def _known_rows(
    conn: Connection, crawl_id: int, hashes: Sequence[str]
) -> dict[str, tuple[int, str, float]]:
    """The rows of ``hashes`` in the crawl's frontier: hash -> (id, status, next_crawl_at).

    Only crawl_id and url_hash in the WHERE: with ``status`` there too, SQLite (no
    statistics) chose ``ix_urls_status`` and read every completed row of the crawl for each
    chunk, 21 % of a 200,000-page crawl's CPU.
    """
    found: dict[str, tuple[int, str, float]] = {}
    for chunk in in_chunks(hashes):
        result = conn.execute(
            select(urls.c.url_hash, urls.c.id, urls.c.status, urls.c.next_crawl_at).where(
                urls.c.crawl_id == crawl_id, urls.c.url_hash.in_(chunk)
            )
        )
        for url_hash, row_id, status, due in result:
            found[url_hash] = (row_id, status, due)
    return found


def _due_ids(known: dict[str, tuple[int, str, float]], now: float) -> list[int]:
    return sorted(
        row_id for row_id, status, due in known.values() if status in RENEWABLE and due <= now
    )


def _make_due(conn: Connection, ids: Sequence[int], now: float) -> None:
    """Rows ``ids`` back to pending now, if still finished and due (locked in id order)."""
    for chunk in in_chunks(ids):
        conn.execute(
            update(urls)
            .where(
                # By id alone in the subquery: the planner then reads the rows by their key.
                locked_ids(
                    urls.c.id.in_(chunk),
                    urls.c.status.in_(RENEWABLE),
                    urls.c.next_crawl_at <= now,
                )
            )
            .values(status=UrlStatus.PENDING.value, next_crawl_at=now, attempts=0, updated_at=now)
        )


def in_chunks(values: Sequence[T]) -> Iterator[list[T]]:
    """``values`` in IN lists of a few lengths only (16, 32, ... 512: the last list repeats
    its last value up to the next of them).

    SQLite's driver keeps its last 128 prepared statements, and an IN list of another length
    is another statement: one of ~1,000 values holds ~250 KB, and a batch's new links (never
    twice the same count) filled the cache with them (measured: 33 MB for 128).

    >>> [len(chunk) for chunk in in_chunks(list(range(600)))]
    [512, 128]
    >>> list(in_chunks([1, 2, 3]))[0][-14:]
    [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    """
    for start in range(0, len(values), _IN_CHUNK):
        chunk = list(values[start : start + _IN_CHUNK])
        size = 16
        while size < len(chunk):
            size *= 2
        chunk.extend(chunk[-1:] * (size - len(chunk)))
        yield chunk


def pending_row(crawl_id: int, row: NewUrl, now: float, lastmod: float | None) -> dict[str, Any]:
    """A discovered URL as a new frontier row."""
    return {
        "crawl_id": crawl_id,
        "url_hash": row.url_hash,
        "url": row.url,
        "host": row.host,
        "status": UrlStatus.PENDING.value,
        "priority": row.priority,
        "depth": row.depth,
        "next_crawl_at": now if row.due_at is None else row.due_at,
        "attempts": 0,
        "discovered_at": now,
        "updated_at": now,
        "kind": row.kind,
        "lastmod": lastmod,
        "parent_id": row.parent_id,
        "discovered_via": row.via,
    }


class FrontierRepository(StoreConnection):
    """The ``urls`` rows as a queue: add, find the hosts with work, lease, release, recover."""

    def known_hashes(self, crawl_id: int, hashes: Sequence[str]) -> set[str]:
        """The ``hashes`` already in the crawl's frontier (synchronous: the API runs it off
        the event loop; ``POST /api/frontier/add`` reports the new URLs only)."""
        found: set[str] = set()
        with self.engine.connect() as conn, conn.begin():
            for chunk in in_chunks(hashes):
                found.update(
                    conn.execute(
                        select(urls.c.url_hash).where(
                            urls.c.crawl_id == crawl_id, urls.c.url_hash.in_(chunk)
                        )
                    ).scalars()
                )
        return found

    @cached_property
    def _lease_sql(self) -> TextClause:
        return text(_LEASE_SQL + dialect.lock_suffix(self.engine))

    @cached_property
    def _next_due_sql(self) -> TextClause:
        return text(_NEXT_DUE_SQL)

    async def add_urls(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        """Add URLs to the frontier; known ones stay as they are unless due for re-crawl."""

        def _add() -> None:
            with self._begin() as conn:
                insert_urls(conn, crawl_id, rows, now)

        await self._run(_add)

    async def make_expired_due(self, crawl_id: int, now: float, max_depth: int) -> int:
        """Finished rows (``RENEWABLE``) whose re-crawl time has passed become pending again
        now; returns how many.

        A crawl's start makes them due on their own, not only when a fetched page links to
        them again: a start page (or sitemap, feed) that answers 304 has no body, reveals no
        links, and would hide every page under it for good. Pages deeper than ``max_depth``
        (the crawl's limit may have shrunk since) stay as they are; sitemaps and feeds have
        their own depth. One UPDATE, rows locked in id order (``locked_ids``).
        """
        return await self._make_due(crawl_id, now, max_depth, expired_only=True)

    async def make_known_due(self, crawl_id: int, now: float, max_depth: int) -> int:
        """Every completed or failed row becomes pending again now, whatever its re-crawl
        time: a run asked for by hand ("Run now") visits everything the crawl knows, the
        pages that failed last time (the site was down, a 503 after its retries) too. Each is
        fetched with its stored ETag / Last-Modified, so an unchanged page answers 304 without
        a body. ``max_depth`` and the locking as in ``make_expired_due``; returns how many."""
        return await self._make_due(crawl_id, now, max_depth, expired_only=False)

    async def _make_due(
        self, crawl_id: int, now: float, max_depth: int, *, expired_only: bool
    ) -> int:
        conditions = [
            urls.c.crawl_id == crawl_id,
            or_(urls.c.kind != "page", urls.c.depth <= max_depth),
        ]
        if expired_only:
            conditions += [urls.c.status.in_(RENEWABLE), urls.c.next_crawl_at <= now]
        else:
            conditions.append(urls.c.status.in_(RENEWABLE))

        def _due() -> int:
            with self._begin() as conn:
                result = conn.execute(
                    update(urls)
                    .where(locked_ids(*conditions))
                    .values(
                        status=UrlStatus.PENDING.value,
                        next_crawl_at=now,
                        attempts=0,
                        updated_at=now,
                    )
                )
                return result.rowcount or 0

        return await self._run(_due)

    async def give_up_host(
        self,
        crawl_id: int,
        host: str,
        error_class: str,
        error: str,
        now: float,
        next_crawl_at: float,
    ) -> int:
        """Fail every pending row of ``host`` at once (a host that stayed unavailable): each
        becomes a dead letter with ``error_class`` and ``error``, and gets its error log entry.
        Rows leased (in progress) are left to the worker that holds them. Returns how many.

        One transaction: the rows are locked in id order (``locked_ids``) and changed by one
        UPDATE whose RETURNING names the URLs to log, so a row leased meanwhile by another
        worker is neither failed nor logged.
        """

        def _give_up() -> int:
            with self._begin() as conn:
                given_up = conn.execute(
                    update(urls)
                    .where(
                        locked_ids(
                            urls.c.crawl_id == crawl_id,
                            urls.c.host == host,
                            urls.c.status == UrlStatus.PENDING.value,
                        )
                    )
                    .values(
                        status=UrlStatus.FAILED.value,
                        error_class=error_class,
                        error=error,
                        next_crawl_at=next_crawl_at,
                        updated_at=now,
                    )
                    .returning(urls.c.url)
                ).scalars()
                rows = [
                    {
                        "crawl_id": crawl_id,
                        "category": error_category(error_class),
                        "error_class": error_class,
                        "message": error,
                        "task": url,
                        "stack_trace": None,
                        "created_at": now,
                    }
                    for url in given_up
                ]
                if rows:
                    conn.execute(error_logs.insert(), rows)
                return len(rows)

        return await self._run(_give_up)

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
            to_mark: list[CrawlRequest] = []  # SQLite: found by a SELECT, marked below
            short: list[str] = []
            with self._begin_index_walks() as conn:
                for host, limit in wanted.items():
                    if self.is_embedded:
                        found = [
                            CrawlRequest(*row)
                            for row in conn.execute(
                                self._lease_sql,
                                {"crawl_id": crawl_id, "host": host, "now": now, "limit": limit},
                            )
                        ]
                        to_mark.extend(found)
                    else:  # found, locked and marked by one statement
                        found = pgbatch.lease_host(
                            conn, crawl_id, host, limit, now, lease_until, worker_id
                        )
                    leased.extend(found)
                    if len(found) < limit:
                        short.append(host)
                if to_mark:
                    execute_many(
                        conn,
                        _MARK_LEASED,
                        ({"row_id": request.id} for request in to_mark),
                        shared={"until": lease_until, "worker": worker_id, "now": now},
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
                    .where(locked_ids(urls.c.status == UrlStatus.IN_PROGRESS.value, condition))
                    .values(
                        status=UrlStatus.PENDING.value,
                        lease_until=None,
                        leased_by=None,
                        updated_at=now,
                    )
                )
                return result.rowcount or 0

        return await self._run(_return)

    def url_hashes(self, crawl_id: int) -> list[str]:
        """Every URL hash of a crawl (for rebuilding a shared seen set)."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(select(urls.c.url_hash).where(urls.c.crawl_id == crawl_id)).scalars()
            )
