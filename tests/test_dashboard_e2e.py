"""The dashboard end to end: Debian's Chromium (Playwright) against a real ``harvestman serve``
crawling the local test site.

One server and one browser serve the module; the tests run in file order and the last one
stops the server to see the dashboard notice. Screenshots of each view go to tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio

from dashboard.browser import CHROMIUM, require_chromium, screenshot_path
from dashboard.server import (
    PERSON,
    PERSON_PASSWORD,
    USER_RATE,
    Served,
    serve_dashboard,
    stop,
    wait_ready,
)
from testsite import TestSite

# One worker runs the module: its tests share one server and run in file order.
pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(90),
    pytest.mark.xdist_group("dashboard_e2e"),
]

WAIT = 15_000  # ms: the longest a view may take to show what the test waits for


@dataclass
class Dashboard:
    served: Served
    site: TestSite
    browser: Any


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dashboard(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Dashboard]:
    require_chromium()
    from playwright.async_api import async_playwright, expect

    expect.set_options(timeout=WAIT)
    workdir = tmp_path_factory.mktemp("dashboard")
    async with (
        TestSite(slow_seconds=1.0) as site,
        serve_dashboard(workdir, site.url("/")) as served,
        async_playwright() as pw,
    ):
        # The browser starts while the server imports and opens its store.
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            await wait_ready(served)
            yield Dashboard(served, site, browser)
        finally:
            await browser.close()


async def _page(browser: Any, **context: Any) -> tuple[Any, list[str]]:
    """A fresh tab (own sessionStorage) and the script errors it reports."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900}, **context)
    page = await ctx.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


async def _sign_in(page: Any, base: str, token: str) -> None:
    await page.goto(base + "/")
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Use token").click()
    await page.get_by_role("heading", name="Overview").wait_for()


def _nav(page: Any, name: str) -> Any:
    return page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name=name, exact=True
    )


def _count(text: str) -> int:
    return int(re.sub(r"\D", "", text) or 0)


async def _api(served: Served, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=served.base, timeout=5) as client:
        return await client.request(method, path, headers=served.admin_headers(), **kwargs)


async def test_an_admin_watches_the_crawl_and_steers_jobs(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served, site = dashboard.served, dashboard.site
    page, errors = await _page(dashboard.browser)

    # A refused token is said so; the admin's is accepted and its role shown.
    await page.goto(served.base + "/")
    await page.get_by_label("API token").fill("not-a-token")
    await page.get_by_role("button", name="Use token").click()
    await expect(page.get_by_test_id("token-error")).to_contain_text("refused")
    await page.screenshot(path=screenshot_path("signin"))
    await _sign_in(page, served.base, served.admin)
    await expect(page.get_by_test_id("role")).to_have_text("admin")

    # The overview follows the crawl live: the page count rises without a reload.
    await expect(page.get_by_test_id("live-mode")).to_have_text("Live")
    pages = page.get_by_test_id("stat-pages")
    await expect(pages).not_to_have_text("—")
    first = _count(await pages.inner_text())
    await page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=stat-pages]').textContent"
        ".replace(/\\D/g, '')) > n",
        arg=first,
        timeout=WAIT,
    )
    await expect(page.get_by_test_id("workers")).to_contain_text(site.host)
    await expect(page.get_by_test_id("status-chart").locator("svg")).to_contain_text("200")
    await expect(page.get_by_test_id("rate-chart").locator("svg")).to_be_visible()
    await page.screenshot(path=screenshot_path("overview"), full_page=True)

    # Create a job: the API's validation message shows under its field, then it is created.
    await _nav(page, "Jobs").click()
    await page.get_by_role("button", name="New job").click()
    form = page.get_by_test_id("job-create-form")
    await form.get_by_label("Source").select_option(label=f"testsite (#{served.source_id})")
    await form.get_by_label("URL").fill(site.url("/about.html"))
    # The first run tomorrow: the scheduler leaves the job alone while the test steers it.
    tomorrow = await page.evaluate(
        "() => new Date(Date.now() + 86400e3 - new Date().getTimezoneOffset() * 60e3)"
        ".toISOString().slice(0, 16)"
    )
    await form.get_by_label("First run (empty: the least-loaded slot)").fill(tomorrow)
    await form.get_by_label("Every (empty: run once)").fill("0")
    await form.get_by_role("button", name="Create job").click()
    interval_field = form.locator("[data-field=interval_minutes] .error")
    await expect(interval_field).to_contain_text("greater than or equal to 1")
    await form.get_by_label("Every (empty: run once)").fill("30")
    await form.get_by_role("button", name="Create job").click()
    created = page.get_by_test_id("jobs-status")
    await expect(created).to_contain_text("created: scheduled")
    job_id = _count((await created.inner_text()).split("created")[0])
    row = page.locator(f"[data-testid=jobs-table] tr[data-key='{job_id}']")
    await expect(row.get_by_test_id("job-state")).to_have_text("scheduled")

    # Pause and resume: the buttons follow what the state allows.
    pause = row.get_by_role("button", name=f"Pause job {job_id}", exact=True)
    await pause.click()
    await expect(row.get_by_test_id("job-state")).to_have_text("paused")
    await expect(pause).to_have_count(0)
    await row.get_by_role("button", name=f"Resume job {job_id}", exact=True).click()
    await expect(row.get_by_test_id("job-state")).to_have_text("scheduled")
    # Resumed into the least-loaded slot, which may be now: the scheduler may have taken it.
    state = (await _api(served, "GET", f"/api/v1/jobs/{job_id}")).json()["status"]
    assert state in ("scheduled", "running")
    await page.screenshot(path=screenshot_path("jobs"), full_page=True)

    # A refused action: the job is cancelled elsewhere, then cancelled from the stale page.
    await page.goto(f"{served.base}/#/jobs/{job_id}")
    stale_cancel = page.get_by_role("button", name=f"Cancel job {job_id}", exact=True)
    await stale_cancel.wait_for()
    assert (await _api(served, "POST", f"/api/v1/jobs/{job_id}/cancel")).status_code == 200
    await stale_cancel.click()
    await (
        page.get_by_role("alertdialog")
        .get_by_role("button", name=f"Yes, cancel job {job_id}")
        .click()
    )
    notice = page.get_by_test_id("job-status")
    await expect(notice).to_contain_text(
        f"Refused: cannot cancel job {job_id}, it is cancelled. Allowed now: resume, force-run."
    )
    await expect(page.get_by_test_id("job-state")).to_have_text("cancelled")
    await expect(page.get_by_test_id(f"actions-{job_id}").get_by_role("button")).to_have_text(
        ["Resume", "Run now"]
    )
    await page.screenshot(path=screenshot_path("job-refused"), full_page=True)

    # The crawling job's page: its run in the history and its log, live.
    await page.goto(f"{served.base}/#/jobs/{served.job_id}")
    await expect(page.get_by_test_id("executions-table")).to_contain_text("#1")
    # A run's lines are stored every second and streamed from the store.
    await expect(page.get_by_test_id("job-log")).not_to_be_empty()
    await page.screenshot(path=screenshot_path("job"), full_page=True)

    # Seed a URL (admin) and find it pending in the frontier.
    seeded = site.url("/seeded-from-the-dashboard.html")
    await _nav(page, "Frontier").click()
    await page.get_by_label("URLs (one per line)").fill(seeded)
    await page.get_by_role("button", name="Seed", exact=True).click()
    await expect(page.get_by_test_id("seed-result")).to_contain_text("1 URL(s) seeded")
    await expect(page.get_by_test_id("frontier-table")).to_contain_text(seeded)
    await page.screenshot(path=screenshot_path("frontier"), full_page=True)

    # Domains: the test site's host with its robots.txt.
    await _nav(page, "Domains").click()
    await page.get_by_role("button", name=f"View robots.txt of {site.host}").click()
    await expect(page.get_by_test_id("robots-text")).to_contain_text("Disallow: /private/")
    await page.screenshot(path=screenshot_path("domains"), full_page=True)
    await page.keyboard.press("Escape")
    # The host's operator settings: a priority set in the dialog is what the API stores.
    await page.get_by_role("button", name=f"Settings of {site.host}").click()
    await page.get_by_label("Priority").fill("7")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_test_id("domain-settings-status")).to_contain_text("Saved")
    await page.screenshot(path=screenshot_path("domain-settings"), full_page=True)
    await page.keyboard.press("Escape")
    async with httpx.AsyncClient(base_url=served.base, timeout=5) as client:
        stored = await client.get(
            f"/api/domains/{site.host}/settings", headers=served.admin_headers()
        )
    assert (stored.json()["priority"], stored.json()["paused"]) == (7, False)

    # Pages of the job's crawl, chosen in the crawl select and kept in the address.
    await _nav(page, "Pages").click()
    await page.get_by_label("Crawl").select_option(f"testsite-{served.source_id}")
    await expect(page.get_by_test_id("pages-table")).to_contain_text(site.url("/"))
    assert page.url.endswith(f"#/pages?crawl=testsite-{served.source_id}")
    # A page whose fetch failed says why in its row, not just a blank status: once the crawl
    # has stored the bomb's failure, the list drawn again shows its error.
    crawl_name = f"testsite-{served.source_id}"
    for _ in range(200):
        listed = await _api(served, "GET", f"/api/pages?crawl={crawl_name}&limit=100")
        if any(p["url"].endswith("/bomb.html") for p in listed.json()["items"]):
            break
        await asyncio.sleep(0.1)
    await page.get_by_role("button", name="Search", exact=True).click()
    bomb = page.get_by_test_id("pages-table").get_by_role("row").filter(has_text="/bomb.html")
    await expect(bomb).to_contain_text("BodyTooLarge")
    await page.screenshot(path=screenshot_path("pages"), full_page=True)

    # Scheduler: the slots and a rebalance preview.
    await _nav(page, "Scheduler").click()
    await expect(page.get_by_test_id("distribution-score")).not_to_be_empty()
    await page.get_by_role("button", name="Preview rebalance").click()
    await expect(page.get_by_test_id("rebalance-plan")).to_contain_text("Preview:")
    await page.screenshot(path=screenshot_path("scheduler"), full_page=True)

    # Parsers: a rollout set through the API, rolled back from its button.
    rollout = await _api(
        served, "PUT", "/api/admin/parsers/shelf/rollout",
        json={"version": "2", "share": 0.25, "domain": "127.0.0.1"},
    )  # fmt: skip
    assert rollout.status_code == 200, rollout.text
    await _nav(page, "Parsers").click()
    await page.get_by_label("Crawl").select_option(f"testsite-{served.source_id}")
    await expect(page.get_by_test_id("parser-rollouts")).to_contain_text(
        "shelf 2 on 127.0.0.1: 25.0% of pages"
    )
    await page.get_by_role("button", name="Roll back (0%)").click()
    await expect(page.get_by_role("status")).to_contain_text("shelf 2 on 127.0.0.1: share 0.0%")
    await expect(page.get_by_test_id("parser-rollouts")).to_contain_text("127.0.0.1: 0.0% of pages")
    await page.screenshot(path=screenshot_path("parsers"), full_page=True)

    # On a phone the same views stack; the navigation stays reachable.
    await page.set_viewport_size({"width": 390, "height": 844})
    await _nav(page, "Jobs").click()
    await expect(page.get_by_test_id("jobs-table")).to_be_visible()
    await page.screenshot(path=screenshot_path("jobs-phone"), full_page=True)
    assert errors == []


async def test_a_user_sees_no_refused_action_a_polling_fallback_and_the_rate_limit(
    dashboard: Dashboard,
) -> None:
    from playwright.async_api import expect

    served = dashboard.served
    page, errors = await _page(dashboard.browser)
    await _sign_in(page, served.base, served.user)
    await expect(page.get_by_test_id("role")).to_have_text("user")

    # Where the event stream is refused (a proxy that buffers or drops it), the overview
    # falls back to polling one event every 5 s.
    await page.route(re.compile(r"/sse/crawler/events\?interval="), lambda route: route.abort())
    await page.reload()
    await expect(page.get_by_test_id("live-mode")).to_have_text("Polling every 5 s")
    await expect(page.get_by_test_id("stat-pages")).not_to_have_text("—")
    await page.unroute(re.compile(r"/sse/crawler/events\?interval="))

    await _nav(page, "Jobs").click()
    await expect(page.get_by_test_id("jobs-table")).to_be_visible()
    await expect(page.get_by_role("button", name="New job")).to_have_count(0)
    await expect(page.locator("[data-testid=jobs-table] button")).to_have_count(0)
    await page.goto(f"{served.base}/#/jobs/{served.job_id}")
    await expect(page.get_by_test_id("executions-table")).to_be_visible()
    await expect(page.get_by_role("button", name="Edit")).to_have_count(0)
    await _nav(page, "Frontier").click()
    await expect(page.get_by_role("heading", name="URLs")).to_be_visible()
    await expect(page.get_by_role("heading", name="Seed URLs")).to_have_count(0)
    await _nav(page, "Domains").click()
    await expect(page.get_by_test_id("domains-table")).to_be_visible()
    # A host's state in words (the circuit breaker's "closed" read as the opposite).
    await expect(
        page.locator("[data-testid=domains-table] td[data-label=State]").first
    ).to_have_text(re.compile("^(crawling|resting after errors|trying again|paused|disabled)$"))
    await expect(page.get_by_role("button", name=re.compile("^Reset"))).to_have_count(0)
    await expect(page.get_by_role("button", name=re.compile("^Settings of"))).to_have_count(0)
    await _nav(page, "Scheduler").click()
    await expect(page.get_by_test_id("distribution-score")).not_to_be_empty()
    await expect(page.get_by_role("button", name="Preview rebalance")).to_have_count(0)

    # The user's rate limit, reached for real: the dashboard says so.
    async with httpx.AsyncClient(base_url=served.base, timeout=5) as client:
        for _ in range(USER_RATE):
            response = await client.get("/api/v1/jobs", headers=served.user_headers())
            if response.status_code == 429:
                break
        assert response.status_code == 429
    await _nav(page, "Pages").click()
    await expect(page.get_by_role("alert").filter(has_text="Too many requests")).to_be_visible()
    await page.screenshot(path=screenshot_path("rate-limited"), full_page=True)
    assert errors == []


async def test_a_person_signs_in_with_a_name_and_password(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served = dashboard.served
    page, errors = await _page(dashboard.browser)
    await page.goto(served.base + "/")
    await page.get_by_label("User name").fill(PERSON)
    await page.get_by_label("Password").fill("not the password")
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await expect(page.get_by_test_id("signin-error")).to_have_text(
        "The user name or password is wrong."
    )
    await expect(page.get_by_label("Password")).to_have_value("")
    await page.get_by_label("Password").fill(PERSON_PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await page.get_by_role("heading", name="Overview").wait_for()
    await expect(page.get_by_test_id("role")).to_have_text("user")
    assert errors == []


async def test_the_event_parser_and_the_pager(dashboard: Dashboard) -> None:
    """The two pieces of logic the views stand on, run in the browser's own module loader."""
    page, errors = await _page(dashboard.browser)
    await page.goto(dashboard.served.base + "/")
    result = await page.evaluate(
        r"""async () => {
            const { parseEvents } = await import("/dashboard/js/sse.js");
            const { Pager } = await import("/dashboard/js/pager.js");
            const seen = [];
            const push = (name, data) => seen.push([name, data]);
            // Events cut anywhere by the network: a ping, a split data line, CRLF endings.
            let rest = parseEvents(": ping\n\nevent: stats\ndata: {\"pa", push);
            rest = parseEvents(rest + "ges\": 3}\n\nevent: end\r\ndata: {}\r\n\r\ndata: x", push);
            const offset = new Pager(2);
            offset.update({ items: [1, 2], total: 3 });
            const first = [offset.params(), offset.hasNext()];
            offset.page = 1;
            offset.update({ items: [3], total: 3 });
            const keyset = new Pager(2);
            keyset.update({ items: [1, 2], next_cursor: "c2" });
            keyset.page = 1;
            const second = keyset.params();
            keyset.update({ items: [3], next_cursor: null });
            return {
                seen, rest, first, last: [offset.params(), offset.hasNext()],
                keyset: [second, keyset.hasNext()],
            };
        }"""
    )
    assert result == {
        "seen": [["stats", {"pages": 3}], ["end", {}]],
        "rest": "data: x",
        "first": [{"limit": 2, "offset": 0}, True],
        "last": [{"limit": 2, "offset": 2}, False],
        "keyset": [{"limit": 2, "cursor": "c2"}, False],
    }
    assert errors == []


async def test_the_dashboard_says_when_the_api_is_down(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served = dashboard.served
    page, errors = await _page(dashboard.browser)
    await _sign_in(page, served.base, served.admin)
    await expect(page.get_by_test_id("live-mode")).to_have_text("Live")
    await asyncio.to_thread(stop, served)  # the last test: the module's server is gone now
    await expect(page.get_by_role("alert").filter(has_text="cannot be reached")).to_be_visible()
    await expect(page.get_by_test_id("live-mode")).to_contain_text("Offline")
    await page.screenshot(path=screenshot_path("api-down"), full_page=True)
    assert errors == []
