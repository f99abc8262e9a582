"""Jobs: CRUD, the state-machine actions, status counts, per-job stats, reconciliation."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import Admin, Cursor, Id, Limit, Offset, User
from harvestman.api.schemas import JobIn, JobOut, JobUpdate, Page
from harvestman.jobs.errors import BrokerUnavailable
from harvestman.jobs.reconcile import sync_enabled_sources
from harvestman.jobs.records import IntervalType, Job, JobSpec
from harvestman.jobs.states import Action

log = logging.getLogger(__name__)
router = APIRouter(tags=["jobs"])

JobState = Literal["pending", "scheduled", "running", "completed", "failed", "paused", "cancelled"]


async def _adapted(ctx: ApiContext, jobs: Sequence[Job]) -> Mapping[int, float]:
    """The interval adaptive scheduling chose for each adaptive job's source."""
    adaptive = [job.source_id for job in jobs if job.adaptive_scheduling]
    return await ctx.job_store.sources.adapted_intervals(adaptive)


async def _crawls(ctx: ApiContext, jobs: Sequence[Job]) -> Mapping[int, str]:
    """The crawl each job's source crawls into."""
    return await ctx.job_store.sources.crawls([job.source_id for job in jobs])


async def _out(ctx: ApiContext, *jobs: Job) -> list[JobOut]:
    """Jobs as the API shows them, with the interval adaptive scheduling chose for each and
    the crawl they crawl into."""
    adapted, crawls = await _adapted(ctx, jobs), await _crawls(ctx, jobs)
    return [JobOut.of(job, adapted, crawls) for job in jobs]


@router.get("/api/v1/jobs", response_model=Page[JobOut])
async def list_jobs(
    request: Request,
    _: User,
    status: JobState | None = None,
    source_id: int | None = Query(None, ge=1, le=2**53),
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """Jobs in id order, optionally of one status or source (see ``Page``)."""
    ctx = context_of(request)
    repository = ctx.job_store.jobs

    async def fetch(after: int | str | None) -> tuple[list[Any], int | str | None, None]:
        page = await repository.list(
            status=status,
            source_id=source_id,
            after=None if after is None else int(after),
            limit=limit,
            offset=offset,
            with_total=False,
        )
        adapted, crawls = await _adapted(ctx, page.items), await _crawls(ctx, page.items)
        items = [JobOut.item(job, adapted, crawls) for job in page.items]
        return items, page.next_after, None

    page = await paging.paged(
        ctx.counts,
        ("jobs", status, source_id),
        fetch=fetch,
        count=lambda: repository.count(status=status, source_id=source_id),
        cursor=cursor,
        limit=limit,
        offset=offset,
        max_offset=ctx.settings.max_offset,
    )
    return paging.PageResponse(page)


@router.post("/api/v1/jobs", status_code=201, response_model=JobOut)
async def create_job(request: Request, body: JobIn, _: Admin) -> JobOut:
    """Create a job; a ``source_id`` that names no source is a 422."""
    ctx = context_of(request)
    await ctx.guard.check(body.url)
    values = body.model_dump()
    values["interval_type"] = IntervalType(values["interval_type"])
    job = await ctx.job_store.jobs.create(JobSpec(**values))
    ctx.counts.forget("jobs")
    (out,) = await _out(ctx, job)
    return out


@router.get("/api/v1/jobs/status-counts")
async def status_counts(request: Request, _: User) -> dict[str, int]:
    """Jobs per state; every state is present, with ``total``."""
    counts = await context_of(request).job_store.jobs.status_counts()
    return {**counts, "total": sum(counts.values())}


@router.get("/api/v1/jobs/{job_id}", response_model=JobOut)
async def get_job(request: Request, job_id: Id, _: User) -> JobOut:
    ctx = context_of(request)
    (job,) = await _out(ctx, await ctx.job_store.jobs.get(job_id))
    return job


@router.put("/api/v1/jobs/{job_id}", response_model=JobOut)
async def update_job(request: Request, job_id: Id, body: JobUpdate, _: Admin) -> JobOut:
    ctx = context_of(request)
    changes: dict[str, Any] = body.model_dump(exclude_unset=True)
    # null means "leave it", except where null has a meaning of its own
    changes = {
        k: v
        for k, v in changes.items()
        if v is not None or k in ("interval_minutes", "next_run_at")
    }
    if "url" in changes:
        await ctx.guard.check(changes["url"])
    if "interval_type" in changes:
        changes["interval_type"] = IntervalType(changes["interval_type"])
    job = await ctx.job_store.jobs.update(job_id, changes)
    ctx.counts.forget("jobs")
    (out,) = await _out(ctx, job)
    return out


@router.delete("/api/v1/jobs/{job_id}", status_code=204)
async def delete_job(request: Request, job_id: Id, _: Admin) -> Response:
    """Delete a job and its history; a running job is a 409 (cancel it first)."""
    ctx = context_of(request)
    await ctx.job_store.jobs.delete(job_id)
    ctx.counts.forget("jobs")
    return Response(status_code=204)


async def _act(request: Request, job_id: int, action: Action) -> JobOut:
    ctx = context_of(request)
    job = await ctx.job_store.jobs.act(job_id, action)
    if action in (Action.FORCE_RUN, Action.RETRY):
        job = await _dispatch(ctx, job)
    ctx.counts.forget("jobs")  # its status changed: the counts per status did
    (out,) = await _out(ctx, job)
    return out


async def _dispatch(ctx: ApiContext, job: Job) -> Job:
    """With a broker, a job made due by hand is published now rather than at the next poll;
    when the broker is away it stays due and the leader publishes it later."""
    dispatcher = ctx.scheduler.dispatcher if ctx.scheduler is not None else None
    if dispatcher is None:
        return job
    try:
        if await dispatcher.dispatch(job.id) is not None:
            return await ctx.job_store.jobs.get(job.id)
    except BrokerUnavailable as exc:
        log.warning("job %d: not published (%s); the scheduler publishes it later", job.id, exc)
    return job


@router.post("/api/v1/jobs/{job_id}/pause", response_model=JobOut)
async def pause_job(request: Request, job_id: Id, _: Admin) -> JobOut:
    """scheduled → paused; from any other state a 409 with the state and allowed actions."""
    return await _act(request, job_id, Action.PAUSE)


@router.post("/api/v1/jobs/{job_id}/resume", response_model=JobOut)
async def resume_job(request: Request, job_id: Id, _: Admin) -> JobOut:
    """paused → scheduled, in the least-loaded slot."""
    return await _act(request, job_id, Action.RESUME)


@router.post("/api/v1/jobs/{job_id}/cancel", response_model=JobOut)
async def cancel_job(request: Request, job_id: Id, _: Admin) -> JobOut:
    """pending, scheduled, running or paused → cancelled (a run in progress is stopped)."""
    return await _act(request, job_id, Action.CANCEL)


@router.post("/api/v1/jobs/{job_id}/retry", response_model=JobOut)
async def retry_job(request: Request, job_id: Id, _: Admin) -> JobOut:
    """failed → pending, due now, with the retry count reset."""
    return await _act(request, job_id, Action.RETRY)


@router.post("/api/v2/jobs/{job_id}/force-run", response_model=JobOut)
async def force_run_job(request: Request, job_id: Id, _: Admin) -> JobOut:
    """A scheduled job becomes due now, for a run that visits every page its crawl knows
    again (conditional requests: an unchanged page answers 304 without a body), leaves the
    adaptive interval as it is, and is followed by the run that was planned."""
    return await _act(request, job_id, Action.FORCE_RUN)


@router.get("/api/v1/jobs/{job_id}/stats")
async def job_stats(request: Request, job_id: Id, _: User) -> dict[str, Any]:
    """The job's run statistics over its kept history."""
    ctx = context_of(request)
    job = await ctx.job_store.jobs.get(job_id)
    stats = await ctx.job_store.executions.job_stats(job_id)
    return {"job_id": job.id, "status": job.status.value, **stats}


@router.post("/api/v1/admin/sync-enabled-sources")
async def sync_sources(
    request: Request,
    _: Admin,
    dry_run: bool = Query(True, description="preview only (the default)"),
) -> dict[str, Any]:
    """Every enabled source gets its recurring job; no disabled source keeps one."""
    ctx = context_of(request)
    interval = ctx.scheduler.source_job_interval_minutes if ctx.scheduler else 360
    plan = await sync_enabled_sources(ctx.job_store, interval_minutes=interval, dry_run=dry_run)
    return {
        "dry_run": plan.dry_run,
        "create_for_sources": plan.create_for_sources,
        "cancel_jobs": plan.cancel_jobs,
        "created_jobs": plan.created_jobs,
        "create_errors": {str(k): v for k, v in plan.create_errors.items()},
        "cancel_errors": {str(k): v for k, v in plan.cancel_errors.items()},
    }
