"""The elected scheduler runs the data retention once a day, on a controllable clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from harvestman.jobs.duties.upkeep import Retention
from harvestman.jobs.scheduler import Scheduler
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.upkeep import StoreUpkeep
from harvestman.store.lifecycle.retention import RetentionRules
from harvestman.store.schema import urls
from storerows import DAY, add_crawl, add_url, open_store, table_rows
from support.scheduling import HOUR, Clock, IdleRunner, make_scheduler

RULES = RetentionRules(
    completed_after=7 * DAY,
    failed_after=None,
    pages_after=None,
    errors_after=None,
    stats_minutes_after=None,
    compact=False,
)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return open_store(f"sqlite:///{tmp_path / 'store.db'}")


@pytest.fixture
async def store(engine: Engine) -> AsyncIterator[JobStore]:
    clock = Clock()
    async with JobStore(engine, clock=clock) as job_store:
        yield job_store
    engine.dispose()


def retaining(store: JobStore, instance_id: str, rules: RetentionRules) -> Scheduler:
    """The service's scheduler with the retention duty of ``rules`` (its turn: a day)."""
    scheduler = make_scheduler(store, IdleRunner(), instance_id=instance_id)
    scheduler.duties.append(Retention(scheduler, StoreUpkeep(store), rules, every=DAY))
    return scheduler


def _urls_left(engine: Engine) -> list[str]:
    return [row[0] for row in table_rows(engine, urls, "url")]


async def test_the_leader_runs_the_retention_once_a_day_and_a_new_leader_keeps_the_turn(
    engine: Engine, store: JobStore
) -> None:
    clock: Clock = store.clock  # type: ignore[assignment]
    crawl = add_crawl(engine, "default")
    for age in (10.0, 6.5, 1.0):
        add_url(engine, crawl, f"http://a.test/{age}", "completed", age)
    first = retaining(store, "first", RULES)
    second = retaining(store, "second", RULES)

    assert await first.perform("retention") is None  # not the leader yet
    assert await first.leader.acquire()
    report = await first.perform("retention")
    assert report is not None
    assert report.completed_deleted == 1
    assert _urls_left(engine) == ["http://a.test/6.5", "http://a.test/1.0"]

    clock.now += HOUR  # the leader renews, but the day's turn is spent
    assert await first.leader.acquire()
    assert await first.perform("retention") is None
    assert await second.perform("retention") is None  # not the leader

    clock.now += DAY  # the first instance died: its lease ran out long ago
    assert await second.leader.acquire()
    assert await first.perform("retention") is None  # no longer leads
    report = await second.perform("retention")
    assert report is not None
    assert report.completed_deleted == 1  # 6.5 days old then, 7.5 now
    assert _urls_left(engine) == ["http://a.test/1.0"]
    assert (first.counters["retention_runs"], second.counters["retention_runs"]) == (1, 1)


async def test_a_retention_that_fails_is_logged_and_the_scheduler_goes_on(
    engine: Engine, store: JobStore, tmp_path: Path
) -> None:
    export_dir = tmp_path / "exports"
    export_dir.write_text("a file where the export directory should be")
    rules = RetentionRules(failed_after=DAY, pages_after=None, export_dir=export_dir)
    crawl = add_crawl(engine, "default")
    add_url(engine, crawl, "http://a.test/failed", "failed", 3.0)
    scheduler = retaining(store, "here", rules)
    assert await scheduler.leader.acquire()
    assert await scheduler.perform("retention") is None
    assert scheduler.counters["retention_runs"] == 0
    assert _urls_left(engine) == ["http://a.test/failed"]  # nothing deleted unexported
