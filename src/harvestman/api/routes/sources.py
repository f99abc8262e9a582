"""Sources: CRUD. Enabling or disabling a source tells the scheduler at once."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request, Response

from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import Admin, Id, Limit, Offset, User
from harvestman.api.schemas import Page, SourceIn, SourceOut, SourceUpdate
from harvestman.jobs import ScopeRules, SourceSpec

router = APIRouter(prefix="/api/v1/sources", tags=["sources"])


async def _source_changed(ctx: ApiContext, source_id: int) -> None:
    if ctx.scheduler is not None:
        await ctx.scheduler.source_changed(source_id)


@router.get("", response_model=Page[SourceOut])
async def list_sources(
    request: Request,
    _: User,
    enabled: bool | None = None,
    name: str | None = Query(None, max_length=200, description="part of the name"),
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[SourceOut]:
    page = await context_of(request).job_store.sources.list(
        enabled=enabled, name_contains=name, limit=limit, offset=offset
    )
    return Page(
        items=[SourceOut.of(s) for s in page.items], total=page.total, limit=limit, offset=offset
    )


@router.post("", status_code=201, response_model=SourceOut)
async def create_source(request: Request, body: SourceIn, _: Admin) -> SourceOut:
    ctx = context_of(request)
    await ctx.guard.check_all(body.start_urls, "start_urls")
    spec = SourceSpec(
        **body.model_dump(exclude={"scope"}), scope=ScopeRules(**body.scope.model_dump())
    )
    source = await ctx.job_store.sources.create(spec)
    if source.enabled:
        await _source_changed(ctx, source.id)
    return SourceOut.of(source)


@router.get("/{source_id}", response_model=SourceOut)
async def get_source(request: Request, source_id: Id, _: User) -> SourceOut:
    return SourceOut.of(await context_of(request).job_store.sources.get(source_id))


@router.put("/{source_id}", response_model=SourceOut)
async def update_source(request: Request, source_id: Id, body: SourceUpdate, _: Admin) -> SourceOut:
    ctx = context_of(request)
    changes: dict[str, Any] = body.model_dump(exclude_unset=True)
    if changes.get("start_urls") is not None:
        await ctx.guard.check_all(changes["start_urls"], "start_urls")
    # null for a field other than crawl_delay means "leave it"
    changes = {k: v for k, v in changes.items() if v is not None or k == "crawl_delay"}
    before = await ctx.job_store.sources.get(source_id)
    source = await ctx.job_store.sources.update(source_id, changes)
    if source.enabled != before.enabled:
        await _source_changed(ctx, source.id)
    return SourceOut.of(source)


@router.delete("/{source_id}", status_code=204)
async def delete_source(request: Request, source_id: Id, _: Admin) -> Response:
    await context_of(request).job_store.sources.delete(source_id)
    return Response(status_code=204)
