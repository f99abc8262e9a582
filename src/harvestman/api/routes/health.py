"""Health: the store, Redis, the scheduler and the live workers."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import Anonymous
from harvestman.errors import HarvestmanError

router = APIRouter(tags=["health"])

WORKER_TIMEOUT = 30.0


async def health_report(ctx: ApiContext) -> dict[str, Any]:
    """``status`` is ``ok``, ``degraded`` (Redis away) or ``down`` (the store is away)."""
    checks: dict[str, Any] = {}
    try:
        await ctx.sql_store.health.ping()
        checks["store"] = {"status": "ok"}
    except HarvestmanError as exc:
        checks["store"] = {"status": "down", "error": str(exc)}
    if ctx.settings.redis_url:
        checks["redis"] = await _redis(ctx.settings.redis_url)
    else:
        checks["redis"] = {"status": "not_configured"}
    scheduler = ctx.scheduler
    if scheduler is None:
        checks["scheduler"] = {"status": "not_running"}
    else:
        checks["scheduler"] = {
            "status": "ok",
            "instance_id": scheduler.instance_id,
            "is_leader": scheduler.leader.is_leader,
            "running_jobs": len(scheduler.running),
            "polls": scheduler.counters["polls"],
            "last_poll_ms": round(scheduler.last_poll_ms, 2),
        }
    workers = 0
    if checks["store"]["status"] == "ok":
        now = time.time()
        rows = await ctx.sql_store.registry.worker_rows()
        workers = sum(1 for r in rows if r["heartbeat_at"] >= now - WORKER_TIMEOUT)
    checks["workers"] = {"status": "ok", "active": workers}
    status = "ok"
    if checks["redis"]["status"] == "down":
        status = "degraded"
    if checks["store"]["status"] == "down":
        status = "down"
    return {"status": status, "uptime_seconds": round(time.time() - ctx.started_at, 1), **checks}


async def _redis(url: str) -> dict[str, Any]:
    import redis.asyncio as redis
    from redis.exceptions import RedisError

    client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
    try:
        await client.ping()
        return {"status": "ok"}
    except (RedisError, OSError) as exc:
        return {"status": "down", "error": str(exc)}
    finally:
        await client.aclose()


@router.get("/health")
async def health(request: Request, _: Anonymous) -> JSONResponse:
    """200 while the store answers, 503 when it does not."""
    report = await health_report(context_of(request))
    return JSONResponse(report, status_code=503 if report["status"] == "down" else 200)
