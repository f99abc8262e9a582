"""The elected scheduler backs the store up on its schedule, verifies and records each backup,
keeps a week of them, and ``GET /metrics`` reports the last success and the failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from apiclient import running_api
from conftest import SettingsFactory
from harvestman.config import Settings
from harvestman.jobs.duties.upkeep import Backups
from harvestman.jobs.scheduler import Scheduler
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.upkeep import StoreUpkeep
from harvestman.store.lifecycle.backups import BackupRun, backup_summary, record_backup
from harvestman.store.lifecycle.schedule import BackupSchedule
from harvestman.store.schema import backups
from storerows import DAY, NOW, add_crawl, add_page, add_url, open_store, table_rows
from support.scheduling import HOUR, Clock, IdleRunner, make_scheduler


def fill(engine: Engine) -> None:
    crawl = add_crawl(engine, "site")
    add_url(engine, crawl, "http://a.test/", "completed", 1)
    add_page(engine, crawl, "http://a.test/", 1)


def file_size(path: str) -> int:
    return Path(path).stat().st_size


async def leading(engine: Engine, schedule: BackupSchedule) -> AsyncIterator[Scheduler]:
    async with JobStore(engine, clock=Clock()) as store:
        scheduler = make_scheduler(store, IdleRunner(), instance_id="here")
        scheduler.duties.append(Backups(scheduler, StoreUpkeep(store), schedule))
        assert await scheduler.leader.acquire()
        yield scheduler


async def test_the_leader_backs_sqlite_up_once_a_day_and_keeps_a_week(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = open_store(url)
    fill(engine)
    schedule = BackupSchedule(url, tmp_path / "backups", interval=DAY, keep=7 * DAY)
    async for scheduler in leading(engine, schedule):
        clock: Clock = scheduler.clock  # type: ignore[assignment]
        first = await scheduler.perform("backup")
        assert first is not None
        assert first.status == "ok"
        assert first.verified
        assert first.path == str(tmp_path / "backups" / "harvestman-20231114T221320Z.db")
        assert first.rows is not None
        assert first.rows >= 3
        clock.now += HOUR
        assert await scheduler.leader.acquire()
        assert await scheduler.perform("backup") is None  # the day's turn is spent
        for _ in range(8):
            clock.now += DAY
            assert await scheduler.leader.acquire()
            assert (await scheduler.perform("backup")) is not None
        kept = sorted(p.name for p in (tmp_path / "backups").iterdir())
        # Taken 0 to 7 days ago (the one of exactly 7 days too); the first one, 8 days old, went.
        assert len(kept) == 8
        assert "harvestman-20231114T221320Z.db" not in kept
        assert scheduler.counters["backup_runs"] == 9
        assert backup_summary(engine).failures == 0
        assert len(table_rows(engine, backups)) == 9
    engine.dispose()


async def test_a_postgresql_backup_is_verified_and_a_failed_one_is_recorded(
    pg_schema_url: str, postgres_url: str, tmp_path: Path
) -> None:
    engine = open_store(pg_schema_url)
    fill(engine)
    good = BackupSchedule(pg_schema_url, tmp_path / "backups", admin_url=postgres_url)
    async for scheduler in leading(engine, good):
        run = await scheduler.perform("backup")
        assert run is not None
        assert (run.status, run.verified, run.error) == ("ok", True, None)
        assert Path(run.path).name == "harvestman-20231114T221320Z.dump"
        assert run.bytes == file_size(run.path)
    (tmp_path / "no-tools").mkdir()
    broken = BackupSchedule(
        pg_schema_url, tmp_path / "backups", pg_bin_dir=str(tmp_path / "no-tools")
    )
    async for scheduler in leading(engine, broken):
        scheduler.clock.now += DAY  # type: ignore[attr-defined]
        assert await scheduler.leader.acquire()
        failed = await scheduler.perform("backup")
        assert failed is not None
        assert failed.status == "failed"
        assert failed.error is not None
        assert failed.error.startswith("ConfigError: pg_dump")
        assert scheduler.counters["backup_failures"] == 1
    assert backup_summary(engine).failures == 1
    assert backup_summary(engine).last_success == run.finished_at
    engine.dispose()


async def test_metrics_report_the_last_good_backup_and_the_failures(
    make_settings: SettingsFactory,
) -> None:
    settings: Settings = make_settings()
    async with running_api(settings, scheduler=True) as api:
        first = await _backup_metrics(api)
        assert first == {"harvestman_backup_last_success_timestamp": 0.0,
                         "harvestman_backup_failures_total": 0.0}  # fmt: skip
        for status, finished in (("ok", NOW), ("failed", NOW + DAY), ("ok", NOW + 2 * DAY),
                                 ("failed", NOW + 3 * DAY)):  # fmt: skip
            record_backup(api.store.engine, BackupRun(finished - 60, finished, status, "f"))
        assert await _backup_metrics(api) == {
            "harvestman_backup_last_success_timestamp": NOW + 2 * DAY,
            "harvestman_backup_failures_total": 2.0,
        }


async def _backup_metrics(api: object) -> dict[str, float]:
    response = await api.get("/metrics")  # type: ignore[attr-defined]
    assert response.status_code == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if sample.name.startswith("harvestman_backup_") and not sample.name.endswith("_created")
    }


@pytest.mark.parametrize(("hours", "expected"), [(None, None), (12.0, 12 * HOUR)])
def test_the_schedule_comes_from_the_backup_settings(
    make_settings: SettingsFactory, hours: float | None, expected: float | None
) -> None:
    schedule = BackupSchedule.from_settings(make_settings(backup_interval_hours=hours))
    assert (None if schedule is None else schedule.interval) == expected
    if schedule is not None:
        assert (schedule.keep, schedule.verify, schedule.directory) == (
            7 * DAY,
            True,
            Path("backups"),
        )
