"""Admin queries and aggregate reads of the crawl store for the API: frontier and crawl
stats, clearing the frontier, resetting a domain, deleting pages, the time series.

Synchronous SQLAlchemy Core on the store's engine; ``AdminRepository`` makes them ``SqlStore``
methods, which the API runs off the event loop (``ApiContext.read``). The paged lists (pages,
frontier rows, domains) are ``SqlStore.list_rows`` over ``store.lists``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, and_, delete, func, select, update

from harvestman.records import UrlStatus
from harvestman.store import history
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import crawled_pages, crawls, domains, urls
from harvestman.store.transaction import locked_ids, transaction


def host_failures(engine: Engine, crawl: int | None, hosts: list[str]) -> dict[str, int]:
    """Failed frontier rows per host of ``hosts`` in a crawl (every crawl: None): one range
    of an index per crawl, however many URLs the hosts have (``ix_urls_lease`` (crawl, status,
    host) on SQLite; on PostgreSQL, which has no such index since migration 0027, the crawl's
    failed rows in ``ix_urls_status``)."""
    if not hosts:
        return {}
    where = [urls.c.status == UrlStatus.FAILED.value, urls.c.host.in_(hosts)]
    if crawl is not None:
        where.append(urls.c.crawl_id == crawl)
    query = select(urls.c.host, func.count()).where(*where).group_by(urls.c.host)
    with engine.connect() as conn:
        return {str(host): int(n) for host, n in conn.execute(query)}


def frontier_stats(engine: Engine, crawl: int | None, now: float) -> dict[str, Any]:
    """Rows per status, pending rows due now, hosts with pending rows (hosts counted once
    across crawls); every crawl when ``crawl`` is None."""
    of_crawl = [] if crawl is None else [urls.c.crawl_id == crawl]
    pending = and_(*of_crawl, urls.c.status == UrlStatus.PENDING.value)
    with engine.connect() as conn:
        by_status = {
            str(status): int(n)
            for status, n in conn.execute(
                select(urls.c.status, func.count()).where(*of_crawl).group_by(urls.c.status)
            )
        }
        due = conn.execute(
            select(func.count()).where(pending, urls.c.next_crawl_at <= now)
        ).scalar_one()
        hosts = conn.execute(select(func.count(func.distinct(urls.c.host))).where(pending))
        host_count = hosts.scalar_one()
    return {
        "by_status": by_status,
        "total": sum(by_status.values()),
        "pending": by_status.get(UrlStatus.PENDING.value, 0),
        "in_progress": by_status.get(UrlStatus.IN_PROGRESS.value, 0),
        "due_now": int(due),
        "pending_hosts": int(host_count),
    }


def clear_frontier(engine: Engine, crawl: int) -> int:
    """Delete a crawl's pending rows; returns how many."""
    with transaction(engine) as conn:
        result = conn.execute(
            delete(urls).where(
                locked_ids(urls.c.crawl_id == crawl, urls.c.status == UrlStatus.PENDING.value)
            )
        )
        return result.rowcount or 0


def reset_domain(engine: Engine, host: str, now: float) -> dict[str, int] | None:
    """Re-enable a host: allowed again, its politeness gate and robots.txt cache cleared (so
    robots.txt is fetched again), its failed and blocked URLs pending again. None when the
    host is unknown."""
    host = host.lower()
    with transaction(engine) as conn:
        changed = conn.execute(
            update(domains)
            .where(domains.c.host == host)
            .values(
                allowed=True,
                busy_until=None,
                next_allowed_at=None,
                robots_fetched_at=None,
                updated_at=now,
            )
        ).rowcount
        requeued = conn.execute(
            update(urls)
            .where(
                locked_ids(
                    urls.c.host == host,
                    urls.c.status.in_([UrlStatus.FAILED.value, UrlStatus.BLOCKED.value]),
                )
            )
            .values(status=UrlStatus.PENDING.value, attempts=0, next_crawl_at=now, updated_at=now)
        ).rowcount
    if not changed and not requeued:
        return None
    return {"domains": int(changed or 0), "urls_requeued": int(requeued or 0)}


def delete_pages(
    engine: Engine, crawl: int, *, host: str | None = None, before: float | None = None
) -> int:
    """Delete a crawl's stored pages (of one host, fetched before a time); how many."""
    conditions = [crawled_pages.c.crawl_id == crawl]
    if host:
        conditions.append(crawled_pages.c.host == host.lower())
    if before is not None:
        conditions.append(crawled_pages.c.fetched_at < before)
    with transaction(engine) as conn:
        return conn.execute(delete(crawled_pages).where(*conditions)).rowcount or 0


def crawl_stats(engine: Engine, crawl: int | None, now: float) -> dict[str, Any]:
    """URLs per status, pages, status codes, pages in the last minute and hour."""
    url_where = [] if crawl is None else [urls.c.crawl_id == crawl]
    page_where = [] if crawl is None else [crawled_pages.c.crawl_id == crawl]
    with engine.connect() as conn:
        by_status = {
            str(s): int(n)
            for s, n in conn.execute(
                select(urls.c.status, func.count()).where(*url_where).group_by(urls.c.status)
            )
        }
        codes = {
            "none" if code is None else str(code): int(n)
            for code, n in conn.execute(
                select(crawled_pages.c.status_code, func.count())
                .where(*page_where)
                .group_by(crawled_pages.c.status_code)
            )
        }

        def pages_since(t: float | None) -> int:
            where = list(page_where)
            if t is not None:
                where.append(crawled_pages.c.fetched_at >= t)
            return int(
                conn.execute(
                    select(func.count()).select_from(crawled_pages).where(*where)
                ).scalar_one()
            )

        total, last_minute, last_hour = (
            pages_since(None),
            pages_since(now - 60),
            pages_since(now - 3600),
        )
        host_count = conn.execute(select(func.count()).select_from(domains)).scalar_one()
    ok = sum(n for code, n in codes.items() if code.startswith("2") or code == "304")
    return {
        "urls": by_status,
        "frontier_size": by_status.get(UrlStatus.PENDING.value, 0),
        "pages": total,
        "pages_last_minute": last_minute,
        "pages_last_hour": last_hour,
        "pages_per_second": round(last_minute / 60, 3),
        "success_rate": round(ok / total, 4) if total else None,
        "status_codes": codes,
        "domains": int(host_count),
    }


def timeseries(
    engine: Engine, crawl: int | None, since: float, bucket: float
) -> list[dict[str, Any]]:
    """Crawl counters per ``bucket`` seconds since ``since`` (the buckets with any), from the
    stats history (``store.history.points``: pages, pages/s, errors, bytes, status classes,
    success rate, robots denials, new URLs); for crawls without history (stored before it),
    what the pages tell."""
    if history.has_history(engine, crawl):
        return history.points(engine, crawl, since, bucket)
    return history.page_points(engine, crawl, since, bucket)


def crawl_summaries(engine: Engine) -> list[dict[str, Any]]:
    """Every crawl in name order: its id, name, creation time, stored pages and frontier rows
    per status. Two grouped counts over the crawl-leading indexes (``ix_crawled_pages_crawl_id``,
    ``ix_urls_status``): no table row is read."""
    with engine.connect() as conn:
        found = conn.execute(
            select(crawls.c.id, crawls.c.name, crawls.c.created_at).order_by(crawls.c.name)
        ).all()
        pages: dict[int, int] = {
            int(crawl): int(n)
            for crawl, n in conn.execute(
                select(crawled_pages.c.crawl_id, func.count()).group_by(crawled_pages.c.crawl_id)
            )
        }
        by_status: dict[int, dict[str, int]] = {}
        for crawl, status, n in conn.execute(
            select(urls.c.crawl_id, urls.c.status, func.count()).group_by(
                urls.c.crawl_id, urls.c.status
            )
        ):
            by_status.setdefault(int(crawl), {})[str(status)] = int(n)
    return [
        {
            "id": int(crawl),
            "name": name,
            "created_at": created_at,
            "pages": pages.get(int(crawl), 0),
            "urls": by_status.get(int(crawl), {}),
        }
        for crawl, name, created_at in found
    ]


def bytes_downloaded(engine: Engine) -> int:
    """The bytes of every stored page (their content lengths), across crawls."""
    with engine.connect() as conn:
        total = conn.execute(select(func.sum(crawled_pages.c.content_length))).scalar()
    return int(total or 0)


class AdminRepository(StoreConnection):
    """The functions above as store methods (synchronous: run them off the event loop)."""

    def host_failures(self, crawl: int | None, hosts: list[str]) -> dict[str, int]:
        return host_failures(self.engine, crawl, hosts)

    def frontier_stats(self, crawl: int | None, now: float) -> dict[str, Any]:
        return frontier_stats(self.engine, crawl, now)

    def clear_frontier(self, crawl: int) -> int:
        return clear_frontier(self.engine, crawl)

    def reset_domain(self, host: str, now: float) -> dict[str, int] | None:
        return reset_domain(self.engine, host, now)

    def delete_pages(
        self, crawl: int, *, host: str | None = None, before: float | None = None
    ) -> int:
        return delete_pages(self.engine, crawl, host=host, before=before)

    def crawl_stats(self, crawl: int | None, now: float) -> dict[str, Any]:
        return crawl_stats(self.engine, crawl, now)

    def timeseries(self, crawl: int | None, since: float, bucket: float) -> list[dict[str, Any]]:
        return timeseries(self.engine, crawl, since, bucket)

    def crawl_summaries(self) -> list[dict[str, Any]]:
        return crawl_summaries(self.engine)

    def bytes_downloaded(self) -> int:
        return bytes_downloaded(self.engine)
