"""The crawls of the store, for a client's crawl selector: ``GET /api/crawls``.

Each crawl with its counts and, for a source's crawl, the source and its jobs. Every read
route of a crawl (pages, frontier, parsers, domains, errors, stats, products, search) takes
one of these names as ``crawl`` and shows every crawl without it (``api/crawls.py``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from harvestman.api.context import context_of
from harvestman.api.params import User

router = APIRouter(tags=["crawl"])


@router.get("/api/crawls")
async def list_crawls(request: Request, _: User) -> dict[str, Any]:
    """Every crawl in name order: ``name``, ``id``, ``created_at``, ``pages`` (stored),
    ``urls`` (frontier rows per status), ``source`` (``{id, name}`` of the source whose jobs
    crawl into it, or null: a ``harvestman crawl`` or API namespace), ``job_ids`` (that
    source's jobs) and ``default`` (the crawl ``serve`` adds URLs to when none is named). A
    source's crawl is listed from the source's creation, before its first run."""
    ctx = context_of(request)
    sources = await ctx.job_store.sources.by_crawl()
    known = await ctx.read(ctx.sql_store.reports.crawl_ids)
    for name in sources.keys() - known.keys():  # made before its crawl: it has one now
        ctx.crawl_ids[name] = await ctx.sql_store.crawls.ensure_crawl(name)
    summaries = await ctx.read(ctx.sql_store.reports.crawl_summaries)
    jobs = await ctx.job_store.sources.job_ids([source_id for source_id, _ in sources.values()])
    items = []
    for crawl in summaries:
        owner = sources.get(crawl["name"])
        items.append(
            {
                **crawl,
                "source": None if owner is None else {"id": owner[0], "name": owner[1]},
                "job_ids": [] if owner is None else jobs.get(owner[0], []),
                "default": crawl["name"] == ctx.settings.crawl_name,
            }
        )
    return {"items": items, "total": len(items)}
