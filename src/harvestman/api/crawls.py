"""The ``crawl`` parameter every route that reads a crawl takes, resolved one way.

A crawl is a namespace of the store (``crawls``): ``harvestman crawl``'s (``default`` unless
``--name``), or a source's (``Source.crawl``, named after the source: ``my-shop-12``). A read
route shows every crawl when ``crawl`` is absent and one crawl when it names one; a name that
names no crawl is a 404 whose details list the names that exist (``crawls``), so a client can
offer them. A source's crawl exists from the source's creation, even before its first run
(its row is made on first use, here too). Routes that change a crawl (add or clear URLs,
delete pages, re-queue dead letters) act on one: the one named, else ``serve``'s
``api_crawl_name`` (``default``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Query

from harvestman.api.context import ApiContext
from harvestman.api.errors import ApiError

CrawlQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=200,
        description="one crawl by name (absent: every crawl); GET /api/crawls lists them",
    ),
]
OneCrawlQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=200, description="the crawl to change (default: serve's)"),
]


async def crawl_id(ctx: ApiContext, name: str | None) -> int | None:
    """The id of crawl ``name``; None (every crawl) when ``name`` is None; a 404 listing the
    crawls that exist when it names none."""
    if name is None:
        return None
    return await one_crawl_id(ctx, name)


async def one_crawl_id(ctx: ApiContext, name: str | None) -> int:
    """The id of crawl ``name`` (``serve``'s own crawl when None); 404 as ``crawl_id``."""
    name = name or ctx.settings.crawl_name
    found = ctx.crawl_ids.get(name)
    if found is None:
        found = await ctx.sql_store.crawls.find_crawl(name)
        if found is None and name in await ctx.job_store.sources.by_crawl():
            found = await ctx.sql_store.crawls.ensure_crawl(name)  # a source not run yet: empty
        if found is None:
            raise await unknown_crawl(ctx, name)
        ctx.crawl_ids[name] = found  # kept: a crawl is never renamed nor deleted
    return found


async def unknown_crawl(ctx: ApiContext, name: str) -> ApiError:
    names = sorted(await ctx.read(ctx.sql_store.reports.crawl_ids))
    listed = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return ApiError(
        404,
        f"no crawl named {name!r}; the crawls are: {listed or 'none yet'}",
        code="unknown_crawl",
        details={"crawl": name, "crawls": names},
    )


def crawl_names(ctx: ApiContext, crawl_ids: Iterable[int]) -> dict[int, str]:
    """The crawls' names by id, ``crawl_ids`` among them unless deleted; synchronous, run on
    the store's thread with the page. The names known are kept (``ApiContext.crawl_ids``); the
    store is asked again only for a crawl not seen before."""
    # A copy (one C call under the GIL): the event loop may add a name meanwhile.
    names = {crawl: name for name, crawl in ctx.crawl_ids.copy().items()}
    if any(crawl not in names for crawl in crawl_ids):
        found = ctx.sql_store.reports.crawl_ids()
        ctx.crawl_ids.update(found)
        names = {crawl: name for name, crawl in found.items()}
    return names


def name_rows(ctx: ApiContext, items: list[dict[str, Any]]) -> None:
    """Each row's ``crawl`` (its name) beside its ``crawl_id`` (``crawl_names``)."""
    names = crawl_names(ctx, (item["crawl_id"] for item in items))
    for item in items:
        item["crawl"] = names.get(item["crawl_id"])
