"""Sources and jobs in the store: fields, defaults, checks, lists; the migration matches."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from harvestman.jobs.errors import InvalidSpec, NameTaken, NotFound, UnknownSource
from harvestman.jobs.lifecycle import after_success
from harvestman.jobs.records import (
    ExecutionResult,
    ExecutionStatus,
    IntervalType,
    JobSpec,
    ScopeRules,
    SourceSpec,
)
from harvestman.jobs.states import JobStatus
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.schema import metadata
from harvestman.store.search.index import include_name

NOW = 1_800_000_000.0  # the start of a 15-minute slot

JOB_TABLES = {
    "sources",
    "jobs",
    "job_executions",
    "execution_logs",
    "source_adaptive_state",
    "scheduler_leases",
}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine, clock=clock) as job_store:
        yield job_store
    engine.dispose()


def _assert_migrated_schema_matches_models(url: str) -> None:
    engine = dialect.make_engine(url)
    try:
        migrate.upgrade(engine)
        assert set(inspect(engine).get_table_names()) >= JOB_TABLES
        with engine.connect() as conn:
            assert (
                compare_metadata(
                    MigrationContext.configure(conn, opts={"include_name": include_name}), metadata
                )
                == []
            )
        migrate.downgrade(engine, "0003")
        assert not JOB_TABLES & set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_the_sqlite_migration_creates_exactly_the_models(tmp_path: Path) -> None:
    _assert_migrated_schema_matches_models(f"sqlite:///{tmp_path / 'm.db'}")


def test_the_postgres_migration_creates_exactly_the_models(pg_schema_url: str) -> None:
    _assert_migrated_schema_matches_models(pg_schema_url)


# -- sources -----------------------------------------------------------------------------------


async def test_a_source_keeps_its_fields_and_normalizes_its_start_urls(store: JobStore) -> None:
    created = await store.sources.create(
        SourceSpec(
            name=" news ",
            start_urls=["HTTP://News.Test/a?utm_source=x", "http://news.test/a"],
            max_depth=2,
            scope=ScopeRules(allow_domains=["news.test"], exclude=[r"/tag/"]),
            crawl_delay=2.5,
            max_pages=50,
            enabled=False,
        )
    )
    fetched = await store.sources.get(created.id)
    assert fetched == created
    assert (fetched.name, fetched.start_urls) == ("news", ["http://news.test/a"])
    assert fetched.scope == ScopeRules(allow_domains=["news.test"], exclude=[r"/tag/"])
    assert (fetched.max_depth, fetched.effective_max_depth) == (2, 2)
    assert (fetched.crawl_delay, fetched.max_pages, fetched.enabled) == (2.5, 50, False)


@pytest.mark.parametrize(
    ("max_depth", "effective", "warned"), [(0, 3, False), (5, 5, False), (6, 6, True)]
)
async def test_max_depth_zero_means_three_and_above_five_warns(
    store: JobStore, caplog: pytest.LogCaptureFixture, max_depth: int, effective: int, warned: bool
) -> None:
    caplog.set_level(logging.WARNING, "harvestman")
    source = await store.sources.create(
        SourceSpec(name="deep", start_urls=["http://a.test/"], max_depth=max_depth)
    )
    assert source.effective_max_depth == effective
    assert ("max depth 6 is above 5" in caplog.text) is warned


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": ""}, "name"),
        ({"start_urls": []}, "start_urls"),
        ({"start_urls": ["ftp://a.test/"]}, "start_urls"),
        ({"start_urls": ["not a url"]}, "start_urls"),
        ({"max_depth": -1}, "max_depth"),
        ({"crawl_delay": -1.0}, "crawl_delay"),
        ({"max_pages": -5}, "max_pages"),
        ({"scope": ScopeRules(include=["("])}, "scope.include"),
    ],
)
async def test_invalid_sources_are_refused_with_the_field(
    store: JobStore, fields: dict[str, object], field: str
) -> None:
    values: dict[str, object] = {"name": "s", "start_urls": ["http://a.test/"], **fields}
    with pytest.raises(InvalidSpec) as refused:
        await store.sources.create(SourceSpec(**values))  # type: ignore[arg-type]
    assert refused.value.field == field
    assert (await store.sources.list()).total == 0


async def test_source_names_are_unique(store: JobStore) -> None:
    first = await store.sources.create(SourceSpec(name="a", start_urls=["http://a.test/"]))
    second = await store.sources.create(SourceSpec(name="b", start_urls=["http://b.test/"]))
    with pytest.raises(NameTaken):
        await store.sources.create(SourceSpec(name="a", start_urls=["http://c.test/"]))
    with pytest.raises(NameTaken):
        await store.sources.update(second.id, {"name": "a"})
    assert (await store.sources.get(first.id)).start_urls == ["http://a.test/"]


async def test_sources_update_partially_and_list_with_filters(
    store: JobStore, clock: Clock
) -> None:
    for i in range(5):
        await store.sources.create(
            SourceSpec(name=f"site-{i}", start_urls=[f"http://{i}.test/"], enabled=i % 2 == 0)
        )
    clock.now += 10
    updated = await store.sources.update(2, {"scope": {"include": ["/news/"]}, "max_pages": 9})
    assert (updated.scope, updated.max_pages, updated.updated_at) == (
        ScopeRules(include=["/news/"]),
        9,
        NOW + 10,
    )
    assert await store.sources.get(2) == updated
    enabled = await store.sources.list(enabled=True, limit=2, offset=1)
    assert ([s.name for s in enabled.items], enabled.total) == (["site-2", "site-4"], 3)
    assert [s.id for s in (await store.sources.list(name_contains="E-3")).items] == [4]
    with pytest.raises(InvalidSpec):
        await store.sources.update(2, {"colour": "red"})
    with pytest.raises(NotFound):
        await store.sources.update(99, {"max_pages": 1})


# -- jobs --------------------------------------------------------------------------------------


async def _source(store: JobStore, name: str = "s") -> int:
    return (await store.sources.create(SourceSpec(name=name, start_urls=["http://a.test/"]))).id


async def test_a_job_for_an_unknown_source_is_refused_at_once(store: JobStore) -> None:
    with pytest.raises(UnknownSource) as refused:
        await store.jobs.create(JobSpec(source_id=42, url="http://a.test/"))
    assert (refused.value.field, refused.value.source_id) == ("source_id", 42)
    source_id = await _source(store)
    job = await store.jobs.create(JobSpec(source_id=source_id, url="http://a.test/"))
    with pytest.raises(UnknownSource):
        await store.jobs.update(job.id, {"source_id": 43})
    assert (await store.jobs.list()).total == 1


async def test_a_job_has_the_documented_defaults(store: JobStore) -> None:
    job = await store.jobs.create(JobSpec(source_id=await _source(store), url="http://a.test/x"))
    assert job.status is JobStatus.SCHEDULED
    assert (job.interval_minutes, job.interval_type, job.schedule_enabled) == (
        None,
        IntervalType.MINUTES,
        True,
    )
    assert (job.adaptive_scheduling, job.max_retries, job.retry_backoff_seconds) == (True, 3, 60)
    assert (job.current_retry_count, job.lock_token, job.metadata) == (0, None, {})
    assert job.is_recurring is False
    assert job.next_run_at == NOW  # a one-time job runs at once


@pytest.mark.parametrize(
    ("interval_minutes", "interval_type", "seconds"),
    [
        (360, "minutes", 21600.0),
        (6, "hours", 21600.0),
        (2, "days", 172800.0),
        (None, "hours", None),
    ],
)
async def test_intervals_count_units_of_their_type(
    store: JobStore, interval_minutes: int | None, interval_type: str, seconds: float | None
) -> None:
    job = await store.jobs.create(
        JobSpec(
            source_id=await _source(store),
            url="http://a.test/",
            interval_minutes=interval_minutes,
            interval_type=IntervalType(interval_type),
        )
    )
    assert job.interval_seconds == seconds


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"url": "mailto:x@a.test"}, "url"),
        ({"interval_minutes": 0}, "interval_minutes"),
        ({"interval_type": "weeks"}, "interval_type"),
        ({"max_retries": -1}, "max_retries"),
        ({"retry_backoff_seconds": -1}, "retry_backoff_seconds"),
        ({"metadata": {"x": object()}}, "metadata"),
        ({"source_id": 0}, "source_id"),
    ],
)
async def test_invalid_jobs_are_refused_with_the_field(
    store: JobStore, fields: dict[str, object], field: str
) -> None:
    values: dict[str, object] = {
        "source_id": await _source(store),
        "url": "http://a.test/",
        **fields,
    }
    with pytest.raises(InvalidSpec) as refused:
        await store.jobs.create(JobSpec(**values))  # type: ignore[arg-type]
    assert refused.value.field == field


async def test_a_given_next_run_is_kept_and_metadata_round_trips(store: JobStore) -> None:
    job = await store.jobs.create(
        JobSpec(
            source_id=await _source(store),
            url="http://a.test/",
            interval_minutes=30,
            next_run_at=NOW + 5000,
            metadata={"team": "news", "tags": ["a", "b"]},
        )
    )
    stored = await store.jobs.get(job.id)
    assert (stored.next_run_at, stored.metadata) == (
        NOW + 5000,
        {"team": "news", "tags": ["a", "b"]},
    )


async def test_jobs_list_filters_and_pages(store: JobStore) -> None:
    one, two = await _source(store, "one"), await _source(store, "two")
    for i in range(6):
        await store.jobs.create(
            JobSpec(source_id=one if i < 4 else two, url=f"http://a.test/{i}", interval_minutes=60)
        )
    await store.jobs.pause(2)
    page = await store.jobs.list(source_id=one, limit=2, offset=1)
    assert ([j.id for j in page.items], page.total, page.limit, page.offset) == ([2, 3], 4, 2, 1)
    assert [j.id for j in (await store.jobs.list(status="paused")).items] == [2]
    assert (await store.jobs.status_counts()) == {
        "pending": 0,
        "scheduled": 5,
        "running": 0,
        "completed": 0,
        "failed": 0,
        "paused": 1,
        "cancelled": 0,
    }


async def test_changing_a_scheduled_jobs_interval_places_it_again(
    store: JobStore, clock: Clock
) -> None:
    source_id = await _source(store)
    job = await store.jobs.create(
        JobSpec(source_id=source_id, url="http://a.test/", interval_minutes=1, interval_type="days")
    )
    assert job.next_run_at == NOW
    hourly = [
        await store.jobs.create(JobSpec(source_id=source_id, url=url, interval_minutes=60))
        for url in ("http://b.test/", "http://c.test/")
    ]
    assert [j.next_run_at for j in hourly] == [NOW + 900, NOW + 1800]
    await store.jobs.create(JobSpec(source_id=source_id, url="http://d.test/"))  # runs now
    clock.now += 60
    changed = await store.jobs.update(job.id, {"interval_minutes": 2})
    # Slots 0-2 hold the one-time job and the hourly ones; the job itself does not count.
    assert (changed.interval_minutes, changed.next_run_at, changed.last_moved_at) == (
        2,
        NOW + 2700,
        NOW + 60,
    )
    renamed = await store.jobs.update(job.id, {"url": "http://c.test/", "next_run_at": NOW + 9})
    assert (renamed.url, renamed.next_run_at) == ("http://c.test/", NOW + 9)


async def test_deleting_a_source_deletes_its_jobs_and_their_history(store: JobStore) -> None:
    source_id = await _source(store)
    job = await store.jobs.create(JobSpec(source_id=source_id, url="http://a.test/"))
    [claim] = await store.locks.claim_due("me", 5)
    done = ExecutionResult(status=ExecutionStatus.COMPLETED)
    await store.locks.finish(claim, done, after_success(claim.job, None, NOW))
    assert (await store.executions.list(job.id)).total == 1
    await store.sources.delete(source_id)
    with pytest.raises(NotFound):
        await store.jobs.get(job.id)
    with pytest.raises(NotFound):
        await store.executions.get(claim.execution.id)
    with pytest.raises(NotFound):
        await store.sources.delete(source_id)
