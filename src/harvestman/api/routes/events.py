"""Server-sent event streams: crawl stats, health and scheduler metrics, every few seconds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse

from harvestman.api import queries
from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import User
from harvestman.api.routes.health import health_report
from harvestman.api.routes.scheduler import scheduler_metrics
from harvestman.errors import HarvestmanError

router = APIRouter(prefix="/sse", tags=["events"])

Snapshot = Callable[[ApiContext], Awaitable[dict[str, Any]]]


async def _crawler(ctx: ApiContext) -> dict[str, Any]:
    return await ctx.read(queries.crawl_stats, ctx.sql_store.engine, None, time.time())


def _stream(request: Request, event: str, snapshot: Snapshot, count: int | None) -> Any:
    ctx = context_of(request)

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
                await asyncio.wait_for(ctx.shutdown.wait(), ctx.settings.sse_interval)
            if ctx.shutdown.is_set():
                return

    return EventSourceResponse(events(), ping=15)


Count = Query(None, ge=1, le=10_000, description="end the stream after this many events")


@router.get("/crawler/events")
async def crawler_events(request: Request, _: User, count: int | None = Count) -> Any:
    """``stats`` events: URLs per status, pages, rates, status codes."""
    return _stream(request, "stats", _crawler, count)


@router.get("/health/events")
async def health_events(request: Request, _: User, count: int | None = Count) -> Any:
    """``health`` events: the /health report."""
    return _stream(request, "health", health_report, count)


@router.get("/metrics/events")
async def metrics_events(request: Request, _: User, count: int | None = Count) -> Any:
    """``metrics`` events: the scheduler metrics."""
    return _stream(request, "metrics", scheduler_metrics, count)
