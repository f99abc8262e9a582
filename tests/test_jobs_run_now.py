""" "Run now" re-crawls: a forced run asks again for every page its crawl knows, with the stored
ETag (an unchanged page answers 304 without a body), so a product whose price changed is seen
at once whatever its own re-crawl interval; and it leaves the adaptive interval and the plan as
they were. A real shop on 127.0.0.1, a real SQLite store, the scheduler on a test clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from conftest import SettingsFactory
from harvestman.jobs.records import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    JobSpec,
    Source,
    SourceSpec,
)
from harvestman.jobs.runner import CrawlRunner
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.states import Action, JobStatus
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from harvestman.store.products.query import ProductQuery
from support.scheduling import Clock, make_scheduler
from support.shop import Shop, running_shop

MIN = 60.0


@dataclass
class Service:
    store: JobStore
    crawl_store: SqlStore
    scheduler: Scheduler
    clock: Clock

    async def run_due(self) -> list[int]:
        claims = await self.scheduler.poll()
        await self.scheduler.wait_idle()
        return [claim.job.id for claim in claims]

    def prices(self) -> dict[str, list[Decimal]]:
        """Each product's price history, oldest first, by name."""
        found: dict[str, list[Decimal]] = {}
        items, _ = self.crawl_store.list_products(ProductQuery(), limit=50)
        for item in items:
            history = self.crawl_store.product_history(item["id"])
            assert history is not None
            found[item["name"]] = [Decimal(str(row["price"])) for row in history[0]]
        return found


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    async with running_shop() as running:
        yield running


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """Both stores: ``make_known_due`` locks its rows per dialect (``locked_ids``)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_schema_url"))
    return f"sqlite:///{tmp_path / 'crawl.db'}"


@pytest.fixture
async def service(make_settings: SettingsFactory, database_url: str) -> AsyncIterator[Service]:
    settings = make_settings(
        discovery_sitemaps=False, validate_min_bytes=0, database_url=database_url
    )
    clock = Clock()
    async with SqlStore(settings.database_url) as crawl_store:
        await crawl_store.upgrade()
        async with JobStore(crawl_store.engine, clock=clock) as store:
            # The crawl keeps real time (politeness); the schedule runs on the test's clock.
            scheduler = make_scheduler(store, CrawlRunner(settings, crawl_store), instance_id="t")
            yield Service(store, crawl_store, scheduler, clock)


async def _planned_run(service: Service, job_id: int) -> None:
    job = await service.store.jobs.get(job_id)
    assert job.next_run_at is not None
    service.clock.now = job.next_run_at
    assert await service.run_due() == [job_id]


async def test_run_now_finds_a_changed_price_and_leaves_the_schedule(
    service: Service, shop: Shop
) -> None:
    source = await service.store.sources.create(SourceSpec(name="Shop", start_urls=[shop.url]))
    job = await service.store.jobs.create(
        JobSpec(source_id=source.id, url=shop.url, interval_minutes=30)
    )
    await _planned_run(service, job.id)  # everything is new
    await _planned_run(service, job.id)  # the index answers 304: unchanged once
    before = await service.store.sources.adaptive_state(source.id)
    assert (before.unchanged_count, before.current_interval) == (1, 60 * MIN)
    planned = (await service.store.jobs.get(job.id)).next_run_at
    assert planned is not None
    assert service.prices()["Steel Kettle"] == [Decimal("19.9")]
    assert shop.bodies["/p/kettle"] == 1  # the second run left the products to their interval

    shop.prices["kettle"] = "17.50"
    service.clock.now = planned - 45 * MIN  # well before the planned run
    forced = await service.store.jobs.act(job.id, Action.FORCE_RUN)
    assert forced.forced_planned_at == planned
    assert await service.run_due() == [job.id]

    assert service.prices()["Steel Kettle"] == [Decimal("19.9"), Decimal("17.5")]
    assert service.prices()["Steel Toaster"] == [Decimal("34.5")]
    # Every known page was asked for again; the unchanged ones answered 304 (no body).
    assert {path: shop.hits[path] for path in ("/", "/p/kettle", "/p/toaster", "/p/mixer")} == {
        "/": 3,
        "/p/kettle": 2,
        "/p/toaster": 2,
        "/p/mixer": 2,
    }
    assert (shop.bodies["/"], shop.bodies["/p/kettle"], shop.bodies["/p/toaster"]) == (1, 2, 1)
    # The adaptive interval and the plan are as they were.
    after = await service.store.sources.adaptive_state(source.id)
    assert (after.unchanged_count, after.current_interval) == (1, 60 * MIN)
    rested = await service.store.jobs.get(job.id)
    assert (rested.status, rested.next_run_at, rested.forced_planned_at) == (
        JobStatus.SCHEDULED,
        planned,
        None,
    )
    (latest, *_) = (await service.store.executions.list(job.id)).items
    assert (latest.metadata["forced"], latest.metadata["forced_planned_at"]) == (True, planned)

    # The planned run that follows is an ordinary one: products wait for their interval.
    await _planned_run(service, job.id)
    assert shop.hits["/p/kettle"] == 2
    state = await service.store.sources.adaptive_state(source.id)
    assert state.unchanged_count == 2


async def test_run_now_asks_again_for_the_pages_that_failed(service: Service, shop: Shop) -> None:
    """The mixer's page answered 503 through its retries in the planned run: a dead letter. The
    site is back; "Run now" asks for it again, as for every page the crawl knows."""
    source = await service.store.sources.create(SourceSpec(name="Shop", start_urls=[shop.url]))
    job = await service.store.jobs.create(
        JobSpec(source_id=source.id, url=shop.url, interval_minutes=30)
    )
    shop.down.add("/p/mixer")
    await _planned_run(service, job.id)
    dead, _ = service.crawl_store.dead_letters(None)
    assert [row["url"] for row in dead] == [shop.product_url("mixer")]
    assert "Steel Mixer" not in service.prices()
    hits_before = shop.hits["/p/mixer"]

    shop.down.clear()
    await service.store.jobs.act(job.id, Action.FORCE_RUN)
    assert await service.run_due() == [job.id]

    assert shop.hits["/p/mixer"] == hits_before + 1
    assert service.prices()["Steel Mixer"] == [Decimal("89")]
    assert service.crawl_store.dead_letters(None) == ([], 0)


async def test_run_now_after_the_planned_time_keeps_the_phase(service: Service) -> None:
    source = await service.store.sources.create(
        SourceSpec(name="Away", start_urls=["http://127.0.0.1:9/"])
    )
    job = await service.store.jobs.create(
        JobSpec(source_id=source.id, url="http://127.0.0.1:9/", interval_minutes=30)
    )
    planned = job.next_run_at
    assert planned is not None
    service.clock.now = planned - 10 * MIN
    await service.store.jobs.act(job.id, Action.FORCE_RUN)
    twice = await service.store.jobs.act(job.id, Action.FORCE_RUN)
    assert twice.forced_planned_at == planned  # asked twice: still the run it replaced


class SeeingRunner:
    """Ends each run at once, keeping what the store says of the execution while it runs."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.seen: list[dict[str, Any]] = []

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        self.seen.append((await self.store.executions.get(execution.id)).metadata)
        return ExecutionResult(status=ExecutionStatus.COMPLETED)


async def test_a_forced_run_says_so_while_it_runs(tmp_path: Any) -> None:
    clock = Clock()
    async with SqlStore(f"sqlite:///{tmp_path / 'jobs.db'}") as crawl_store:
        await crawl_store.upgrade()
        async with JobStore(crawl_store.engine, clock=clock) as store:
            runner = SeeingRunner(store)
            scheduler = make_scheduler(store, runner, instance_id="t")
            source = await store.sources.create(
                SourceSpec(name="s", start_urls=["http://127.0.0.1:9/"])
            )
            job = await store.jobs.create(
                JobSpec(source_id=source.id, url="http://127.0.0.1:9/", interval_minutes=30)
            )
            assert job.next_run_at is not None
            clock.now = job.next_run_at
            await scheduler.poll()  # a planned run
            await scheduler.wait_idle()
            planned = (await store.jobs.get(job.id)).next_run_at
            await store.jobs.act(job.id, Action.FORCE_RUN)
            await scheduler.poll()
            await scheduler.wait_idle()
    assert runner.seen == [{}, {"forced": True, "forced_planned_at": planned}]
