"""The scheduler's duties: ``jobs.wiring`` lists exactly what the settings turn on, and the
running scheduler keeps each going on its own (SQLite and PostgreSQL): one that raises does not
stop the others or the polls, and an instance that does not lead runs no leader-only one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from harvestman.config import Settings
from harvestman.errors import HarvestmanError
from harvestman.jobs.duties.base import Every
from harvestman.jobs.records import JobSpec, SourceSpec
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.states import JobStatus
from harvestman.jobs.wiring import build_scheduler, worker_scheduler
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from support.scheduling import IdleRunner, make_scheduler

ALWAYS = ["log flush", "progress", "metrics", "source events", "sweep"]


@pytest.fixture
async def unmigrated(tmp_path: Path) -> AsyncIterator[JobStore]:
    """A job store nothing is asked of: the wiring only builds."""
    async with JobStore(f"sqlite:///{tmp_path / 'jobs.db'}") as store:
        yield store


def _names(scheduler: Scheduler) -> list[str]:
    return [duty.name for duty in scheduler.duties]


def test_the_service_lists_its_duties_and_the_retention_unless_turned_off(
    unmigrated: JobStore,
) -> None:
    scheduler = build_scheduler(Settings(), unmigrated, IdleRunner())
    assert _names(scheduler) == [*ALWAYS, "retention"]
    leading = {duty.name for duty in scheduler.duties if duty.leader_only}
    assert leading == {"sweep", "retention"}
    off = build_scheduler(Settings(jobs_retention_interval=None), unmigrated, IdleRunner())
    assert _names(off) == ALWAYS


def test_backups_are_listed_only_when_their_interval_is_set(
    unmigrated: JobStore, tmp_path: Path
) -> None:
    settings = Settings(backup_interval_hours=6, backup_dir=str(tmp_path / "backups"))
    scheduler = build_scheduler(settings, unmigrated, IdleRunner())
    assert _names(scheduler) == [*ALWAYS, "retention", "backup"]
    backup = scheduler.duty("backup")
    assert backup.leader_only
    assert backup.turn.ttl == 6 * 3600  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        build_scheduler(Settings(), unmigrated, IdleRunner()).duty("backup")


def test_every_value_comes_from_the_settings(unmigrated: JobStore) -> None:
    settings = Settings(
        jobs_poll_interval=3,
        jobs_max_concurrent=7,
        jobs_leader_ttl=12,
        jobs_sweep_interval=45,
        jobs_metrics_interval=9,
        jobs_log_flush_interval=2,
        jobs_progress_interval=4,
        jobs_progress_samples=50,
        jobs_source_interval_minutes=90,
        jobs_retention_interval=7200,
    )
    scheduler = build_scheduler(settings, unmigrated, IdleRunner(), instance_id="here")
    intervals = {duty.name: duty.interval for duty in scheduler.duties}
    assert intervals == {
        "log flush": 2,
        "progress": 4,
        "metrics": 9,
        "source events": 3,  # no subscription yet: it tries again every poll interval
        "sweep": 45,
        "retention": 12,  # the turn is looked for every leader TTL; it comes once per 7200 s
    }
    assert scheduler.duty("retention").turn.ttl == 7200  # type: ignore[attr-defined]
    assert (scheduler.config.poll_interval, scheduler.max_concurrent) == (3, 7)
    assert (scheduler.leader.ttl, scheduler.progress.max_samples) == (12, 50)
    assert scheduler.source_job_interval_minutes == 90


def test_a_broker_worker_polls_at_the_renew_interval_claims_nothing_and_has_no_duties(
    unmigrated: JobStore,
) -> None:
    scheduler = worker_scheduler(
        Settings(broker_renew_interval=0.5, jobs_max_concurrent=9), unmigrated, IdleRunner()
    )
    assert (scheduler.config.poll_interval, scheduler.max_concurrent) == (0.5, 0)
    assert scheduler.duties == []


# -- the running scheduler --------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'jobs.db'}"
    else:
        url = request.getfixturevalue("pg_schema_url")
    engine = dialect.make_engine(url)
    migrate.upgrade(engine)
    async with JobStore(engine) as job_store:  # the real clock: the loops really wait
        yield job_store
    engine.dispose()


class Tally:
    """A duty's step that counts its turns and does what it is told (raise, or not)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.turns = 0
        self.error = error
        self.turned = asyncio.Event()

    async def __call__(self) -> int:
        self.turns += 1
        self.turned.set()
        if self.error is not None:
            raise self.error
        return self.turns


async def until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not check():  # noqa: ASYNC110 - the duties' turns offer no single event
            await asyncio.sleep(0.01)


async def test_a_duty_that_raises_does_not_stop_the_others_or_the_polls(
    store: JobStore,
) -> None:
    scheduler = make_scheduler(
        store, IdleRunner(), instance_id="here", jobs_poll_interval=0.02, jobs_leader_ttl=0.3
    )
    bug, outage, healthy = Tally(RuntimeError("a bug")), Tally(HarvestmanError("away")), Tally()
    scheduler.duties += [
        Every("buggy", 0.01, bug),
        Every("failing", 0.01, outage, leader_only=True),
        Every("healthy", 0.01, healthy),
    ]
    source = await store.sources.create(SourceSpec(name="s", start_urls=["http://s.test/"]))
    job = await store.jobs.create(JobSpec(source_id=source.id, url="http://s.test/"))
    service = asyncio.create_task(scheduler.run())
    try:
        await until(lambda: min(bug.turns, outage.turns, healthy.turns) >= 5)
        # The polls went on beside them: the due job ran and was recorded.
        async with asyncio.timeout(20):
            while (await store.jobs.get(job.id)).status is not JobStatus.COMPLETED:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert not service.done()
    finally:
        scheduler.stop()
        await asyncio.wait_for(service, 10)  # stops cleanly: nothing escaped the duties
    assert scheduler.counters["polls"] >= 1
    assert await scheduler.leader.current() is None  # released on the way out


async def test_an_instance_that_does_not_lead_runs_no_leader_only_duty(store: JobStore) -> None:
    leader = make_scheduler(store, IdleRunner(), instance_id="leader")  # a 30 s lease
    assert await leader.leader.acquire()
    follower = make_scheduler(
        store, IdleRunner(), instance_id="follower", jobs_poll_interval=0.02, jobs_leader_ttl=0.3
    )
    everyone, leader_only = Tally(), Tally()
    follower.duties += [
        Every("everyone", 0.01, everyone),
        Every("leader only", 0.01, leader_only, leader_only=True),
    ]
    service = asyncio.create_task(follower.run())
    try:
        # Many times over its own lease's renewal period (0.1 s): it tried to lead, and could not.
        await until(lambda: everyone.turns >= 40)
        assert leader_only.turns == 0
        assert follower.leader.is_leader is False
        assert await follower.perform("leader only") is None
        assert leader_only.turns == 0
        await leader.leader.release()  # the lease is free: the follower takes it and starts
        await asyncio.wait_for(leader_only.turned.wait(), 20)
        assert follower.leader.is_leader
    finally:
        follower.stop()
        await asyncio.wait_for(service, 10)
