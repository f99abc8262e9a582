"""``GET /api/admin/storage``: what the store and the raw archive occupy, how fast they grow and
when the disk is full (``lifecycle.storage``; ``harvestman storage`` prints the same)."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request

from harvestman.api.context import context_of
from harvestman.api.params import Admin

router = APIRouter(tags=["admin"])


@router.get("/api/admin/storage")
async def storage(request: Request, _: Admin) -> dict[str, Any]:
    from harvestman.lifecycle.storage import storage_report

    ctx = context_of(request)
    # Off the event loop: it sizes every table and walks the archive.
    report = await ctx.read(
        storage_report, ctx.sql_store.maintenance, ctx.crawler_settings, time.time()
    )
    return report.as_dict()
