"""A run's log worth reading: a line per fetched URL, counters live while the run goes, and any
past run's log searched, filtered by level and downloaded.

The real scheduler and ``CrawlRunner`` crawl a small shop on 127.0.0.1 through the API's
store; the schedule runs on the test's clock (the crawl keeps real time for politeness), so the
counters' duration and rate are exact. A page that holds its answer until the test releases it
keeps a run going while the test reads its counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from apiclient import api_settings, bearer
from conftest import SettingsFactory, serve
from harvestman.api.app import create_app
from harvestman.api.auth import Role
from harvestman.config import Settings
from harvestman.crawl.fetch import RetryPolicy
from harvestman.crawl.outcomes import Outcomes
from harvestman.errors import ContentRejected, HttpStatusError, RobotsDenied
from harvestman.jobs.logs import LogCapture
from harvestman.jobs.records import JobSpec, LogLine, ProgressSample, SourceSpec
from harvestman.jobs.runner import CrawlRunner
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.urllines import UrlLines, describe, verdict
from harvestman.logconfig import configure_logging, reset_logging
from harvestman.records import CrawlRequest, Outcome, PageRecord, UrlStatus
from harvestman.stats import Stats
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from storerows import NOW, open_store, store_url
from support.scheduling import Clock, make_scheduler
from support.smallshop import PAGE_A, PAGE_B, Shop

USER = bearer(Role.USER)


@dataclass
class Service:
    settings: Settings
    jobs: JobStore
    scheduler: Scheduler
    client: httpx.AsyncClient
    clock: Clock
    base: str

    async def run_job(self) -> tuple[int, int]:
        """A recurring job on the shop, run once: (job id, execution id)."""
        source = await self.jobs.sources.create(SourceSpec(name="shop", start_urls=[self.base]))
        job = await self.jobs.jobs.create(
            JobSpec(
                source_id=source.id,
                url=self.base,
                interval_minutes=60,
                adaptive_scheduling=False,
            )
        )
        [claim] = await self.scheduler.poll()
        await self.scheduler.wait_idle()
        return job.id, claim.execution.id

    async def get(self, path: str, **params: object) -> httpx.Response:
        response = await self.client.get(path, params=params, headers=USER)
        assert response.status_code == 200, response.text
        return response


def _service_settings(make_settings: SettingsFactory, **overrides: object) -> Settings:
    return make_settings(discovery_sitemaps=False, fetch_max_retries=0, **overrides)


@pytest.fixture
def shop() -> Shop:
    return Shop()


ServiceOf = Callable[..., contextlib.AbstractAsyncContextManager[Service]]


@pytest.fixture
def service_of(make_settings: SettingsFactory, shop: Shop) -> ServiceOf:
    """Opens a service over the shop with settings overridden."""

    @contextlib.asynccontextmanager
    async def open_service(**overrides: object) -> AsyncIterator[Service]:
        settings = _service_settings(make_settings, **overrides)
        clock = Clock()
        async with (
            serve(shop.handle) as port,
            SqlStore(settings.database_url) as crawl_store,
        ):
            await crawl_store.upgrade()
            async with JobStore(crawl_store.engine, clock=clock) as jobs:
                scheduler = make_scheduler(
                    jobs, CrawlRunner(settings, crawl_store), instance_id="t"
                )
                app = create_app(
                    settings,
                    sql_store=crawl_store,
                    job_store=jobs,
                    scheduler=scheduler,
                    api_settings=api_settings(),
                )
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
                    base = f"http://127.0.0.1:{port}/"
                    try:
                        yield Service(settings, jobs, scheduler, client, clock, base)
                    finally:
                        shop.release.set()
                        scheduler.logs.uninstall()

    return open_service


async def until(check: Callable[[], bool], what: str) -> None:
    """Wait for ``check`` (a guard against a hang, not a measure of time)."""
    deadline = time.monotonic() + 30
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.01)


URL_LINE = re.compile(r"fetched (\S+) status=(\S+) bytes=(\S+) ms=(\d+|-) verdict=(.*)")


def url_lines(messages: list[str]) -> dict[str, tuple[str, str, str]]:
    """URL -> (status, bytes, verdict with error) of each line for a URL; a URL logged twice
    fails the test."""
    found: dict[str, tuple[str, str, str]] = {}
    for message in messages:
        match = URL_LINE.fullmatch(message)
        if match is None:
            continue
        url, status, size, _, said = match.groups()
        assert url not in found, f"{url} logged twice"
        found[url] = (status, size, said)
    return found


async def test_a_run_logs_one_line_per_fetched_url_and_any_past_run_is_searchable(
    service_of: ServiceOf, shop: Shop
) -> None:
    async with service_of() as service:
        base = service.base
        job_id, first = await service.run_job()
        service.clock.now += 7200  # due again: the start page is fetched conditionally
        [claim] = await service.scheduler.poll()
        await service.scheduler.wait_idle()
        second = claim.execution.id

        # The first run, by its id (no longer the latest), line by line.
        body = (await service.get(f"/api/v1/jobs/{job_id}/logs", execution_id=first)).json()
        assert (body["execution_id"], body["execution_number"]) == (first, 1)
        lines = url_lines([line["message"] for line in body["lines"]])
        gone_error = "failed error=HttpStatusError: HTTP 404"
        assert lines == {
            base: ("200", str(len(shop.home)), "stored"),
            f"{base}a": ("200", str(len(PAGE_A)), "stored"),
            f"{base}b": ("200", str(len(PAGE_B)), "stored"),
            f"{base}gone": ("404", "8", gone_error),
            f"{base}private/x": ("-", "-", lines[f"{base}private/x"][2]),
        }
        assert lines[f"{base}private/x"][2].startswith("blocked error=RobotsDenied: ")
        levels = {line["message"].split(" ")[1]: line["level"] for line in body["lines"]}
        assert levels[f"{base}gone"] == levels[f"{base}private/x"] == "WARNING"
        assert levels[f"{base}a"] == "INFO"
        # The second run fetched only the start page again: a 304.
        latest = (await service.get(f"/api/v1/jobs/{job_id}/logs")).json()
        assert latest["execution_id"] == second
        assert url_lines([line["message"] for line in latest["lines"]]) == {
            base: ("304", "0", "not modified")
        }

        # Search (any case) and the level filter, on the older run.
        found = await service.get(f"/api/v1/jobs/{job_id}/logs", execution_id=first, q="/GONE")
        assert url_lines([line["message"] for line in found.json()["lines"]]) == {
            f"{base}gone": ("404", "8", gone_error)
        }
        assert len(found.json()["lines"]) == 1
        warned = await service.get(
            f"/api/v1/jobs/{job_id}/logs", execution_id=first, level="WARNING"
        )
        warnings = [line["message"] for line in warned.json()["lines"]]
        assert sorted(url_lines(warnings)) == [f"{base}gone", f"{base}private/x"]
        assert {line["level"] for line in warned.json()["lines"]} == {"WARNING"}
        nothing = await service.get(
            f"/api/v1/jobs/{job_id}/logs", execution_id=first, level="ERROR"
        )
        assert nothing.json()["lines"] == []

        # Downloaded with the same filters, named for the run.
        download = await service.get(
            f"/api/v1/jobs/{job_id}/logs", execution_id=first, level="WARNING", download=1
        )
        assert download.headers["content-disposition"] == (
            f'attachment; filename="job-{job_id}-run-1.log"'
        )
        text = download.text.splitlines()
        assert len(text) == len(warnings)
        assert all(" WARNING harvestman.jobs.fetched: fetched " in row for row in text)
        everything = await service.get(
            f"/api/v1/jobs/{job_id}/logs", execution_id=first, download=1
        )
        assert len(everything.text.splitlines()) == len(body["lines"])


async def test_url_lines_stop_at_job_log_url_lines_and_the_counters_go_on(
    service_of: ServiceOf,
) -> None:
    async with service_of(job_log_url_lines=2) as service:
        job_id, first = await service.run_job()

        body = (await service.get(f"/api/v1/jobs/{job_id}/logs")).json()
        messages = [line["message"] for line in body["lines"]]
        assert len(url_lines(messages)) == 2
        assert (
            "3 more fetched URLs have no line of their own: a run logs the first 2 "
            "(job_log_url_lines); the run's counters include them"
        ) in messages
        execution = (await service.get(f"/api/v1/executions/{first}")).json()
        assert (execution["items_crawled"], execution["items_indexed"]) == (5, 3)
        assert execution["items_failed"] == 1  # the 404; the robots.txt block is no failure


async def test_no_url_lines_when_job_log_url_lines_is_0(
    service_of: ServiceOf,
) -> None:
    async with service_of(job_log_url_lines=0) as service:
        job_id, _ = await service.run_job()

        body = (await service.get(f"/api/v1/jobs/{job_id}/logs")).json()
        assert url_lines([line["message"] for line in body["lines"]]) == {}


async def test_a_running_executions_counters_are_live_in_the_api(
    service_of: ServiceOf, shop: Shop
) -> None:
    shop.holding = True
    # /slow is held until the test releases it: a fetch timeout must not end it first (the
    # suite's 1 s did, on a busy machine, and the page counted as failed).
    async with service_of(fetch_timeout=60.0) as service:
        source = await service.jobs.sources.create(
            SourceSpec(name="shop", start_urls=[service.base])
        )
        job = await service.jobs.jobs.create(JobSpec(source_id=source.id, url=service.base))
        [claim] = await service.scheduler.poll()
        execution_id = claim.execution.id
        # Every page but /slow is fetched and stored; /slow waits for the test.
        await shop.slow_asked.wait()
        progress = service.scheduler.progress.running()[execution_id]
        await until(lambda: progress.fetched == 5, "the five other URLs are counted")

        # What a broker worker does every few seconds: its poll stores the counters when due.
        service.clock.now = NOW + 10
        assert await service.scheduler.poll() == []
        running = (await service.get(f"/api/v1/executions/{execution_id}")).json()
        assert running["status"] == "running"
        assert (
            running["items_crawled"],
            running["items_indexed"],
            running["items_failed"],
            running["pages_per_second"],
            running["duration_ms"],
        ) == (5, 3, 1, 0.5, 10_000)
        listed = (await service.get(f"/api/v1/jobs/{job.id}/executions")).json()["items"]
        assert (listed[0]["items_crawled"], listed[0]["duration_ms"]) == (5, 10_000)

        service.clock.now = NOW + 12
        shop.release.set()
        await service.scheduler.wait_idle()
        done = (await service.get(f"/api/v1/executions/{execution_id}")).json()
        assert (
            done["status"],
            done["items_crawled"],
            done["items_indexed"],
            done["duration_ms"],
            done["pages_per_second"],  # the run's average once it ended
        ) == ("completed", 6, 4, 12_000, 0.5)
        chart = (await service.get(f"/api/v1/executions/{execution_id}/progress")).json()
        assert chart == {
            "execution_id": execution_id,
            "status": "completed",
            "samples": [
                {"at": NOW + 10, "fetched": 5, "stored": 3, "failed": 1},
                {"at": NOW + 12, "fetched": 6, "stored": 4, "failed": 1},
            ],
        }


async def test_a_log_search_or_level_that_is_not_one_is_refused(
    service_of: ServiceOf,
) -> None:
    async with service_of() as service:
        job_id, _ = await service.run_job()
        path = f"/api/v1/jobs/{job_id}/logs"
        for params in ({"level": "LOUD"}, {"q": ""}, {"q": "x" * 201}):
            response = await service.client.get(path, params=params, headers=USER)
            assert response.status_code == 422, params
        # Characters LIKE treats as patterns are searched for as they are.
        found = await service.get(path, q="100%_")
        assert found.json()["lines"] == []


REQUEST = CrawlRequest(1, "http://a.test/p", "h", "a.test", 1, 0)


def _page(**fields: object) -> PageRecord:
    page = PageRecord("http://a.test/p", "http://a.test/p", "a.test", 200, "text/html", 10, 0.0, 5)
    for name, value in fields.items():
        setattr(page, name, value)
    return page


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (Outcome(REQUEST, UrlStatus.COMPLETED, 0, 0, 200, page=_page()), "stored"),
        (Outcome(REQUEST, UrlStatus.COMPLETED, 0, 0, 304, page=_page()), "not modified"),
        (
            Outcome(
                REQUEST, UrlStatus.COMPLETED, 0, 0, 200, page=_page(near_duplicate_of="http://o/")
            ),
            "duplicate of http://o/",
        ),
        (
            Outcome.failed(
                REQUEST,
                ContentRejected("soft", "thin", "12 bytes"),
                0,
                status=UrlStatus.COMPLETED,
                page=_page(rejection_reason="thin"),
            ),
            "rejected: thin",
        ),
        (Outcome.failed(REQUEST, RobotsDenied("denied"), 0, status=UrlStatus.BLOCKED), "blocked"),
        (Outcome.failed(REQUEST, HttpStatusError(500, REQUEST.url), 0), "failed"),
        (
            Outcome.failed(REQUEST, HttpStatusError(503, REQUEST.url), 0, status=UrlStatus.PENDING),
            "retrying",
        ),
    ],
)
def test_each_outcome_has_its_verdict(outcome: Outcome, expected: str) -> None:
    assert verdict(outcome)[1] == expected


def test_a_failure_is_a_warning_and_a_stored_page_is_info() -> None:
    failed = Outcome.failed(REQUEST, HttpStatusError(500, REQUEST.url), 0)
    stored = Outcome(REQUEST, UrlStatus.COMPLETED, 0, 0, 200, page=_page())
    assert (verdict(failed)[0], verdict(stored)[0]) == (logging.WARNING, logging.INFO)


def test_samples_are_thinned_evenly_when_full() -> None:
    from harvestman.jobs.progress import RunProgress

    progress = RunProgress(started_at=0.0, max_samples=10)
    for second in range(1, 101):
        progress.fetched = second
        progress.sample(float(second))
    assert len(progress.samples) <= 10
    # The chart spans the whole run: the first sample and the newest are kept.
    assert (progress.samples[0], progress.samples[-1]) == (
        ProgressSample(1.0, 1, 0, 0),
        ProgressSample(100.0, 100, 0, 0),
    )


@pytest.fixture(params=["sqlite", "postgresql"])
async def job_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobStore]:
    engine = open_store(store_url(request, tmp_path))
    async with JobStore(engine, clock=Clock()) as store:
        yield store
    engine.dispose()


async def test_the_store_filters_log_lines_and_keeps_a_running_executions_counters(
    job_store: JobStore,
) -> None:
    source = await job_store.sources.create(SourceSpec(name="s", start_urls=["http://a.test/"]))
    await job_store.jobs.create(JobSpec(source_id=source.id, url="http://a.test/"))
    [claim] = await job_store.locks.claim_due("t", 1)
    execution_id = claim.execution.id
    said = [
        ("INFO", "fetched http://a.test/ status=200 verdict=stored"),
        ("WARNING", "fetched http://a.test/Gone status=404 verdict=failed"),
        ("ERROR", "job 1: every start URL failed"),
        ("INFO", "fetched http://a.test/100%_off status=200 verdict=stored"),
    ]
    await job_store.executions.append_logs(
        [
            LogLine(execution_id, seq, NOW, level, "t", text)
            for seq, (level, text) in enumerate(said, 1)
        ]
    )

    async def seqs(**filters: object) -> list[int]:
        lines = await job_store.executions.logs(execution_id, **filters)  # type: ignore[arg-type]
        return [line.seq for line in lines]

    assert await seqs(text="gone") == [2]
    assert await seqs(text="100%_") == [4]  # LIKE's wildcards are searched for as they are
    assert await seqs(text="%") == [4]
    assert await seqs(min_level="WARNING") == [2, 3]
    assert await seqs(min_level="ERROR", text="failed") == [3]
    assert await seqs(min_level="INFO", after=2) == [3, 4]

    samples = [ProgressSample(NOW + 5, 4, 3, 1), ProgressSample(NOW + 10, 9, 7, 2)]
    assert await job_store.executions.record_progress(execution_id, samples, 1.0)
    execution = await job_store.executions.get(execution_id)
    assert (
        execution.items_crawled,
        execution.items_indexed,
        execution.items_failed,
        execution.pages_per_second,
    ) == (9, 7, 2, 1.0)
    assert await job_store.executions.progress(execution_id) == samples


def test_a_retry_line_says_how_long_the_fetch_took() -> None:
    now = 100.0
    outcomes = Outcomes(Stats(), lambda: now, visited_ttl=60.0, retry=RetryPolicy(3, 0.01))

    retry = outcomes.fetch_failure(REQUEST, HttpStatusError(503, REQUEST.url), started=99.75)

    assert describe(retry)[1] == (
        "fetched http://a.test/p status=- bytes=- ms=250 verdict=retrying "
        "error=HttpStatusError: HTTP 503 (retry 1 of 3)"
    )


@pytest.mark.parametrize("lines", [-1, 9001])
def test_job_log_url_lines_stays_below_what_a_runs_log_keeps(lines: int) -> None:
    with pytest.raises(ValidationError, match="job_log_url_lines"):
        Settings(job_log_url_lines=lines)


async def test_a_run_outside_the_scheduler_counts_its_pages_and_logs_no_url_lines(
    service_of: ServiceOf, caplog: pytest.LogCaptureFixture
) -> None:
    async with service_of() as service:
        source = await service.jobs.sources.create(
            SourceSpec(name="shop", start_urls=[service.base])
        )
        job = await service.jobs.jobs.create(JobSpec(source_id=source.id, url=service.base))
        [claim] = await service.jobs.locks.claim_due("direct", 1)
        runner = service.scheduler.runner
        caplog.set_level(logging.INFO, logger="harvestman")

        result = await runner.run(job, source, claim.execution, asyncio.Event())

        assert (result.items_crawled, result.items_indexed) == (5, 3)
        assert [r for r in caplog.records if r.name == "harvestman.jobs.fetched"] == []


def test_url_lines_go_to_the_runs_log_not_to_the_process_log() -> None:
    out = io.StringIO()
    configure_logging("text", "INFO", stream=out)
    capture = LogCapture()
    capture.install()
    try:
        with capture.capture(7):
            lines = UrlLines.for_run(10)
            assert lines is not None
            lines.observe([Outcome(REQUEST, UrlStatus.COMPLETED, 0, 0, 200, page=_page())])
    finally:
        capture.uninstall()
        reset_logging()
    [line] = capture.end(7)
    assert (line.seq, line.level, line.logger, line.message) == (
        1,
        "INFO",
        "harvestman.jobs.fetched",
        "fetched http://a.test/p status=200 bytes=10 ms=5 verdict=stored",
    )
    assert out.getvalue() == ""
