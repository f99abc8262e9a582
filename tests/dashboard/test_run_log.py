"""The job page's run log in Chromium (Playwright): a past run's log opened from the run
table, filtered by level, searched and downloaded, beside its chart and counters.

The API runs in process on a real uvicorn server over SQLite; two runs of a job crawled a
small local shop through the real scheduler and ``CrawlRunner`` before the browser opens.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from apiclient import SECRET, api_settings
from conftest import SettingsFactory, serve
from dashboard.browser import CHROMIUM, require_chromium, screenshot_path
from harvestman.api.app import create_app
from harvestman.api.auth import Role, create_token
from harvestman.jobs.records import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    JobSpec,
    ProgressSample,
    Source,
    SourceSpec,
)
from harvestman.jobs.runner import CrawlRunner
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from support.scheduling import Clock, make_scheduler
from support.served import served
from support.smallshop import Shop

pytestmark = pytest.mark.timeout(90)

WAIT = 15_000  # ms


async def test_a_past_runs_log_is_opened_filtered_searched_and_downloaded(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    require_chromium()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT)
    settings = make_settings(discovery_sitemaps=False, fetch_max_retries=0)
    shop, clock = Shop(), Clock()
    async with (
        serve(shop.handle) as port,
        SqlStore(settings.database_url) as store,
    ):
        await store.upgrade()
        async with JobStore(store.engine, clock=clock) as jobs:
            base = f"http://127.0.0.1:{port}/"
            source = await jobs.sources.create(SourceSpec(name="shop", start_urls=[base]))
            job = await jobs.jobs.create(
                JobSpec(
                    source_id=source.id, url=base, interval_minutes=60, adaptive_scheduling=False
                )
            )
            scheduler = make_scheduler(jobs, CrawlRunner(settings, store), instance_id="t")
            for _ in range(2):  # run 1 crawls the shop; run 2 finds the start page unchanged
                assert len(await scheduler.poll()) == 1
                clock.now += 30  # each run ends (its last sample) 30 s after it began
                await scheduler.wait_idle()
                clock.now += 7200
            scheduler.logs.uninstall()
            app = create_app(settings, sql_store=store, job_store=jobs, api_settings=api_settings())
            async with served(app) as api, async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
                try:
                    await _read_the_first_runs_log(browser, api, job.id, base)
                finally:
                    await browser.close()


async def _job_page(context: Any, api: str, job_id: int) -> tuple[Any, list[str]]:
    """A signed-in user's page on the job, and the page errors it meets."""
    page = await context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(api + "/")
    await page.get_by_label("API token").fill(create_token(SECRET, Role.USER))
    await page.get_by_role("button", name="Use token").click()
    await page.get_by_role("heading", name="Overview").wait_for()
    await page.goto(f"{api}/#/jobs/{job_id}")
    return page, errors


async def _read_the_first_runs_log(browser: Any, api: str, job_id: int, base: str) -> None:
    from playwright.async_api import expect

    context = await browser.new_context(
        viewport={"width": 1280, "height": 800}, accept_downloads=True
    )
    page, errors = await _job_page(context, api, job_id)

    # The latest run's log opens first: the start page answered 304.
    log = page.get_by_test_id("job-log")
    title = page.locator("#log-title")
    await expect(title).to_have_text("Log of run #2")
    await expect(log).to_contain_text(f"fetched {base} status=304 bytes=0")
    runs = page.get_by_test_id("executions-table")
    await expect(runs.locator("tbody tr")).to_have_count(2)

    # The first run, from its row: a line per URL, its counters and its chart.
    await page.get_by_role("button", name="Show the log of run #1").click()
    await expect(title).to_have_text("Log of run #1")
    await expect(log).to_contain_text(f"fetched {base}a status=200")
    await expect(log).to_contain_text("verdict=stored")
    await expect(log).to_contain_text(f"fetched {base}gone status=404")
    first = runs.locator("tbody tr").nth(1)
    await expect(first.locator("td[data-label=Fetched]")).to_have_text("5")
    await expect(first.locator("td[data-label=Failed]")).to_have_text("1")
    await expect(page.get_by_test_id("run-chart").locator("svg")).to_be_visible()
    await expect(page.get_by_test_id("run-chart")).to_contain_text(
        "5 fetched, 3 stored, 1 failed in 30 s."
    )
    await page.screenshot(path=screenshot_path("run-log"), full_page=True)

    # Warnings only: the 404 and the URL robots.txt denies.
    await page.get_by_label("Level").select_option(label="Warnings and errors")
    await expect(page.get_by_test_id("log-state")).to_have_text("2 lines match.")
    await expect(log).not_to_contain_text("verdict=stored")
    await expect(log).to_contain_text(f"{base}private/x")

    # And a search within them.
    await page.get_by_label("Search").fill("PRIVATE")
    await expect(page.get_by_test_id("log-state")).to_have_text("1 line matches.")
    await expect(log).not_to_contain_text(f"{base}gone")
    await page.screenshot(path=screenshot_path("run-log-filtered"), full_page=True)

    # The download holds what is shown, named for the run.
    async with page.expect_download() as waiting:
        await page.get_by_test_id("log-download").click()
    downloaded = await waiting.value
    assert downloaded.suggested_filename == f"job-{job_id}-run-1.log"
    text = await asyncio.to_thread(Path(await downloaded.path()).read_text)
    assert len(text.splitlines()) == 1
    assert f"WARNING harvestman.jobs.fetched: fetched {base}private/x" in text
    assert errors == []
    await context.close()


class HeldRunner:
    """A run that goes on until the test lets it end."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.execution_id = 0

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        self.execution_id = execution.id
        self.started.set()
        await self.release.wait()
        return ExecutionResult(status=ExecutionStatus.COMPLETED)


async def test_a_running_runs_chart_grows_while_it_runs(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    """Opened at a run's start, the chart says its counters are still to come, then draws them
    as the scheduler stores them (every jobs_progress_interval), without a reload."""
    require_chromium()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT)
    settings = make_settings(discovery_sitemaps=False)
    clock, runner = Clock(), HeldRunner()
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        async with JobStore(store.engine, clock=clock) as jobs:
            source = await jobs.sources.create(
                SourceSpec(name="held", start_urls=["http://127.0.0.1:9/"])
            )
            job = await jobs.jobs.create(
                JobSpec(source_id=source.id, url="http://127.0.0.1:9/", interval_minutes=60)
            )
            scheduler = make_scheduler(jobs, runner, instance_id="t")
            assert len(await scheduler.poll()) == 1
            await runner.started.wait()
            app = create_app(settings, sql_store=store, job_store=jobs, api_settings=api_settings())
            try:
                async with served(app) as api, async_playwright() as pw:
                    browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
                    try:
                        context = await browser.new_context(viewport={"width": 1280, "height": 800})
                        page, errors = await _job_page(context, api, job.id)
                        chart = page.get_by_test_id("run-chart")
                        await expect(chart).to_have_text(
                            "Its counters come with its first stored pages."
                        )
                        start = clock.now
                        samples = [
                            ProgressSample(at=start + 5, fetched=10, stored=8, failed=1),
                            ProgressSample(at=start + 10, fetched=25, stored=20, failed=2),
                        ]
                        await jobs.executions.record_progress(runner.execution_id, samples, 2.5)
                        await expect(chart.locator("svg")).to_be_visible()
                        await expect(chart).to_contain_text("25 fetched, 20 stored, 2 failed")
                        assert errors == []
                    finally:
                        await browser.close()
            finally:
                runner.release.set()
                await scheduler.wait_idle()
