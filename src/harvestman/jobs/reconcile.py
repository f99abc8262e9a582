"""Reconciliation: every enabled source has its recurring job, no disabled source keeps one.

``sync_enabled_sources`` plans (``dry_run``, the default) or applies: enabled sources with no
recurring job get one (their first start URL, the given interval, in the least-loaded slot);
recurring jobs of disabled sources that can still run are cancelled. A source whose recurring
job rests failed counts as having one (a manual retry revives it, a second job would double
it). Call it with ``source_ids`` when one source is enabled or disabled (the service's event).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Select, select

from harvestman.errors import HarvestmanError
from harvestman.jobs.records import IntervalType, JobSpec
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.tables import jobs, sources

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


def _recurring(source_ids: Collection[int] | None) -> Select[Any]:
    query = select(jobs.c.id, jobs.c.source_id, jobs.c.status).where(
        jobs.c.interval_minutes.is_not(None),
        jobs.c.schedule_enabled.is_(True),
        jobs.c.status.in_([s.value for s in _KEPT]),
    )
    if source_ids is not None:
        query = query.where(jobs.c.source_id.in_(list(source_ids)))
    return query


def _has_recurring(source_id: int) -> Callable[[Connection], bool]:
    def check(conn: Connection) -> bool:
        return conn.execute(_recurring([source_id]).limit(1)).first() is not None

    return check


async def sync_enabled_sources(
    store: JobStore,
    *,
    interval_minutes: int = 360,
    interval_type: IntervalType = IntervalType.MINUTES,
    source_ids: Collection[int] | None = None,
    dry_run: bool = True,
) -> SyncPlan:
    """Plan, and unless ``dry_run`` apply, the reconciliation of ``source_ids`` (all: None)."""

    def _read() -> tuple[dict[int, tuple[bool, str]], list[tuple[int, int, str]]]:
        source_query = select(sources.c.id, sources.c.enabled, sources.c.start_urls)
        job_query = _recurring(source_ids)
        if source_ids is not None:
            source_query = source_query.where(sources.c.id.in_(list(source_ids)))
        with store.read() as conn:
            found = {
                int(row.id): (bool(row.enabled), row.start_urls)
                for row in conn.execute(source_query)
            }
            recurring = [(int(r.id), int(r.source_id), r.status) for r in conn.execute(job_query)]
        return found, recurring

    found, recurring = await store.run(_read)
    plan = SyncPlan(dry_run=dry_run)
    with_job = {source_id for _, source_id, _ in recurring}
    plan.create_for_sources = sorted(
        source_id
        for source_id, (enabled, _) in found.items()
        if enabled and source_id not in with_job
    )
    plan.cancel_jobs = sorted(
        job_id
        for job_id, source_id, status in recurring
        if not found.get(source_id, (True, ""))[0] and JobStatus(status) in _CANCELLABLE
    )
    if dry_run:
        return plan
    for source_id in plan.create_for_sources:
        spec = JobSpec(
            source_id=source_id,
            url=json.loads(found[source_id][1])[0],
            interval_minutes=interval_minutes,
            interval_type=interval_type,
            metadata={"created_by": "sync-enabled-sources"},
        )
        try:
            created = await store.jobs.create_unless(spec, _has_recurring(source_id))
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
