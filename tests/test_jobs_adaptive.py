"""Adaptive re-crawl: the interval follows whether the start pages change, against a real site
crawled by the real Crawler through the CrawlRunner."""

from __future__ import annotations

import doctest
import logging
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import web

from conftest import SettingsFactory
from harvestman.jobs.adaptive import AdaptiveState, adaptive_interval, observe
from harvestman.jobs.records import ExecutionStatus, JobSpec, SourceSpec
from harvestman.jobs.runner import CrawlRunner, namespace, source_settings
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.states import JobStatus
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from support.scheduling import make_scheduler

NOW = 1_800_000_000.0
MIN = 60.0
HOUR = 3600.0
H1, H2 = "1" * 64, "2" * 64


def test_the_interval_doubles_while_unchanged_up_to_a_day() -> None:
    intervals = [adaptive_interval(30 * MIN, n) / HOUR for n in range(9)]
    assert intervals == [0.5, 1, 2, 4, 8, 16, 24, 24, 24]
    assert adaptive_interval(2 * 86400, 3) == 2 * 86400  # never below the baseline


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        # (hashes seen by each run) -> (unchanged count, interval in minutes) after each run
        ([{"u": H1}, {"u": H1}, {"u": H1}], [(0, 30), (1, 60), (2, 120)]),
        ([{"u": H1}, {"u": H1}, {"u": H2}], [(0, 30), (1, 60), (0, 30)]),
        ([{"u": H1}, {"u": H1}, {"u": None}, {"u": H1}], [(0, 30), (1, 60), (1, 60), (2, 120)]),
        ([{"u": None}], [(0, 30)]),
        # two start URLs: one changing is a change; one not fetched compares the other
        ([{"a": H1, "b": H1}, {"a": H1, "b": H2}], [(0, 30), (0, 30)]),
        ([{"a": H1, "b": H1}, {"a": H1, "b": None}], [(0, 30), (1, 60)]),
    ],
)
def test_observations_move_the_interval(
    seen: list[dict[str, str | None]], expected: list[tuple[int, int]]
) -> None:
    state = AdaptiveState(source_id=1)
    got = []
    for i, fetched in enumerate(seen):
        state = observe(state, fetched, 30 * MIN, NOW + i)
        got.append((state.unchanged_count, round((state.current_interval or 0) / MIN)))
    assert got == expected


def test_the_last_change_is_when_a_hash_last_differed() -> None:
    state = observe(AdaptiveState(source_id=1), {"u": H1}, 1800, NOW)
    state = observe(state, {"u": H1}, 1800, NOW + 10)
    assert (state.last_change_at, state.url_hashes) == (NOW, {"u": H1})
    state = observe(state, {"u": H2}, 1800, NOW + 20)
    assert (state.last_change_at, state.url_hashes) == (NOW + 20, {"u": H2})
    assert state.last_hash is not None
    assert len(state.last_hash) == 64


# -- a real site whose start page changes ------------------------------------------------------


@dataclass
class ChangingSite:
    """``/`` says ``text`` and links to ``/a``; ``down`` answers 503; ``etag`` turns on
    conditional requests."""

    text: str = "first edition"
    down: bool = False
    etag: bool = False
    base: str = ""

    def __post_init__(self) -> None:
        self.hits: Counter[tuple[str, int]] = Counter()

    async def start(self, request: web.Request) -> web.Response:
        if self.down:
            return self._count(request, web.Response(status=503))
        tag = f'"{abs(hash(self.text))}"'
        if self.etag and request.headers.get("If-None-Match") == tag:
            return self._count(request, web.Response(status=304))
        body = f"<html><head><title>News</title></head><body><p>{self.text}</p>"
        body += '<a href="/a">more</a></body></html>'
        response = web.Response(text=body, content_type="text/html")
        if self.etag:
            response.headers["ETag"] = tag
        return self._count(request, response)

    async def article(self, request: web.Request) -> web.Response:
        body = "<html><body><p>An article that never changes.</p></body></html>"
        return self._count(request, web.Response(text=body, content_type="text/html"))

    def _count(self, request: web.Request, response: web.Response) -> web.Response:
        self.hits[(request.path, response.status)] += 1
        return response


@pytest.fixture
async def site() -> AsyncIterator[ChangingSite]:
    changing = ChangingSite()
    app = web.Application()
    app.router.add_get("/", changing.start)
    app.router.add_get("/a", changing.article)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    changing.base = f"http://127.0.0.1:{port}"
    yield changing
    await runner.cleanup()


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

    async def run_due(self) -> list[int]:
        claims = await self.scheduler.poll()
        await self.scheduler.wait_idle()
        return [claim.job.id for claim in claims]


@pytest.fixture
async def service(make_settings: SettingsFactory) -> AsyncIterator[Service]:
    settings = make_settings(discovery_sitemaps=False, validate_min_bytes=0)
    clock = Clock()
    async with SqlStore(settings.database_url) as crawl_store:
        await crawl_store.upgrade()
        async with JobStore(crawl_store.engine, clock=clock) as store:
            # The crawl keeps real time (politeness); the schedule runs on the test's clock.
            scheduler = make_scheduler(store, CrawlRunner(settings, crawl_store), instance_id="t")
            yield Service(store, scheduler, clock)


async def _source_and_job(service: Service, site: ChangingSite, **job: object) -> int:
    pages = int(job.pop("pages", 0))  # type: ignore[call-overload]
    source = await service.store.sources.create(
        SourceSpec(name="news", start_urls=[f"{site.base}/"], max_pages=pages)
    )
    spec = {"source_id": source.id, "url": f"{site.base}/", "interval_minutes": 30, **job}
    created = await service.store.jobs.create(JobSpec(**spec))  # type: ignore[arg-type]
    return created.id


async def _run_and_interval(service: Service, job_id: int) -> float:
    """Run the job at its next run time; return the interval until the one after."""
    job = await service.store.jobs.get(job_id)
    assert job.next_run_at is not None
    service.clock.now = job.next_run_at
    assert await service.run_due() == [job_id]
    after = await service.store.jobs.get(job_id)
    assert after.status is JobStatus.SCHEDULED, after.last_error
    assert after.next_run_at is not None
    return (after.next_run_at - job.next_run_at) / MIN


async def test_the_interval_grows_while_the_start_page_stays_and_resets_when_it_changes(
    service: Service, site: ChangingSite
) -> None:
    job_id = await _source_and_job(service, site)
    intervals = [await _run_and_interval(service, job_id) for _ in range(3)]
    site.down = True
    # Not fetched: the run fails and is retried after the job's back-off, observing nothing.
    planned = (await service.store.jobs.get(job_id)).next_run_at
    assert planned is not None
    service.clock.now = planned
    assert await service.run_due() == [job_id]
    retried = await service.store.jobs.get(job_id)
    assert (retried.status, retried.next_run_at) == (JobStatus.PENDING, planned + 60)
    site.down = False
    intervals.append(await _run_and_interval(service, job_id))
    site.text = "second edition"
    intervals.append(await _run_and_interval(service, job_id))
    assert intervals == [30, 60, 120, 240, 30]
    # Every run fetched the start page again; the article only once (its visited TTL).
    assert (site.hits[("/", 200)], site.hits[("/", 503)], site.hits[("/a", 200)]) == (5, 4, 1)

    state = await service.store.sources.adaptive_state(1)
    assert (state.unchanged_count, state.current_interval) == (0, 30 * MIN)
    assert state.last_change_at == service.clock.now
    assert list(state.url_hashes) == [f"{site.base}/"]

    history = (await service.store.executions.list(job_id)).items
    assert [e.status for e in reversed(history)] == [
        *[ExecutionStatus.COMPLETED] * 3,
        ExecutionStatus.FAILED,
        *[ExecutionStatus.COMPLETED] * 2,
    ]
    assert (
        history[2].error_message
        == f"every start URL failed: {site.base}/: HttpStatusError: HTTP 503"
    )
    crawled = [(e.items_crawled, e.items_indexed) for e in reversed(history)]
    assert crawled == [(2, 2), (1, 1), (1, 1), (1, 0), (1, 1), (1, 1)]
    first = history[-1]
    assert first.cpu_time_ms is not None
    assert first.cpu_time_ms >= 0
    assert first.memory_peak_mb is not None
    assert first.memory_peak_mb > 10
    assert first.metadata["namespace"] == "news-1"  # the source's crawl, named after it
    lines = [line.message for line in await service.store.executions.logs(first.id)]
    assert lines[0] == "job 1: execution 1 started (attempt 0)"
    assert "job 1: start pages changed or new: next run in 30 min" in lines


async def test_a_not_modified_start_page_counts_as_unchanged(
    service: Service, site: ChangingSite
) -> None:
    site.etag = True
    job_id = await _source_and_job(service, site)
    intervals = [await _run_and_interval(service, job_id) for _ in range(3)]
    assert intervals == [30, 60, 120]
    assert (site.hits[("/", 200)], site.hits[("/", 304)]) == (1, 2)


async def test_a_job_without_adaptive_scheduling_keeps_its_interval(
    service: Service, site: ChangingSite
) -> None:
    job_id = await _source_and_job(service, site, adaptive_scheduling=False)
    assert [await _run_and_interval(service, job_id) for _ in range(3)] == [30, 30, 30]
    assert (await service.store.sources.adaptive_state(1)).current_interval is None


async def test_max_pages_is_a_budget_per_run(service: Service, site: ChangingSite) -> None:
    job_id = await _source_and_job(service, site, pages=1)
    for _ in range(2):
        await _run_and_interval(service, job_id)
    history = (await service.store.executions.list(job_id)).items
    assert [e.items_crawled for e in history] == [1, 1]


def test_source_settings_carry_the_sources_crawl_rules(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    from harvestman.jobs.records import ScopeRules, Source

    caplog.set_level(logging.WARNING, "harvestman")
    source = Source(
        id=7,
        name="deep",
        start_urls=["http://a.test/"],
        max_depth=8,
        scope=ScopeRules(allow_domains=["a.test"], include=["/news/"], exclude=["/tag/"]),
        crawl_delay=4.0,
        max_pages=10,
        created_at=NOW,
        updated_at=NOW,
    )
    settings = source_settings(make_settings(), source, fetched_before=25)
    assert (settings.crawl_name, namespace(source)) == ("source-7", "source-7")
    assert (settings.crawl_max_depth, settings.crawl_max_pages, settings.frontier_delay) == (
        8,
        35,
        4.0,
    )
    assert (settings.crawl_allow_domains, settings.crawl_include, settings.crawl_exclude) == (
        ["a.test"],
        ["/news/"],
        ["/tag/"],
    )
    assert "max depth 8 is above 5" in caplog.text
    plain = Source(id=8, name="x", start_urls=["http://a.test/"], created_at=NOW, updated_at=NOW)
    default = source_settings(make_settings(), plain)
    assert (default.crawl_max_depth, default.crawl_max_pages, default.frontier_delay) == (3, 0, 0.0)


def test_intervals_are_said_in_their_largest_unit() -> None:
    from harvestman.jobs import outcome

    failures, tried = doctest.testmod(outcome)
    assert (failures, tried > 0) == (0, True)
