"""Operators' controls: per-domain settings (pause, delay, concurrency, re-crawl interval,
priority) and the stored proxies (passwords masked). Admin only.

Workers read the domain settings on their own every ``domain_settings_ttl`` seconds
(crawl/controls.py): a PUT here is in force everywhere within that time.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from harvestman.api.context import context_of
from harvestman.api.errors import ApiError
from harvestman.api.params import Admin
from harvestman.api.schemas import Strict
from harvestman.records import DomainControl

router = APIRouter(tags=["controls"])


class DomainSettingsIn(Strict):
    """A host's settings; a field left out (or null) falls back to the crawl's own."""

    paused: bool = False
    crawl_delay: float | None = Field(
        None, ge=0, le=3600, description="seconds between requests (robots.txt's if larger)"
    )
    concurrency: int | None = Field(None, ge=1, le=1024, description="requests in flight")
    recrawl_interval: float | None = Field(
        None, gt=0, le=10 * 365 * 86400.0, description="seconds before a page is due again"
    )
    priority: int = Field(0, ge=-100, le=100, description="higher: leased first")


# A host as the frontier keys it: a name or address, an optional port, IPv6 in brackets.
_HOST = re.compile(r"[a-z0-9._\-]+(:[0-9]{1,5})?|\[[0-9a-f:.]+\](:[0-9]{1,5})?")


def _host(domain: str) -> str:
    host = domain.strip().lower()
    if len(host) > 300 or not _HOST.fullmatch(host):
        raise ApiError(422, f"not a host name: {domain[:300]!r}", details={"domain": domain[:300]})
    return host


@router.get("/api/domains/{domain}/settings")
async def get_domain_settings(request: Request, domain: str, _: Admin) -> dict[str, Any]:
    """The host's settings (the defaults when none were set)."""
    ctx = context_of(request)
    host = _host(domain)
    control = await ctx.read(ctx.sql_store.admin.domain_control, host)
    return asdict(control or DomainControl(host))


@router.put("/api/domains/{domain}/settings")
async def put_domain_settings(
    request: Request, domain: str, body: DomainSettingsIn, _: Admin
) -> dict[str, Any]:
    """Replace the host's settings; every worker applies them within domain_settings_ttl."""
    ctx = context_of(request)
    control = DomainControl(_host(domain), **body.model_dump())
    stored = await ctx.read(ctx.sql_store.admin.put_domain_control, control, time.time())
    return asdict(stored)


@router.get("/api/admin/proxies")
async def list_proxies(request: Request, _: Admin) -> list[dict[str, Any]]:
    """The proxies the store knows and their health; passwords masked (``user:***@host``)."""
    ctx = context_of(request)
    return await ctx.read(ctx.sql_store.admin.proxy_list)
