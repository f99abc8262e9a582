"""Reconciliation: enabled sources get their recurring job, disabled ones lose it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import update

from harvestman.jobs.reconcile import sync_enabled_sources
from harvestman.jobs.records import IntervalType, JobSpec, SourceSpec
from harvestman.jobs.states import JobStatus
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.tables import jobs
from support.scheduling import make_scheduler

NOW = 1_800_000_000.0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine, clock=lambda: NOW) as job_store:
        yield job_store
    engine.dispose()


async def test_sync_previews_then_creates_and_cancels(store: JobStore) -> None:
    def source(name: str, enabled: bool) -> SourceSpec:
        return SourceSpec(name=name, start_urls=[f"http://{name}.test/"], enabled=enabled)

    bare = await store.sources.create(source("bare", True))
    served = await store.sources.create(source("served", True))
    broken = await store.sources.create(source("broken", True))
    off = await store.sources.create(source("off", False))
    recurring = {"interval_minutes": 60, "url": "http://x.test/"}
    await store.jobs.create(JobSpec(source_id=served.id, **recurring))  # type: ignore[arg-type]
    failed = await store.jobs.create(JobSpec(source_id=broken.id, **recurring))  # type: ignore[arg-type]
    with store.engine.begin() as conn:
        conn.execute(update(jobs).where(jobs.c.id == failed.id).values(status="failed"))
    leftover = await store.jobs.create(JobSpec(source_id=off.id, **recurring))  # type: ignore[arg-type]
    once = await store.jobs.create(JobSpec(source_id=off.id, url="http://off.test/"))

    preview = await sync_enabled_sources(store)
    assert (preview.create_for_sources, preview.cancel_jobs) == ([bare.id], [leftover.id])
    assert (await store.jobs.list()).total == 4  # a preview changes nothing

    applied = await sync_enabled_sources(
        store, interval_minutes=2, interval_type=IntervalType.HOURS, dry_run=False
    )
    [created_id] = applied.created_jobs
    created = await store.jobs.get(created_id)
    assert (created.source_id, created.url, created.interval_seconds) == (
        bare.id,
        "http://bare.test/",
        7200.0,
    )
    assert created.metadata == {"created_by": "sync-enabled-sources"}
    assert (await store.jobs.get(leftover.id)).status is JobStatus.CANCELLED
    assert (await store.jobs.get(once.id)).status is JobStatus.SCHEDULED  # not recurring
    again = await sync_enabled_sources(store)
    assert (again.create_for_sources, again.cancel_jobs) == ([], [])


async def test_toggling_one_source_reconciles_it_at_once(store: JobStore) -> None:
    scheduler = make_scheduler(store, None, jobs_source_interval_minutes=30)  # type: ignore[arg-type]
    source = await store.sources.create(SourceSpec(name="s", start_urls=["http://s.test/"]))
    other = await store.sources.create(SourceSpec(name="o", start_urls=["http://o.test/"]))
    plan = await scheduler.source_changed(source.id)
    [job_id] = plan.created_jobs
    assert (await store.jobs.get(job_id)).interval_minutes == 30
    assert (await store.jobs.list(source_id=other.id)).total == 0  # left alone
    await store.sources.update(source.id, {"enabled": False})
    assert (await scheduler.source_changed(source.id)).cancel_jobs == [job_id]
    assert (await store.jobs.get(job_id)).status is JobStatus.CANCELLED
