"""``serve``'s in-process crawl workers: they crawl what is seeded, stop cleanly with leases
given back, and a worker that fails starts again."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from conftest import SettingsFactory
from harvestman.config import Settings
from harvestman.crawl.workers import CrawlWorkers
from harvestman.records import NewUrl
from harvestman.store import SqlStore
from harvestman.urls import host_key, url_hash
from testsite import TestSite


async def _until(check: Callable[[], Awaitable[bool]], what: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.05)


async def _seed(store: SqlStore, url: str) -> int:
    crawl_id = await store.ensure_crawl("default", [url])
    await store.add_urls(crawl_id, [NewUrl(url, url_hash(url), host_key(url), 0, 3)], time.time())
    return crawl_id


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crawl.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


@pytest.mark.parametrize(
    ("serve_workers", "embedded", "count"),
    [(None, True, 1), (None, False, 0), (3, False, 3), (0, True, 0)],
)
def test_serve_runs_one_worker_on_sqlite_and_none_on_postgres_unless_told(
    tmp_path: Path, serve_workers: int | None, embedded: bool, count: int
) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'crawl.db'}")
    try:
        settings = Settings(serve_workers=serve_workers)
        assert CrawlWorkers.from_settings(settings, store, embedded).count == count
    finally:
        store.dispose()


async def test_workers_crawl_what_is_seeded_and_stop_with_their_leases_given_back(
    make_settings: SettingsFactory, database_url: str
) -> None:
    settings = make_settings(
        database_url=database_url,
        network_allow=["127.0.0.0/8"],
        frontier_refresh_interval=0.1,
        worker_heartbeat_interval=0.2,
    )
    async with SqlStore(database_url) as store, TestSite() as site:
        await store.upgrade()
        workers = CrawlWorkers(settings, store, 2, restart_delay=0.1)
        running = asyncio.create_task(workers.run())
        await _until(lambda: asyncio.sleep(0, len(workers.crawlers) == 2), "both workers start")
        crawl_id = await _seed(store, site.url("/"))

        async def some_pages() -> bool:
            return (await store.counts(crawl_id)).pages >= 5

        await _until(some_pages, "the seeded site's pages are stored")
        registered = {worker_id for worker_id, *_ in await store.workers()}
        assert registered == set(workers.worker_ids)
        workers.stop()
        await asyncio.wait_for(running, 30)
        assert workers.crawlers == []
        assert await store.workers() == []
        assert (await store.counts(crawl_id)).by_status.get("in_progress", 0) == 0


async def test_a_workers_figures_are_published_soon_after_it_starts(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    """Not a heartbeat interval later: a job's short run would end before its first beat."""
    database_url = f"sqlite:///{tmp_path / 'crawl.db'}"
    settings = make_settings(
        database_url=database_url,
        network_allow=["127.0.0.0/8"],
        frontier_refresh_interval=0.1,
        worker_heartbeat_interval=600,
    )
    async with SqlStore(database_url) as store, TestSite() as site:
        await store.upgrade()
        workers = CrawlWorkers(settings, store, 1, restart_delay=0.1)
        running = asyncio.create_task(workers.run())
        await _seed(store, site.url("/"))

        async def reported() -> bool:
            rows = await store.worker_rows()
            return any((row["info"] or {}).get("pages") for row in rows)

        try:
            await _until(reported, "the worker publishes its pages and rate", within=15)
        finally:
            workers.stop()
            await asyncio.wait_for(running, 30)


async def test_a_worker_that_fails_starts_again(
    make_settings: SettingsFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database_url = f"sqlite:///{tmp_path / 'late.db'}"
    settings = make_settings(
        database_url=database_url, network_allow=["127.0.0.0/8"], frontier_refresh_interval=0.1
    )
    caplog.set_level(logging.WARNING, logger="harvestman.crawl.workers")
    async with SqlStore(database_url) as store, TestSite() as site:
        workers = CrawlWorkers(settings, store, 1, restart_delay=0.05)
        running = asyncio.create_task(workers.run())

        async def failed_twice() -> bool:
            return sum("again in 0.05 s" in r.getMessage() for r in caplog.records) >= 2

        await _until(failed_twice, "the worker fails on a store with no tables, twice")
        await store.upgrade()
        crawl_id = await _seed(store, site.url("/"))

        async def crawled() -> bool:
            return (await store.counts(crawl_id)).pages >= 1

        await _until(crawled, "the worker, started again, crawls")
        workers.stop()
        await asyncio.wait_for(running, 30)
    assert not running.exception()
