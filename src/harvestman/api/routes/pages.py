"""One stored page, its archived body, and the page list as a download.

The list itself is ``GET /api/pages`` (``crawl.py``); ``GET /api/pages/export`` streams the
same filters' pages, every page of the list, as CSV or JSONL (``api/downloads.py``).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response, StreamingResponse

from harvestman.api.context import context_of
from harvestman.api.crawls import CrawlQuery, crawl_id, name_rows
from harvestman.api.downloads import Format, download_response, iso_time
from harvestman.api.errors import ApiError
from harvestman.api.params import Id, User
from harvestman.api.routes.crawl import Host
from harvestman.api.routes.products import DecimalResponse
from harvestman.archive import ArchiveError, ArchiveMissing, RawArchive
from harvestman.archive.location import open_blobs
from harvestman.store.keyset import Key
from harvestman.store.lists import PAGE_FIELDS, PageFilter

router = APIRouter(tags=["crawl"])

# The CSV's columns: the list's fields and its crawl's name, times as ISO 8601 (see
# api/downloads.py).
EXPORT_COLUMNS = (*PAGE_FIELDS, "crawl")
_TIMES = {"fetched_at"}


def _page_row(item: dict[str, Any]) -> list[Any]:
    return [iso_time(item[name]) if name in _TIMES else item[name] for name in EXPORT_COLUMNS]


@router.get("/api/pages/export", response_class=StreamingResponse)
async def export_pages(
    request: Request,
    _: User,
    format: Format = Query("csv", description="csv or jsonl"),
    crawl: CrawlQuery = None,
    host: str | None = Host,
    status_code: int | None = Query(None, ge=0, le=999),
    validation_status: Literal["ok", "soft", "hard"] | None = None,
    since: float | None = Query(None, ge=0, le=1e11, allow_inf_nan=False),
) -> Response:
    """Every stored page ``GET /api/pages`` lists for these filters (every crawl unless
    ``crawl`` names one), newest first, as a CSV or JSONL file (a line: one item of the list);
    at most ``api_export_max_rows``."""
    ctx = context_of(request)
    where = PageFilter(
        crawl_id=await crawl_id(ctx, crawl),
        host=host,
        status_code=status_code,
        validation_status=validation_status,
        since=since,
    )
    store = ctx.sql_store

    def read(after: Key | None, limit: int) -> tuple[list[dict[str, Any]], Key | None]:
        items, next_after = store.rows.list_rows(where, after=after, limit=limit)
        name_rows(ctx, items)  # each page's crawl, as the list says it
        return items, next_after

    async def rows(after: Key | None, limit: int) -> tuple[list[dict[str, Any]], Key | None]:
        return await ctx.read(read, after, limit)

    return download_response(
        format,
        "pages",
        rows,
        columns=EXPORT_COLUMNS,
        flatten=_page_row,
        most=ctx.settings.export_max_rows,
        scope=crawl or "all",
    )


@router.get("/api/pages/{page_id}", response_model=dict[str, Any])
async def page_detail(request: Request, page_id: Id, _: User) -> Response:
    """One stored page: its fetch (status, type, size, timings, redirects, the ETag and
    Last-Modified it answered: the only headers kept), what was read from it (title,
    canonical, language), its check (``validation_status``, ``rejection_reason``), its
    crawl, its frontier row (``frontier``: how it was found, from which page, its depth,
    and ``children``, the URLs first found on it: ``GET /api/v1/discovered-links?parent_id=``
    lists them), the page it nearly duplicates and the products found on it. ``archived``
    says whether ``GET /api/pages/{id}/body`` can answer its body."""
    ctx = context_of(request)
    page = await ctx.read(ctx.sql_store.rows.page_detail, page_id)
    if page is None:
        raise ApiError(404, f"no page {page_id}", details={"id": page_id})
    path, location = page.pop("archive_path"), page.pop("archive_location")
    page["archived"] = bool(path and location)
    return DecimalResponse(page)  # its products' prices as exact strings


@router.get("/api/pages/{page_id}/body", response_class=Response)
async def page_body(request: Request, page_id: Id, _: User) -> Response:
    """The page's body as the raw archive keeps it, as a download (never shown inline: it is
    another site's HTML). 404 when the page or its archived body is missing."""
    ctx = context_of(request)
    page = await ctx.read(ctx.sql_store.rows.page_detail, page_id)
    if page is None:
        raise ApiError(404, f"no page {page_id}", details={"id": page_id})
    key, location = page["archive_path"], page["archive_location"]
    if not key or not location:
        raise ApiError(
            404,
            f"page {page_id} has no archived body: archiving was off when it was fetched "
            "(archive_enabled)",
            details={"id": page_id},
        )
    settings = ctx.crawler_settings

    def read() -> bytes:
        with RawArchive(open_blobs(location, settings)) as archive:
            return archive.get(key)

    try:
        body = await ctx.read(read)
    except ArchiveMissing:
        raise ApiError(
            404, f"the archived body of page {page_id} is gone", details={"id": page_id}
        ) from None
    except ArchiveError as exc:
        raise ApiError(502, f"the raw archive failed: {exc}", details={"id": page_id}) from None
    name = f"page-{page_id}-{time.strftime('%Y%m%d', time.gmtime(page['fetched_at']))}"
    extension = key.split(".")[-2]
    return Response(
        body,
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{name}.{extension}"',
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox",
        },
    )
