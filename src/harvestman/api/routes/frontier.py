"""One frontier row by id, and the URLs a crawl discovered with where they came from.

The frontier's list is ``GET /api/frontier/urls`` (``crawl.py``; ``/api/v1/frontier`` is its
alias, ``aliases.py``). A discovered link is a frontier row found on a page, sitemap or feed,
or guessed (pagination, archives): ``discovered_via`` says how, ``parent_id`` and
``parent_url`` where. Only its first discovery is kept (see ``store.lists.DiscoveredFilter``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response

from harvestman.api.context import ApiContext, context_of
from harvestman.api.crawls import CrawlQuery, crawl_id, name_rows
from harvestman.api.errors import ApiError
from harvestman.api.paging import PageResponse
from harvestman.api.params import Cursor, Id, Limit, Offset, User
from harvestman.api.routes.crawl import Host
from harvestman.api.routes.crawl import _list as list_page
from harvestman.api.schemas import MAX_ID, Page
from harvestman.store.lists import DiscoveredFilter, RowFilter, UrlFilter

router = APIRouter(tags=["crawl"])

Via = Literal["link", "sitemap", "feed", "pagination", "archive"]


async def _one(ctx: ApiContext, where: RowFilter, row_id: int, kind: str) -> dict[str, Any]:
    row = await ctx.read(ctx.sql_store.rows.find_row, where, row_id)
    if row is None:
        raise ApiError(404, f"no {kind} with id {row_id}", details={"kind": kind, "id": row_id})
    await ctx.read(name_rows, ctx, [row])
    return row


@router.get("/api/v1/frontier/{url_id}")
async def frontier_row(
    request: Request, url_id: Id, _: User, crawl: CrawlQuery = None
) -> dict[str, Any]:
    """One frontier row: its crawl, URL, host, status, priority, depth, due time
    (``next_crawl_at``), attempts, the lease and the last fetch's status or error (404 when
    ``crawl`` is named and the row is not in it)."""
    ctx = context_of(request)
    where = UrlFilter(crawl_id=await crawl_id(ctx, crawl))
    return await _one(ctx, where, url_id, "frontier row")


def _with_parents(ctx: ApiContext, crawl: int | None) -> Any:
    def annotate(items: list[dict[str, Any]]) -> None:
        parents = {item["parent_id"] for item in items if item["parent_id"] is not None}
        found = ctx.sql_store.rows.url_of_ids(crawl, parents)
        for item in items:
            item["parent_url"] = found.get(item["parent_id"])

    return annotate


@router.get("/api/v1/discovered-links", response_model=Page[dict[str, Any]])
async def discovered_links(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    parent_id: int | None = Query(None, ge=1, le=MAX_ID, description="found on this row"),
    via: Via | None = Query(None, description="how it was found"),
    host: str | None = Host,
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """URLs the crawl discovered, in discovery order, each with ``discovered_via`` (link,
    sitemap, feed, pagination, archive), ``parent_id`` and ``parent_url`` (see ``Page``)."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)
    where = DiscoveredFilter(crawl_id=one, parent_id=parent_id, via=via, host=host)
    page = await list_page(
        ctx,
        "urls",
        where,
        cursor=cursor,
        limit=limit,
        offset=offset,
        annotate=_with_parents(ctx, one),
    )
    return PageResponse(page)


@router.get("/api/v1/discovered-links/{url_id}")
async def discovered_link(
    request: Request, url_id: Id, _: User, crawl: CrawlQuery = None
) -> dict[str, Any]:
    """One discovered URL with where it came from."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)
    row = await _one(ctx, DiscoveredFilter(crawl_id=one), url_id, "discovered link")
    await ctx.read(_with_parents(ctx, one), [row])
    return row
