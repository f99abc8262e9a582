"""A new user's whole journey through the service, in Debian's Chromium (Playwright), on the
embedded default (SQLite): a shop served on 127.0.0.1, ``harvestman serve`` with
``network_allow`` admitting it, and nothing else prepared.

Sign in; create a source in the dashboard and find the job it made; run it; open its pages
(one page in detail) and its products from the job's page and download them; change the
shop's prices and Run now; see the new price in the product's history and a log line for each
URL the run fetched; cancel the job (after confirming) and resume it.
"""

from __future__ import annotations

import asyncio
import csv
import io
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from dashboard.browser import CHROMIUM, require_chromium, screenshot_path
from dashboard.server import ADMIN_PASSWORD, ADMIN_PERSON, Served, serve_dashboard, wait_ready
from shopsite import Shop, running_shop

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
    pytest.mark.xdist_group("dashboard_journey"),
]
WAIT = 20_000  # ms
# Without a broker a job made due waits for the scheduler's next poll (every 10 s), then runs.
RUN_WAIT = 45_000


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Shop, Served, Any]]:
    require_chromium()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT)
    workdir = tmp_path_factory.mktemp("journey")
    async with (
        running_shop() as shop,
        serve_dashboard(workdir, None, env={"HARVESTMAN_NETWORK_ALLOW": "127.0.0.0/8"}) as served,
        async_playwright() as pw,
    ):
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            await wait_ready(served)
            yield shop, served, browser
        finally:
            await browser.close()


def _nav(page: Any, name: str) -> Any:
    return page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name=name, exact=True
    )


async def _download(page: Any, button: str) -> str:
    async with page.expect_download() as waiting:
        await page.get_by_role("button", name=button).click()
    download = await waiting.value
    path = await download.path()
    assert path is not None
    return await asyncio.to_thread(Path(path).read_text, encoding="utf-8")


async def test_a_new_user_crawls_a_shop_sees_its_results_and_a_price_change(
    service: tuple[Shop, Served, Any],
) -> None:
    from playwright.async_api import expect

    shop, served, browser = service
    context = await browser.new_context(
        viewport={"width": 1280, "height": 800}, accept_downloads=True
    )
    page = await context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # Sign in as a person.
    await page.goto(served.base + "/")
    await page.get_by_label("User name").fill(ADMIN_PERSON)
    await page.get_by_label("Password").fill(ADMIN_PASSWORD)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("heading", name="Overview").wait_for()

    # Before any crawl the lists say they are empty, not that filters hid something.
    await _nav(page, "Pages").click()
    await expect(page.locator("main")).to_contain_text("No page stored in any crawl.")
    await _nav(page, "Frontier").click()
    await expect(page.locator("main")).to_contain_text("No pending URL in any crawl.")

    # A source for the shop, made in the dashboard: the notice names the job it made.
    await _nav(page, "Sources").click()
    await page.get_by_role("button", name="New source").click()
    form = page.get_by_test_id("source-create-form")
    await form.get_by_label("Name").fill("shop")
    await form.get_by_label("Start URLs (one per line)").fill(shop.url("/"))
    await form.get_by_label("Crawl delay (s)").fill("0")
    await form.get_by_role("button", name="Create source").click()
    created = page.get_by_test_id("created-job")
    await expect(created).to_be_visible()
    await created.click()

    # Its job: the crawl it fills is named after the source; run it now.
    await expect(page.get_by_role("heading", name=re.compile(r"^Job #\d+"))).to_be_visible()
    job_url = page.url
    namespace = page.get_by_test_id("job-namespace")
    await expect(namespace).to_contain_text("shop")
    crawl = (await namespace.text_content() or "").strip()
    await page.get_by_role("button", name=re.compile(r"^Run now")).click()
    runs = page.get_by_test_id("executions-table")
    await expect(runs.locator("tbody tr").first).to_contain_text("completed", timeout=RUN_WAIT)
    await page.screenshot(path=screenshot_path("journey-job"), full_page=True)

    # Its source, from the job's page: the sources view, filtered on it.
    await page.get_by_test_id("job-source").click()
    await expect(page.get_by_label("Filter by name")).to_have_value("shop")
    assert page.url.endswith("#/sources?name=shop")
    await expect(page.locator("main table")).to_contain_text(shop.url("/"))
    await page.go_back()

    # Its pages, from the job's page: the view opens on the job's crawl.
    await page.get_by_test_id("job-pages").click()
    pages = page.get_by_test_id("pages-table")
    await expect(pages).to_contain_text(shop.url("/p/kettle"))
    assert page.url.endswith(f"#/pages?crawl={crawl}")
    await expect(page.get_by_label("Crawl")).to_have_value(crawl)
    listed = await _download(page, "Download this list as CSV")
    rows = list(csv.DictReader(io.StringIO(listed)))
    assert {row["url"] for row in rows} >= {shop.url("/"), shop.url("/p/kettle"), shop.url("/js")}
    # A page the check rejected says the check's verdict in its row, not an error class.
    app_row = pages.get_by_role("row").filter(has_text=shop.url("/js"))
    await expect(app_row).to_contain_text("soft: needs_js")
    # One page in detail: its check, how it was found, the product on it.
    await pages.get_by_role("link", name="Steel Kettle").click()
    await expect(page.get_by_test_id("page-title")).to_have_text("Steel Kettle")
    await expect(page.get_by_test_id("page-verdict")).to_have_text("ok: kept as content")
    await expect(page.get_by_test_id("page-products")).to_contain_text("25 EUR")
    await expect(page.get_by_text(shop.url("/"), exact=True)).to_be_visible()  # found on
    await page.go_back()
    await pages.get_by_role("link", name="App").click()
    await expect(page.get_by_test_id("page-verdict")).to_contain_text("rejected (soft): needs_js")

    # Its products, from the job's page.
    await page.goto(job_url)
    await page.get_by_test_id("job-products").click()
    products = page.get_by_test_id("products-table")
    await expect(products.locator("tbody tr")).to_have_count(2)
    await expect(products).to_contain_text("25 EUR")
    listed = await _download(page, "Download this list as JSONL")
    assert sorted(line.count('"name":"Steel Kettle"') for line in listed.splitlines()) == [0, 1]

    # The shop changes a price; Run now fetches every known page again.
    shop.prices["kettle"] = "19.50"
    await page.goto(job_url)
    await page.get_by_role("button", name=re.compile(r"^Run now")).click()
    await expect(runs.locator("tbody tr")).to_have_count(2, timeout=RUN_WAIT)
    await expect(runs.locator("tbody tr").first).to_contain_text("completed", timeout=RUN_WAIT)
    # The run's log has a line for each URL it fetched.
    log = page.get_by_test_id("job-log")
    for path in ("/", "/p/kettle", "/p/toaster", "/js"):
        await expect(log).to_contain_text(shop.url(path))
    await page.screenshot(path=screenshot_path("journey-rerun"), full_page=True)

    # The product's history holds the new price.
    await page.get_by_test_id("job-products").click()
    await products.get_by_role("link", name="Steel Kettle").click()
    history = page.get_by_test_id("history-table")
    await expect(history.locator("tbody tr")).to_have_count(2)
    await expect(history.locator("tbody tr").first).to_contain_text("19.5 EUR")
    await expect(history.locator("tbody tr").last).to_contain_text("25 EUR")

    # Cancel asks first; a cancelled job resumes.
    await page.goto(job_url)
    await page.get_by_role("button", name=re.compile(r"^Cancel job")).click()
    dialog = page.get_by_test_id("confirm-dialog")
    await expect(dialog).to_be_visible()
    await dialog.get_by_test_id("confirm-yes").click()
    await expect(page.get_by_test_id("job-state")).to_have_text("cancelled")
    await page.get_by_role("button", name=re.compile(r"^Resume")).click()
    await expect(page.get_by_test_id("job-state")).to_have_text("scheduled")
    assert errors == []
