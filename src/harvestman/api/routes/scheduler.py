"""The scheduler: metrics, the distribution of jobs over 15-minute slots, rebalancing."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request

from harvestman.api.context import ApiContext, context_of
from harvestman.api.params import Admin, User
from harvestman.jobs.buckets import RebalancePlan

router = APIRouter(prefix="/api/v1/scheduler", tags=["scheduler"])


async def scheduler_metrics(ctx: ApiContext) -> dict[str, Any]:
    """The scheduler's last aggregated metrics (aggregated now when there are none yet);
    without a scheduler in this process, the job counts and execution summary alone."""
    if ctx.scheduler is not None:
        return ctx.scheduler.metrics() or await ctx.scheduler.refresh_metrics()
    counts = await ctx.job_store.jobs.status_counts()
    return {
        "instance_id": None,
        "jobs": {**counts, "total": sum(counts.values())},
        "executions": await ctx.job_store.executions.summary(),
    }


@router.get("/metrics")
async def get_metrics(request: Request, _: User) -> dict[str, Any]:
    """Jobs by state, executions and success rate, stale locks cleared (every 30 s)."""
    return await scheduler_metrics(context_of(request))


@router.get("/distribution")
async def get_distribution(request: Request, _: User) -> dict[str, Any]:
    """Next runs per 15-minute slot over the next 24 h, the score (0–1) and the peak."""
    dist = await context_of(request).job_store.jobs.distribution()
    values = asdict(dist)
    values["distribution_score"] = values.pop("score")
    values["slots"] = [slot for slot in values["slots"] if slot["count"]]
    return values


def _plan(plan: RebalancePlan, dry_run: bool) -> dict[str, Any]:
    values = asdict(plan)
    values["dry_run"] = dry_run
    values["skipped"] = {str(k): v for k, v in plan.skipped.items()}
    return values


@router.post("/rebalance/preview")
async def preview_rebalance(request: Request, _: Admin) -> dict[str, Any]:
    """The moves a rebalance would make, without making them."""
    return _plan(await context_of(request).job_store.jobs.rebalance(dry_run=True), True)


@router.post("/rebalance")
async def rebalance(request: Request, _: Admin) -> dict[str, Any]:
    """Move jobs out of overloaded slots (never one due within 30 min or moved in the last
    hour)."""
    return _plan(await context_of(request).job_store.jobs.rebalance(dry_run=False), False)
