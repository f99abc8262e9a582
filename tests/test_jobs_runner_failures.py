"""A job run whose start URLs all fail is a failed execution, so the job's retries and back-off
apply: the real scheduler and CrawlRunner on SQLite and PostgreSQL, against a closed port on
127.0.0.1 and a local site that answers 503."""

from __future__ import annotations

import doctest
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.jobs import runner as runner_module
from harvestman.jobs.records import ExecutionStatus, JobSpec, SourceSpec
from harvestman.jobs.runner import CrawlRunner
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.states import JobStatus
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from support.scheduling import make_scheduler

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@dataclass
class Service:
    store: JobStore
    scheduler: Scheduler
    clock: Clock


@pytest.fixture(params=["sqlite", "postgresql"])
async def service(
    request: pytest.FixtureRequest, make_settings: SettingsFactory
) -> AsyncIterator[Service]:
    url = (
        make_settings().database_url
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_schema_url"))
    )
    settings = make_settings(database_url=url, discovery_sitemaps=False, fetch_max_retries=1)
    clock = Clock()
    async with SqlStore(url) as crawl_store:
        await crawl_store.upgrade()
        async with JobStore(crawl_store.engine, clock=clock) as store:
            # The crawl keeps real time (politeness); the schedule runs on the test's clock.
            scheduler = make_scheduler(store, CrawlRunner(settings, crawl_store), instance_id="t")
            yield Service(store, scheduler, clock)


def closed_port() -> int:
    """A port on 127.0.0.1 that was just free: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def run_once(service: Service, url: str, **job: object) -> int:
    source = await service.store.sources.create(SourceSpec(name="down", start_urls=[url]))
    spec = {"source_id": source.id, "url": url, "retry_backoff_seconds": 60, **job}
    created = await service.store.jobs.create(JobSpec(**spec))  # type: ignore[arg-type]
    assert [claim.job.id for claim in await service.scheduler.poll()] == [created.id]
    await service.scheduler.wait_idle()
    return created.id


async def test_a_run_whose_start_url_is_refused_fails_and_is_retried_with_back_off(
    service: Service,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/"

    job_id = await run_once(service, url)

    [execution] = (await service.store.executions.list(job_id)).items
    assert execution.status is ExecutionStatus.FAILED
    # Its robots.txt cannot be read either, so the start page is blocked for that reason.
    assert execution.error_message is not None
    assert execution.error_message.startswith(
        f"every start URL failed: {url}: RobotsUnavailable: robots.txt unavailable: "
        "NetworkError: ClientConnectorError: Cannot connect to host"
    )
    assert execution.items_crawled == 1
    job = await service.store.jobs.get(job_id)
    assert (job.status, job.current_retry_count, job.next_run_at) == (
        JobStatus.PENDING,
        1,
        NOW + 60,
    )


async def test_a_start_page_answering_503_after_its_retries_fails_the_run(
    service: Service,
) -> None:
    async def unavailable(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        return web.Response(status=503)

    async with serve(unavailable) as port:
        url = f"http://127.0.0.1:{port}/"
        job_id = await run_once(service, url, max_retries=0)

    [execution] = (await service.store.executions.list(job_id)).items
    assert (execution.status, execution.error_message, execution.items_crawled) == (
        ExecutionStatus.FAILED,
        f"every start URL failed: {url}: HttpStatusError: HTTP 503",
        1,
    )
    job = await service.store.jobs.get(job_id)
    assert (job.status, job.next_run_at) == (JobStatus.FAILED, None)  # no retries left


def test_the_start_failure_examples_hold() -> None:
    assert doctest.testmod(runner_module).failed == 0
