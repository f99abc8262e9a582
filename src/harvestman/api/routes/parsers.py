"""Site parsers over HTTP: per-domain parse success rates, so a layout change shows as a drop."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from harvestman.api.context import context_of
from harvestman.api.errors import ApiError
from harvestman.api.params import User
from harvestman.api.schemas import MAX_ID

router = APIRouter(tags=["parsers"])


@router.get("/api/parsers/stats")
async def parser_stats(
    request: Request,
    _: User,
    crawl: str | None = Query(
        None, min_length=1, max_length=200, description="namespace (default: serve's)"
    ),
    source_id: int | None = Query(
        None, ge=1, le=MAX_ID, description="a source's namespace instead of crawl"
    ),
    host: str | None = Query(None, min_length=1, max_length=300),
    parser: str | None = Query(None, min_length=1, max_length=100),
    since: float | None = Query(
        None, ge=0, le=1e11, allow_inf_nan=False, description="epoch seconds: from that day"
    ),
    days: bool = Query(False, description="add each day's counts (oldest first)"),
) -> dict[str, Any]:
    """Per (host, parser, version): pages handled, with records, empty, failed; the success
    rate overall, on the last day with attempts and on the days before (``drop``)."""
    ctx = context_of(request)
    if crawl is not None and source_id is not None:
        raise ApiError(422, "give crawl or source_id, not both")
    name = f"source-{source_id}" if source_id is not None else crawl or ctx.settings.crawl_name
    crawl_id = await ctx.sql_store.find_crawl(name)
    if crawl_id is None:
        raise ApiError(404, f"no crawl named {name!r}", details={"crawl": name})
    lines = await ctx.read(
        lambda: ctx.sql_store.parser_stats(
            crawl_id, host=host, parser=parser, since=since, with_days=days
        )
    )
    return {"crawl": name, "items": lines}
