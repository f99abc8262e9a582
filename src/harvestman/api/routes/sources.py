"""Sources: CRUD. Enabling or disabling a source tells every scheduler instance at once."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Query, Request, Response

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import Admin, Cursor, Id, Limit, Offset, User
from harvestman.api.schemas import Page, SourceIn, SourceOut, SourceUpdate
from harvestman.jobs.errors import EventsUnavailable
from harvestman.jobs.events import SourceEvent
from harvestman.jobs.records import ScopeRules, Source, SourceOptions, SourceSpec

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1/sources", tags=["sources"])


async def _source_changed(ctx: ApiContext, source: Source) -> None:
    """This instance's scheduler syncs the source's job before the answer (so the caller sees
    it), then every other instance is told (``jobs.events``). An event that cannot be sent is
    logged; the reconciliation repairs what the others missed."""
    origin = ""
    if ctx.scheduler is not None:
        await ctx.scheduler.source_changed(source.id)
        origin = ctx.scheduler.instance_id
    if ctx.source_events is not None:
        try:
            await ctx.source_events.publish(SourceEvent(source.id, source.enabled, origin))
        except EventsUnavailable as exc:
            log.warning("source %d: the other instances were not told: %s", source.id, exc)


async def _out(ctx: ApiContext, source: Source) -> SourceOut:
    """A source with its jobs: what a create or an enable made is in the answer."""
    found = await ctx.job_store.jobs.of_sources([source.id])
    return SourceOut.of(source, found.get(source.id, []))


@router.get("", response_model=Page[SourceOut])
async def list_sources(
    request: Request,
    _: User,
    enabled: bool | None = None,
    name: str | None = Query(None, max_length=200, description="part of the name"),
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """Sources in id order, each with its jobs (see ``Page``; the total is exact: sources
    are few)."""
    ctx = context_of(request)
    repository = ctx.job_store.sources

    async def fetch(after: int | str | None) -> tuple[list[Any], int | str | None, int | None]:
        page = await repository.list(
            enabled=enabled,
            name_contains=name,
            after=None if after is None else int(after),
            limit=limit,
            offset=offset,
        )
        jobs = await ctx.job_store.jobs.of_sources([s.id for s in page.items])
        items = [SourceOut.of(s, jobs.get(s.id, [])) for s in page.items]
        return items, page.next_after, page.total

    return paging.PageResponse(
        await paging.paged(
            ctx.counts,
            ("sources", enabled, name),
            fetch=fetch,
            cursor=cursor,
            limit=limit,
            offset=offset,
            max_offset=ctx.settings.max_offset,
        )
    )


@router.post("", status_code=201, response_model=SourceOut)
async def create_source(request: Request, body: SourceIn, _: Admin) -> SourceOut:
    """Create a source; its ``crawl`` (where its jobs' pages go) is named after it here and
    never moves; an enabled one gets its recurring job at once, listed in ``jobs``. A start
    URL on a private address outside ``network_allow`` is a 422 that names the setting."""
    ctx = context_of(request)
    await ctx.guard.check_all(body.start_urls, "start_urls")
    await ctx.guard.check_scope(body.scope.allow_domains, body.scope.include, body.scope.exclude)
    spec = SourceSpec(
        **body.model_dump(exclude={"scope", "options"}),
        scope=ScopeRules(**body.scope.model_dump()),
        options=SourceOptions(**body.options.model_dump()),
    )
    source = await ctx.job_store.sources.create(spec)
    # Its crawl exists from now on: listed (GET /api/crawls) and browsable, empty, before a run.
    ctx.crawl_ids[source.crawl] = await ctx.sql_store.crawls.ensure_crawl(source.crawl)
    if source.enabled:
        await _source_changed(ctx, source)
        ctx.counts.forget("jobs")
    return await _out(ctx, source)


@router.get("/{source_id}", response_model=SourceOut)
async def get_source(request: Request, source_id: Id, _: User) -> SourceOut:
    ctx = context_of(request)
    return await _out(ctx, await ctx.job_store.sources.get(source_id))


@router.put("/{source_id}", response_model=SourceOut)
async def update_source(request: Request, source_id: Id, body: SourceUpdate, _: Admin) -> SourceOut:
    ctx = context_of(request)
    changes: dict[str, Any] = body.model_dump(exclude_unset=True)
    if changes.get("start_urls") is not None:
        await ctx.guard.check_all(changes["start_urls"], "start_urls")
    if body.scope is not None:
        await ctx.guard.check_scope(
            body.scope.allow_domains, body.scope.include, body.scope.exclude
        )
    # null for a field other than crawl_delay means "leave it"
    changes = {k: v for k, v in changes.items() if v is not None or k == "crawl_delay"}
    before = await ctx.job_store.sources.get(source_id)
    source = await ctx.job_store.sources.update(source_id, changes)
    if source.enabled != before.enabled:
        await _source_changed(ctx, source)
        ctx.counts.forget("jobs")
    return await _out(ctx, source)


@router.delete("/{source_id}", status_code=204)
async def delete_source(request: Request, source_id: Id, _: Admin) -> Response:
    """Delete a source with its jobs and their history; while one of its jobs runs, a 409
    (cancel the job first)."""
    ctx = context_of(request)
    await ctx.job_store.sources.delete(source_id)
    ctx.counts.forget("sources")
    ctx.counts.forget("jobs")
    return Response(status_code=204)
