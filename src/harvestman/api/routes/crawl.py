"""The crawl store over HTTP: stats, the frontier, pages and domains."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.crawls import CrawlQuery, OneCrawlQuery, crawl_id, name_rows, one_crawl_id
from harvestman.api.errors import ApiError
from harvestman.api.paging import PageResponse
from harvestman.api.params import Admin, AdminSeed, Anonymous, Cursor, Limit, Offset, User
from harvestman.api.schemas import Page, UrlsIn
from harvestman.errors import UrlError
from harvestman.records import NewUrl
from harvestman.store.keyset import Key
from harvestman.store.lists import DomainFilter, PageFilter, RowFilter, UrlFilter
from harvestman.urls import UrlNormalizer, host_key, url_hash

router = APIRouter(tags=["crawl"])

Host = Query(None, min_length=1, max_length=300)
UrlState = Literal["pending", "in_progress", "completed", "failed", "blocked"]
PRIORITIES = {"high": 3, "normal": 2, "low": 1}


async def _list(
    ctx: ApiContext,
    kind: str,
    where: RowFilter,
    *,
    cursor: str | None,
    limit: int,
    offset: int,
    annotate: Callable[[list[dict[str, Any]]], None] | None = None,
) -> dict[str, Any]:
    """One page of a crawl-store list (``store.lists``), its total from the count cache;
    ``annotate`` completes the items in the same trip to the store's thread, where a row of a
    crawl also gets its crawl's name (``crawl``)."""
    store = ctx.sql_store
    named = "crawl_id" in where.fields

    def read(after: Key | None) -> tuple[list[dict[str, Any]], Key | None]:
        items, next_after = store.rows.list_rows(where, after=after, limit=limit, offset=offset)
        if named:
            name_rows(ctx, items)
        if annotate is not None:
            annotate(items)
        return items, next_after

    async def fetch(after: Key | None) -> tuple[list[Any], Key | None, None]:
        items, next_after = await ctx.read(read, after)
        return items, next_after, None

    return await paging.paged(
        ctx.counts,
        (kind, where),
        fetch=fetch,
        count=lambda: ctx.read(store.rows.count_rows, where),
        cursor=cursor,
        limit=limit,
        offset=offset,
        max_offset=ctx.settings.max_offset,
        text_key=isinstance(where, DomainFilter),
    )


# -- stats ------------------------------------------------------------------------------------


@router.get("/api/stats")
async def stats(request: Request, _: Anonymous, crawl: CrawlQuery = None) -> dict[str, Any]:
    """Crawl statistics (all crawls unless ``crawl`` names one) and the jobs per state."""
    ctx = context_of(request)
    values = await ctx.read(
        ctx.sql_store.reports.crawl_stats, await crawl_id(ctx, crawl), time.time()
    )
    values["jobs"] = await ctx.job_store.jobs.status_counts()
    return values


@router.get("/api/stats/timeseries")
async def stats_timeseries(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    minutes: int = Query(
        60, ge=1, le=366 * 24 * 60, description="how far back (day rows past 7 days)"
    ),
    bucket_seconds: int = Query(60, ge=10, le=86400),
) -> dict[str, Any]:
    """Pages fetched per bucket over the last ``minutes``."""
    ctx = context_of(request)
    since = time.time() - minutes * 60
    one = await crawl_id(ctx, crawl)
    points = await ctx.read(ctx.sql_store.reports.timeseries, one, since, float(bucket_seconds))
    return {"since": since, "bucket_seconds": bucket_seconds, "points": points}


# -- frontier ---------------------------------------------------------------------------------


@router.get("/api/frontier/stats")
async def frontier_stats(request: Request, _: User, crawl: CrawlQuery = None) -> dict[str, Any]:
    """Frontier rows per status, due now, hosts with pending rows (every crawl unless one)."""
    ctx = context_of(request)
    return await ctx.read(
        ctx.sql_store.reports.frontier_stats, await crawl_id(ctx, crawl), time.time()
    )


@router.get("/api/frontier/urls", response_model=Page[dict[str, Any]])
async def frontier_urls(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    status: UrlState | None = None,
    host: str | None = Host,
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """Frontier rows in id order (every crawl unless ``crawl`` names one; each row says its
    ``crawl``), optionally of one status or host (see ``Page``)."""
    ctx = context_of(request)
    where = UrlFilter(crawl_id=await crawl_id(ctx, crawl), status=status, host=host)
    return PageResponse(await _list(ctx, "urls", where, cursor=cursor, limit=limit, offset=offset))


async def _add(ctx: ApiContext, body: UrlsIn, default_priority: str, seeds: bool) -> dict[str, Any]:
    settings = ctx.crawler_settings
    normalizer = UrlNormalizer.from_settings(settings)
    good: list[str] = []
    rejected: list[dict[str, str]] = []
    for n, url in enumerate(body.urls):
        try:
            normalized = normalizer.normalize(url)
        except UrlError as exc:
            rejected.append({"url": url[:300], "reason": exc.reason})
            continue
        await ctx.guard.check(normalized, f"urls.{n}")
        good.append(normalized)
    name = body.crawl or ctx.settings.crawl_name
    into = await ctx.sql_store.crawls.ensure_crawl(name, good if seeds else ())
    priority = PRIORITIES[body.priority or default_priority]
    rows = [NewUrl(u, url_hash(u), host_key(u), 0, priority) for u in dict.fromkeys(good)]
    known = await ctx.read(ctx.sql_store.rows.known_hashes, into, [r.url_hash for r in rows])
    await ctx.sql_store.frontier.add_urls(into, rows, time.time())
    ctx.counts.forget("urls")
    added = sum(row.url_hash not in known for row in rows)
    return {"crawl": name, "added": added, "rejected": rejected}


@router.post("/api/frontier/add")
async def frontier_add(request: Request, body: UrlsIn, _: Admin) -> dict[str, Any]:
    """Add URLs (normal priority unless given); known URLs stay as they are and are not
    counted in ``added``."""
    return await _add(context_of(request), body, "normal", seeds=False)


@router.post("/api/frontier/seed")
async def frontier_seed(request: Request, body: UrlsIn, _: AdminSeed) -> dict[str, Any]:
    """Add seed URLs at high priority; their hosts join the crawl's scope (10/min)."""
    return await _add(context_of(request), body, "high", seeds=True)


@router.post("/api/frontier/recover")
async def frontier_recover(request: Request, _: Admin) -> dict[str, int]:
    """Return expired leases to pending."""
    recovered = await context_of(request).sql_store.frontier.recover(time.time())
    return {"recovered": recovered}


@router.delete("/api/frontier")
async def frontier_clear(request: Request, _: Admin, crawl: OneCrawlQuery = None) -> dict[str, int]:
    """Delete the crawl's pending URLs."""
    ctx = context_of(request)
    deleted = await ctx.read(ctx.sql_store.admin.clear_frontier, await one_crawl_id(ctx, crawl))
    ctx.counts.forget("urls")
    return {"deleted": deleted}


# -- pages and domains ------------------------------------------------------------------------


@router.get("/api/pages", response_model=Page[dict[str, Any]])
async def list_pages(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    host: str | None = Host,
    status_code: int | None = Query(None, ge=0, le=999),
    validation_status: Literal["ok", "soft", "hard"] | None = None,
    since: float | None = Query(None, ge=0, le=1e11, allow_inf_nan=False),
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """Stored pages, newest first (every crawl unless ``crawl`` names one; each page says its
    ``crawl``; see ``Page``)."""
    ctx = context_of(request)
    where = PageFilter(
        crawl_id=await crawl_id(ctx, crawl),
        host=host,
        status_code=status_code,
        validation_status=validation_status,
        since=since,
    )
    return PageResponse(await _list(ctx, "pages", where, cursor=cursor, limit=limit, offset=offset))


@router.delete("/api/admin/pages")
async def delete_pages(
    request: Request,
    _: Admin,
    crawl: OneCrawlQuery = None,
    host: str | None = Host,
    before: float | None = Query(None, ge=0, le=1e11, allow_inf_nan=False),
) -> dict[str, int]:
    """Delete stored pages of a crawl (of one host, fetched before a time)."""
    ctx = context_of(request)
    one = await one_crawl_id(ctx, crawl)
    deleted = await ctx.read(
        lambda: ctx.sql_store.admin.delete_pages(one, host=host, before=before)
    )
    ctx.counts.forget("pages")
    return {"deleted": deleted}


@router.get("/api/domains", response_model=Page[dict[str, Any]])
async def list_domains(
    request: Request,
    _: User,
    host: str | None = Query(None, max_length=300, description="part of the host name"),
    crawl: CrawlQuery = None,
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """Known domains by host name (see ``Page``; hosts are shared by every crawl); ``errors``
    counts each host's failed URLs in ``crawl`` (every crawl unless named); ``breaker`` is its
    circuit breaker's state as workers publish it in Redis (None: not known here, without
    Redis); ``paused`` whether an operator paused it (``PUT /api/domains/{domain}/settings``)."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)

    def count_errors(items: list[dict[str, Any]]) -> None:
        hosts = [item["host"] for item in items]
        failures = ctx.sql_store.reports.host_failures(one, hosts)
        for item in items:
            item["errors"] = failures.get(item["host"], 0)

    where = DomainFilter(host_contains=host)
    page = await _list(
        ctx, "domains", where, cursor=cursor, limit=limit, offset=offset, annotate=count_errors
    )
    hosts = [item["host"] for item in page["items"]]
    breakers = None if ctx.breakers is None else await ctx.breakers.of(hosts)
    controls = await ctx.sql_store.controls.domain_controls()  # the few hosts an operator set
    for item in page["items"]:
        item["breaker"] = None if breakers is None else breakers.get(item["host"])
        control = controls.get(item["host"])
        item["paused"] = control is not None and control.paused
    return PageResponse(page)


@router.get("/api/domains/{domain}/robots")
async def domain_robots(request: Request, domain: str, _: User) -> dict[str, Any]:
    """The cached robots.txt of a host."""
    record = await context_of(request).sql_store.hosts.get_domain(domain.lower()[:300])
    if record is None:
        raise ApiError(404, f"no domain {domain!r}", details={"domain": domain[:300]})
    return {
        "host": record.host,
        "robots_txt": record.robots_txt,
        "robots_status": record.robots_status,
        "robots_fetched_at": record.robots_fetched_at,
        "crawl_delay": record.crawl_delay,
        "allowed": record.allowed,
    }


@router.post("/api/admin/domains/{domain}/reset")
async def reset_domain(request: Request, domain: str, _: Admin) -> dict[str, int]:
    """Re-enable a host: allowed, gate and robots.txt cache cleared, failed URLs pending."""
    ctx = context_of(request)
    done = await ctx.read(ctx.sql_store.admin.reset_domain, domain[:300], time.time())
    if done is None:
        raise ApiError(404, f"no domain {domain!r}", details={"domain": domain[:300]})
    ctx.counts.forget("urls")
    return done
