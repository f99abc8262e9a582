"""The live crawl workers: ``harvestman worker`` processes and ``serve``'s in-process ones.

A worker is live while its heartbeat (every ``worker_heartbeat_interval``) is younger than
``WORKER_TIMEOUT``; each reports the crawl it works on, the host it fetched last, its pages
and its rate (pages/s over the last 10 s, as of that heartbeat).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import User
from harvestman.api.routes.health import WORKER_TIMEOUT

router = APIRouter(tags=["workers"])


async def live_workers(ctx: ApiContext, now: float) -> list[dict[str, Any]]:
    """The workers whose last heartbeat is recent, oldest started first."""
    workers = []
    for row in await ctx.sql_store.registry.worker_rows():
        if row["heartbeat_at"] < now - WORKER_TIMEOUT:
            continue
        info = row["info"] or {}
        workers.append(
            {
                "id": row["id"],
                "hostname": row["hostname"],
                "pid": row["pid"],
                "heartbeat_at": row["heartbeat_at"],
                "crawl": info.get("crawl"),
                "current_host": info.get("current_host"),
                "pages": info.get("pages"),
                "rate": info.get("rate"),
            }
        )
    return workers


@router.get("/api/workers")
async def list_workers(request: Request, _: User) -> dict[str, Any]:
    """The live workers (id, machine, pid, crawl, current host, pages, pages/s, heartbeat)
    and their summed pages/s."""
    workers = await live_workers(context_of(request), time.time())
    return {
        "items": workers,
        "total": len(workers),
        "pages_per_second": round(sum(w["rate"] or 0.0 for w in workers), 2),
    }
