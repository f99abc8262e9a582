"""Server-sent event streams: crawl stats, health and scheduler metrics, every few seconds.

The ``stats`` event carries what the dashboard's overview draws: the crawl statistics, bytes
downloaded, robots.txt denials and the live workers with their current hosts. ``interval``
lets a client ask for events more often than the default (the dashboard asks for 2 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse

from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import User
from harvestman.api.routes.health import health_report
from harvestman.api.routes.scheduler import scheduler_metrics
from harvestman.api.routes.workers import live_workers
from harvestman.errors import HarvestmanError
from harvestman.records import UrlStatus

router = APIRouter(prefix="/sse", tags=["events"])

Snapshot = Callable[[ApiContext], Awaitable[dict[str, Any]]]


async def _crawler(ctx: ApiContext) -> dict[str, Any]:
    now = time.time()
    stats = await ctx.read(ctx.sql_store.reports.crawl_stats, None, now)
    stats["bytes"] = await ctx.read(ctx.sql_store.reports.bytes_downloaded)
    stats["robots_denials"] = stats["urls"].get(UrlStatus.BLOCKED.value, 0)
    stats["workers"] = await live_workers(ctx, now)
    stats["time"] = now
    return stats


def _stream(
    request: Request, event: str, snapshot: Snapshot, count: int | None, every: float | None
) -> Any:
    ctx = context_of(request)
    interval = every or ctx.settings.sse_interval

    async def events() -> AsyncIterator[dict[str, str]]:
        sent = 0
        while count is None or sent < count:
            try:
                data = await snapshot(ctx)
                yield {"event": event, "data": json.dumps(data, default=str)}
            except HarvestmanError as exc:
                yield {"event": "error", "data": json.dumps({"message": str(exc)})}
            sent += 1
            if count is not None and sent >= count:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.shutdown.wait(), interval)
            if ctx.shutdown.is_set():
                return

    return EventSourceResponse(events(), ping=15)


Count = Query(None, ge=1, le=10_000, description="end the stream after this many events")
Interval = Query(
    None, ge=1, le=60, allow_inf_nan=False, description="seconds between events (default: serve's)"
)


@router.get("/crawler/events")
async def crawler_events(
    request: Request, _: User, count: int | None = Count, interval: float | None = Interval
) -> Any:
    """``stats`` events: URLs per status, pages, rates, status codes, bytes, robots.txt
    denials and the live workers (id, host name, current host, pages, rate)."""
    return _stream(request, "stats", _crawler, count, interval)


@router.get("/health/events")
async def health_events(
    request: Request, _: User, count: int | None = Count, interval: float | None = Interval
) -> Any:
    """``health`` events: the /health report."""
    return _stream(request, "health", health_report, count, interval)


@router.get("/metrics/events")
async def metrics_events(
    request: Request, _: User, count: int | None = Count, interval: float | None = Interval
) -> Any:
    """``metrics`` events: the scheduler metrics."""
    return _stream(request, "metrics", scheduler_metrics, count, interval)
