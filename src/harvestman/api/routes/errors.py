"""Errors and dead letters over HTTP: the error log, its summary, failed URLs and re-queueing.

The reads and the re-queue are the store functions the CLI uses (``store.failures``).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import Field, model_validator

from harvestman.api.context import context_of
from harvestman.api.crawls import CrawlQuery, crawl_id, name_rows, one_crawl_id
from harvestman.api.params import Admin, Limit, Offset, User
from harvestman.api.schemas import MAX_ID, Strict
from harvestman.store import failures

router = APIRouter(tags=["errors"])

Category = Literal["network", "http", "parse", "validation", "storage"]
Host = Query(None, min_length=1, max_length=300, description="host[:port], as the store keys it")
ErrorType = Query(None, alias="type", min_length=1, max_length=64, description="an error class")
Since = Query(None, ge=0, le=1e11, allow_inf_nan=False, description="epoch seconds")


def _error_item(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "crawl": row["crawl"],
        "category": row["category"],
        "type": row["error_class"],
        "message": row["message"],
        "task": row["task"],
        "stack_trace": row["stack_trace"],
        "created_at": row["created_at"],
    }


@router.get("/api/errors")
async def list_errors(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    category: Category | None = None,
    error_type: str | None = ErrorType,
    host: str | None = Host,
    since: float | None = Since,
    before: int | None = Query(None, ge=1, le=MAX_ID, description="the id to page back from"),
    limit: Limit = 50,
) -> dict[str, Any]:
    """Recorded errors, newest first. The next page: ``before`` = the response's ``next_before``
    (None on the last page)."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)
    rows = await ctx.read(
        lambda: ctx.sql_store.failures.error_rows(
            crawl_id=one,
            category=category,
            error_class=error_type,
            host=host,
            since=since,
            before_id=before,
            limit=limit,
        )
    )
    next_before = rows[-1]["id"] if len(rows) == limit else None
    return {"items": [_error_item(row) for row in rows], "limit": limit, "next_before": next_before}


@router.get("/api/errors/summary")
async def errors_summary(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    since: float | None = Since,
) -> dict[str, Any]:
    """Recorded errors counted by category and by type (error class), most first."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)
    return await ctx.read(lambda: ctx.sql_store.failures.error_summary(crawl_id=one, since=since))


@router.get("/api/dead-letter")
async def list_dead_letters(
    request: Request,
    _: User,
    crawl: CrawlQuery = None,
    host: str | None = Host,
    error_type: str | None = ErrorType,
    limit: Limit = 50,
    offset: Offset = 0,
) -> dict[str, Any]:
    """URLs that failed for good (retries exhausted or not retryable), in id order, of every
    crawl unless ``crawl`` names one (each says its ``crawl``), and ``by_type``: those dead
    letters (of ``host``) counted by error class, most first, for a filter by class."""
    ctx = context_of(request)
    one = await crawl_id(ctx, crawl)
    store = ctx.sql_store

    def read() -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
        rows, count = store.failures.dead_letters(
            one, host=host, error_class=error_type, limit=limit, offset=offset
        )
        name_rows(ctx, rows)
        return rows, count, store.failures.dead_letter_classes(one, host)

    items, total, by_type = await ctx.read(read)
    return {
        "crawl": crawl,
        "items": items,
        "total": total,
        "limit": limit,
        "offset": offset,
        "by_type": by_type,
    }


class RequeueIn(Strict):
    """Which dead letters go back to the frontier: exactly one of ``ids``, ``host``, ``all``;
    ``type`` narrows any of them to one error class."""

    crawl: str | None = Field(None, min_length=1, max_length=200)
    ids: list[int] | None = Field(None, min_length=1, max_length=failures.MAX_IDS)
    host: str | None = Field(None, min_length=1, max_length=300)
    all: bool = False
    type: str | None = Field(None, min_length=1, max_length=64)
    dry_run: bool = False

    @model_validator(mode="after")
    def _one_selector(self) -> RequeueIn:
        chosen = [self.ids is not None, self.host is not None, self.all]
        if sum(chosen) != 1:
            raise ValueError("give exactly one of ids, host or all=true")
        if self.ids is not None and not all(1 <= i <= MAX_ID for i in self.ids):
            raise ValueError(f"ids are from 1 to {MAX_ID}")
        return self


@router.post("/api/admin/dead-letter/requeue")
async def requeue_dead_letters(request: Request, body: RequeueIn, _: Admin) -> dict[str, Any]:
    """Put dead letters back into the frontier, due now with their retries reset (a dry run
    only counts them)."""
    ctx = context_of(request)
    name = body.crawl or ctx.settings.crawl_name
    one = await one_crawl_id(ctx, name)
    matched = await ctx.read(
        lambda: ctx.sql_store.failures.requeue_dead_letters(
            one,
            time.time(),
            ids=body.ids,
            host=body.host,
            error_class=body.type,
            dry_run=body.dry_run,
        )
    )
    return {
        "crawl": name,
        "dry_run": body.dry_run,
        "matched": matched,
        "requeued": 0 if body.dry_run else matched,
    }
