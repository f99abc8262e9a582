"""Reconciliation: every enabled source has its recurring job, no disabled source keeps one.

``sync_enabled_sources`` plans (``dry_run``, the default) or applies: enabled sources with no
recurring job get one (their first start URL, the given interval, in the least-loaded slot);
recurring jobs of disabled sources that can still run are cancelled. A source whose recurring
job rests failed counts as having one (a manual retry revives it, a second job would double
it). Call it with ``source_ids`` when one source is enabled or disabled (the service's event).
The reads and the guarded insert are ``JobStore.recurring``'s.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harvestman.errors import HarvestmanError
from harvestman.jobs.records import IntervalType, JobSpec
from harvestman.jobs.states import JobStatus

if TYPE_CHECKING:
    from harvestman.store.jobs.db import JobStore

# A recurring job in one of these states is the source's job.
_KEPT = (
    JobStatus.PENDING,
    JobStatus.SCHEDULED,
    JobStatus.RUNNING,
    JobStatus.PAUSED,
    JobStatus.FAILED,
)
_CANCELLABLE = (JobStatus.PENDING, JobStatus.SCHEDULED, JobStatus.RUNNING, JobStatus.PAUSED)


@dataclass(slots=True)
class SyncPlan:
    """Sources that get a job, jobs that are cancelled; ``created`` once applied."""

    dry_run: bool
    create_for_sources: list[int] = field(default_factory=list)
    cancel_jobs: list[int] = field(default_factory=list)
    created_jobs: list[int] = field(default_factory=list)
    create_errors: dict[int, str] = field(default_factory=dict)  # source id -> why not
    cancel_errors: dict[int, str] = field(default_factory=dict)  # job id -> why not


async def sync_enabled_sources(
    store: JobStore,
    *,
    interval_minutes: int = 360,
    interval_type: IntervalType = IntervalType.MINUTES,
    source_ids: Collection[int] | None = None,
    dry_run: bool = True,
) -> SyncPlan:
    """Plan, and unless ``dry_run`` apply, the reconciliation of ``source_ids`` (all: None)."""
    found = await store.recurring.snapshot(source_ids, _KEPT)
    plan = SyncPlan(dry_run=dry_run)
    with_job = {job.source_id for job in found.recurring}
    plan.create_for_sources = sorted(
        source_id
        for source_id, enabled in found.enabled.items()
        if enabled and source_id not in with_job
    )
    plan.cancel_jobs = sorted(
        job.job_id
        for job in found.recurring
        if not found.enabled.get(job.source_id, True) and job.status in _CANCELLABLE
    )
    if dry_run:
        return plan
    for source_id in plan.create_for_sources:
        spec = JobSpec(
            source_id=source_id,
            url=found.start_urls[source_id][0],
            interval_minutes=interval_minutes,
            interval_type=interval_type,
            metadata={"created_by": "sync-enabled-sources"},
        )
        try:
            created = await store.recurring.create_unless_present(spec, _KEPT)
        except HarvestmanError as exc:
            plan.create_errors[source_id] = str(exc)
            continue
        if created is not None:
            plan.created_jobs.append(created.id)
    for job_id in plan.cancel_jobs:
        try:
            await store.jobs.cancel(job_id)
        except HarvestmanError as exc:  # it finished or was cancelled meanwhile
            plan.cancel_errors[job_id] = str(exc)
    return plan
