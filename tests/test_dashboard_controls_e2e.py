"""The dashboard's controls end to end: Debian's Chromium (Playwright) against a real
``harvestman serve`` crawling the local test site.

Destructive actions ask first (cancel, delete, domain reset, a filtered re-queue); a cancelled
job resumes; sources are created, edited, cloned and deleted; failed URLs are re-queued; and
the small things a person meets: snippets, numbers in a German locale, unknown addresses, the
signed-in user, the API docs, the API coming back after a restart.

One server and one browser serve the module; the tests run in file order and the last one
restarts the server. Screenshots (1280×800) go to tests/artifacts/ or $HARVESTMAN_TEST_SHOTS.
"""

from __future__ import annotations

import asyncio
import re
import time
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
    Served,
    serve_dashboard,
    start_again,
    stop,
    wait_ready,
)
from testsite import TestSite

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(90),
    pytest.mark.xdist_group("dashboard_controls_e2e"),
]

WAIT = 15_000  # ms: the longest a view may take to show what the test waits for
VIEWPORT = {"width": 1280, "height": 800}


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
    workdir = tmp_path_factory.mktemp("dashboard-controls")
    async with (
        TestSite() as site,
        serve_dashboard(workdir, site.url("/")) as served,
        async_playwright() as pw,
    ):
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            await wait_ready(served)
            yield Dashboard(served, site, browser)
        finally:
            await browser.close()


async def _page(browser: Any, **context: Any) -> tuple[Any, list[str]]:
    ctx = await browser.new_context(viewport=VIEWPORT, **context)
    page = await ctx.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


async def _admin(dashboard: Dashboard, **context: Any) -> tuple[Any, list[str]]:
    page, errors = await _page(dashboard.browser, **context)
    await page.goto(dashboard.served.base + "/")
    await page.get_by_label("API token").fill(dashboard.served.admin)
    await page.get_by_role("button", name="Use token").click()
    await page.get_by_role("heading", name="Overview").wait_for()
    return page, errors


async def _api(served: Served, method: str, path: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=served.base, timeout=5) as client:
        return await client.request(method, path, headers=served.admin_headers(), **kwargs)


def _nav(page: Any, name: str) -> Any:
    return page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name=name, exact=True
    )


async def _job_tomorrow(served: Served) -> int:
    """A recurring job of the test site's source whose first run is tomorrow: the scheduler
    leaves it alone while the test steers it."""
    created = await _api(
        served, "POST", "/api/v1/jobs",
        json={"source_id": served.source_id, "url": "http://127.0.0.1:1/",
              "interval_minutes": 60, "next_run_at": time.time() + 86400},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


async def _crawl_name(served: Served) -> str:
    """The crawl the test site's job stores into, as the API names it."""
    source = (await _api(served, "GET", f"/api/v1/sources/{served.source_id}")).json()
    return str(source.get("namespace") or source.get("crawl") or f"source-{served.source_id}")


async def test_cancel_asks_first_and_a_cancelled_job_resumes(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served = dashboard.served
    job_id = await _job_tomorrow(served)
    page, errors = await _admin(dashboard)
    await page.goto(f"{served.base}/#/jobs/{job_id}")
    state = page.get_by_test_id("job-state")
    await expect(state).to_have_text("scheduled")

    # The edit form's way out is not called "Cancel" beside the job's "Cancel job".
    await page.get_by_role("button", name="Edit", exact=True).click()
    await expect(page.get_by_role("button", name="Discard changes")).to_be_visible()
    await expect(page.get_by_role("button", name="Cancel", exact=True)).to_have_count(0)
    await page.get_by_role("button", name="Discard changes").click()

    # Cancel asks first; keeping the job changes nothing.
    cancel = page.get_by_role("button", name=f"Cancel job {job_id}", exact=True)
    await expect(cancel).to_have_text("Cancel job")
    await cancel.click()
    dialog = page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text(f"Cancel job {job_id}?")
    await page.screenshot(path=screenshot_path("confirm-cancel"))
    await dialog.get_by_role("button", name="Keep the job").click()
    await expect(dialog).to_have_count(0)
    assert (await _api(served, "GET", f"/api/v1/jobs/{job_id}")).json()["status"] == "scheduled"
    # Escape says no as well.
    await cancel.click()
    await expect(dialog).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    await expect(state).to_have_text("scheduled")

    # Confirmed: cancelled, no next run, and it can be resumed or run now.
    await cancel.click()
    await dialog.get_by_role("button", name=f"Yes, cancel job {job_id}").click()
    await expect(state).to_have_text("cancelled")
    await expect(page.get_by_test_id("job-next-run")).to_contain_text("none: cancelled")
    actions = page.get_by_test_id(f"actions-{job_id}")
    await expect(actions.get_by_role("button")).to_have_text(["Resume", "Run now"])
    await page.screenshot(path=screenshot_path("job-cancelled"))
    await actions.get_by_role("button", name=f"Resume job {job_id}").click()
    await expect(state).to_have_text("scheduled")
    await expect(page.get_by_test_id("job-next-run")).not_to_contain_text("none")

    # Deleting the job asks too, then the jobs list says it is gone.
    await page.get_by_role("button", name="Delete job").click()
    await (
        page.get_by_role("alertdialog")
        .get_by_role("button", name=f"Yes, delete job {job_id}")
        .click()
    )
    await expect(page.get_by_test_id("jobs-status")).to_have_text(f"Job {job_id} deleted.")
    assert (await _api(served, "GET", f"/api/v1/jobs/{job_id}")).status_code == 404
    assert errors == []


async def test_a_job_edit_reads_whole_units_and_sends_only_what_changed(
    dashboard: Dashboard,
) -> None:
    """A job made with 360 minutes reads "6 hours" in its form, as its page says "6 h"; saved
    untouched it keeps its interval and its next run (the same interval in other units is no
    change, which would have placed the run anew); a new interval is saved and moves it."""
    from playwright.async_api import expect

    served = dashboard.served
    planned = time.time() + 86400
    created = await _api(
        served, "POST", "/api/v1/jobs",
        json={"source_id": served.source_id, "url": "http://127.0.0.1:1/",
              "interval_minutes": 360, "interval_type": "minutes", "next_run_at": planned},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    job_id = int(created.json()["id"])
    page, errors = await _admin(dashboard)
    await page.goto(f"{served.base}/#/jobs/{job_id}")
    await expect(page.get_by_test_id("job-state")).to_have_text("scheduled")

    await page.get_by_role("button", name="Edit", exact=True).click()
    form = page.get_by_role("form", name=f"Edit job {job_id}")
    await expect(form.get_by_label("Every (empty: run once)")).to_have_value("6")
    await expect(form.get_by_label("Unit")).to_have_value("hours")
    await form.get_by_role("button", name="Save changes").click()
    await expect(page.get_by_text("Saved.")).to_be_visible()
    job = (await _api(served, "GET", f"/api/v1/jobs/{job_id}")).json()
    assert (job["interval_minutes"], job["interval_type"]) == (360, "minutes")
    assert job["next_run_at"] == pytest.approx(planned)

    await page.get_by_role("button", name="Edit", exact=True).click()
    await form.get_by_label("Every (empty: run once)").fill("2")
    await form.get_by_role("button", name="Save changes").click()
    await expect(page.get_by_text("Saved.")).to_be_visible()
    job = (await _api(served, "GET", f"/api/v1/jobs/{job_id}")).json()
    assert (job["interval_minutes"], job["interval_type"]) == (2, "hours")
    assert job["next_run_at"] < time.time() + 2 * 3600 + 60  # placed within the new interval
    await _api(served, "DELETE", f"/api/v1/jobs/{job_id}")
    assert errors == []


async def test_sources_are_created_edited_cloned_and_deleted(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served, site = dashboard.served, dashboard.site
    page, errors = await _admin(dashboard)
    await _nav(page, "Sources").click()
    table = page.get_by_test_id("sources-table")
    await expect(table).to_contain_text("testsite")

    # Create: the notice names the job the API made, with a link to it.
    await page.get_by_role("button", name="New source").click()
    form = page.get_by_test_id("source-create-form")
    await form.get_by_label("Name").fill("shop")
    await form.get_by_label("Start URLs (one per line)").fill(site.url("/about.html"))
    await form.get_by_role("button", name="Create source").click()
    status = page.get_by_test_id("sources-status")
    await expect(status).to_contain_text(re.compile(r"Source shop \(#\d+\) created with job #\d+"))
    job_link = status.get_by_test_id("created-job")
    job_id = int((await job_link.inner_text()).removeprefix("job #"))
    shop = (await _api(served, "GET", "/api/v1/sources", params={"name": "shop"})).json()
    [source] = shop["items"]
    assert [j["id"] for j in source["jobs"]] == [job_id]
    row = table.locator(f"tr[data-key='{source['id']}']")
    await expect(row).to_contain_text(f"#{job_id}")
    await page.screenshot(path=screenshot_path("sources"))

    # A second job for the same source is said to share its namespace.
    await _nav(page, "Jobs").click()
    await page.get_by_role("button", name="New job").click()
    job_form = page.get_by_test_id("job-create-form")
    await job_form.get_by_label("Source").select_option(label=f"shop (#{source['id']})")
    await expect(page.get_by_test_id("job-source-hint")).to_contain_text(
        f"shop already has job #{job_id}"
    )
    await page.screenshot(path=screenshot_path("job-form-duplicate"))
    await job_form.get_by_role("button", name="Discard").click()

    # Edit: only what changed is sent; the row shows the new name.
    await _nav(page, "Sources").click()
    await table.get_by_role("button", name="Edit source shop").click()
    edit = page.get_by_test_id("source-edit-form")
    await edit.get_by_label("Name").fill("shop two")
    await edit.get_by_role("button", name="Save source").click()
    await expect(status).to_have_text(f"Source shop two (#{source['id']}) saved.")
    await expect(row).to_contain_text("shop two")

    # Crawl options: each on, off or the service's setting; a refused value shows under its
    # field; an untouched form leaves them as they are.
    async def options() -> dict[str, Any]:
        found = (await _api(served, "GET", f"/api/v1/sources/{source['id']}")).json()
        return {key: value for key, value in found["options"].items() if value is not None}

    await table.get_by_role("button", name="Edit source shop two").click()
    await edit.get_by_text("Crawl options").click()
    await edit.get_by_label("Page text").select_option("on")
    await edit.get_by_label("Feeds").select_option("off")
    rate = edit.get_by_label("New URLs per second (0: no limit)")
    await rate.fill("-3")
    await edit.get_by_role("button", name="Save source").click()
    await expect(rate).to_have_attribute("aria-invalid", "true")
    await expect(edit).to_contain_text("greater than or equal to 0")
    await rate.fill("50")
    await edit.get_by_role("button", name="Save source").click()
    await expect(status).to_have_text(f"Source shop two (#{source['id']}) saved.")
    assert await options() == {"store_text": True, "feeds": False, "ingest_rate": 50}
    await table.get_by_role("button", name="Edit source shop two").click()
    await expect(edit.get_by_label("Page text")).to_have_value("on")  # opened: some are set
    await edit.get_by_label("Name").fill("shop two")
    await edit.get_by_role("button", name="Save source").click()
    await expect(status).to_have_text(f"Source shop two (#{source['id']}) saved.")
    assert await options() == {"store_text": True, "feeds": False, "ingest_rate": 50}
    await table.get_by_role("button", name="Edit source shop two").click()
    await edit.get_by_label("Feeds").select_option("")  # back to the service's setting
    await edit.get_by_role("button", name="Save source").click()
    await expect(status).to_have_text(f"Source shop two (#{source['id']}) saved.")
    assert await options() == {"store_text": True, "ingest_rate": 50}

    # Clone: a new source with the same start URLs and its own job.
    await table.get_by_role("button", name="Clone source shop two").click()
    clone = page.get_by_test_id("source-clone-form")
    await expect(clone.get_by_label("Name")).to_have_value("shop two (copy)")
    await expect(clone.get_by_label("Start URLs (one per line)")).to_have_value(
        site.url("/about.html")
    )
    await clone.get_by_role("button", name="Create source").click()
    await expect(status).to_contain_text("Source shop two (copy)")
    await expect(table).to_contain_text("shop two (copy)")

    # Delete asks first; keeping it changes nothing; confirmed, it is gone.
    await table.get_by_role("button", name="Delete source shop two (copy)").click()
    dialog = page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text("Its job and its run history are deleted too")
    await page.screenshot(path=screenshot_path("confirm-delete-source"))
    await dialog.get_by_role("button", name="Keep the source").click()
    await expect(table).to_contain_text("shop two (copy)")
    await table.get_by_role("button", name="Delete source shop two (copy)").click()
    await dialog.get_by_role("button", name="Yes, delete source shop two (copy)").click()
    await expect(status).to_contain_text("deleted")
    await expect(table).not_to_contain_text("shop two (copy)")
    assert errors == []


async def test_failed_urls_are_requeued_one_or_all_that_match(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served, site = dashboard.served, dashboard.site
    crawl = await _crawl_name(served)
    # The test site's 404 and 500 fail for good once the start job has fetched them.
    deadline = time.monotonic() + 60
    while True:
        dead = (await _api(served, "GET", "/api/dead-letter", params={"crawl": crawl})).json()
        classes = {t["type"]: t["count"] for t in dead.get("by_type", [])}
        if classes.get("HttpStatusError", 0) >= 2:
            break
        assert time.monotonic() < deadline, f"no dead letters: {dead}"
        await asyncio.sleep(0.5)

    page, errors = await _admin(dashboard)
    await _nav(page, "Errors").click()
    await page.get_by_label("Crawl").select_option(crawl)
    table = page.get_by_test_id("dead-table")
    await expect(table).to_contain_text(site.url("/status/404"))
    await expect(page.get_by_test_id("dead-summary")).to_contain_text("HttpStatusError")
    # The count is of retries (the 404 failed at once: 0), and the heading says so.
    await expect(table.get_by_role("columnheader", name="Retries")).to_be_visible()
    # A run asks for it again on its own once its re-crawl time (7 days) has passed.
    row_404 = table.get_by_role("row").filter(has_text=site.url("/status/404"))
    await expect(row_404).to_contain_text(re.compile(r"in (6\.9|7\.0) d"))
    # The log of recent errors says which URL each was about.
    await expect(page.get_by_test_id("error-log-table")).to_contain_text(site.url("/status/500"))
    await page.screenshot(path=screenshot_path("errors"))

    # One URL back in the frontier.
    await table.get_by_role("button", name=f"Re-queue {site.url('/status/404')}").click()
    notice = page.get_by_test_id("errors-status")
    await expect(notice).to_have_text(f"1 URL back in the frontier of {crawl}, due now.")

    # All that match a class: counted and confirmed first.
    await page.get_by_label("Error class").select_option(value="HttpStatusError")
    await expect(table).to_contain_text(site.url("/status/500"))
    before = (
        await _api(
            served, "GET", "/api/dead-letter", params={"crawl": crawl, "type": "HttpStatusError"}
        )
    ).json()["total"]
    await page.get_by_test_id("requeue-filtered").click()
    dialog = page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text("that failed with HttpStatusError")
    await page.screenshot(path=screenshot_path("confirm-requeue"))
    await dialog.get_by_role("button", name=re.compile("^Yes, re-queue")).click()
    # The noun agrees with what was re-queued ("1 URL", "9 URLs"), which may be more than the
    # dialog counted: URLs that failed since the list was read go back too.
    await expect(notice).to_have_text(
        re.compile(
            rf"^(1 URL|(?!1 )[\d,]+ URLs) back in the frontier of {re.escape(crawl)}, due now\.$"
        )
    )
    assert before >= 1

    # Every crawl at once: each row says its crawl; a bulk re-queue needs one crawl chosen.
    # The re-queue emptied the list, and the view reads it once when the crawl is chosen: wait
    # for a URL to fail for good again (the site's 404 and 500 do, after their retries; on a
    # busy machine later than the page gets here).
    deadline = time.monotonic() + 60
    while not (await _api(served, "GET", "/api/dead-letter")).json()["total"]:
        assert time.monotonic() < deadline, "no dead letter came back after the re-queue"
        await asyncio.sleep(0.5)
    await page.get_by_label("Error class").select_option(value="")
    await page.get_by_label("Crawl").select_option("")  # "All crawls"
    await expect(page.get_by_test_id("dead-summary")).to_contain_text("in every crawl")
    await expect(table.get_by_role("columnheader", name="Crawl")).to_be_visible()
    await expect(table).to_contain_text(crawl)
    await expect(page.get_by_test_id("requeue-filtered")).to_be_hidden()

    # A host with no failure: the summary says so once, with no empty table repeating it.
    await page.get_by_label("Host").fill("nothing-failed.invalid")
    await page.get_by_role("button", name="Show").click()
    await expect(page.get_by_test_id("dead-summary")).to_have_text(
        "No failed URL in any crawl on nothing-failed.invalid."
    )
    await expect(page.get_by_text("No failed URL")).to_have_count(1)
    await expect(table).to_have_count(0)
    assert errors == []


async def test_domain_reset_asks_first(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    site = dashboard.site
    page, errors = await _admin(dashboard)
    await _nav(page, "Domains").click()
    reset = page.get_by_role("button", name=f"Reset {site.host}")
    await reset.click()
    dialog = page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text(f"Reset {site.host}?")
    await page.screenshot(path=screenshot_path("confirm-reset"))
    await dialog.get_by_role("button", name="Leave it as it is").click()
    await expect(page.get_by_test_id("domains-status")).to_have_text("")
    await reset.click()
    await dialog.get_by_role("button", name=f"Yes, reset {site.host}").click()
    await expect(page.get_by_test_id("domains-status")).to_contain_text(f"{site.host} reset")
    await page.screenshot(path=screenshot_path("domains"))
    assert errors == []


async def _hold(page: Any, held: str) -> asyncio.Event:
    """Hold the page's requests whose address contains ``held`` until the returned event is
    set; every other request goes on at once."""
    release = asyncio.Event()

    async def route(route: Any) -> None:
        if held in route.request.url:
            await release.wait()
        await route.continue_()

    await page.route(re.compile(r"/api/"), route)
    return release


async def _answered_late(page: Any, release: asyncio.Event, held: str) -> None:
    """Let the held read answer, after the later one has been drawn, and give the view the
    time to draw it if it would."""
    async with page.expect_response(lambda r: held in r.url):
        release.set()
    await page.wait_for_timeout(300)


async def test_a_late_answer_to_earlier_filters_does_not_replace_the_list(
    dashboard: Dashboard,
) -> None:
    """Filters changed twice send two reads; the first may answer last. The view shows the
    second's list (each filtering view reads through `api.latestOnly`)."""
    from playwright.async_api import expect

    site = dashboard.site
    crawl = await _crawl_name(dashboard.served)
    fetched = site.url("/about.html")  # a 200 page, completed in the frontier

    page, errors = await _admin(dashboard)
    release = await _hold(page, "status_code=200")
    await _nav(page, "Pages").click()
    await page.get_by_label("Crawl").select_option(crawl)
    table = page.get_by_test_id("pages-table")
    await expect(table).to_contain_text(fetched)
    await page.get_by_label("HTTP status").fill("200")
    await page.get_by_role("button", name="Search").click()  # held
    await page.get_by_label("HTTP status").fill("404")
    await page.get_by_role("button", name="Search").click()
    view = page.locator("main")  # the 404s' table, or the words saying there is none yet
    await expect(view).not_to_contain_text(fetched)
    await _answered_late(page, release, "status_code=200")
    await expect(view).not_to_contain_text(fetched)

    # The frontier: a status chosen, then another.
    release = await _hold(page, "status=completed")
    await _nav(page, "Frontier").click()
    await page.get_by_label("Crawl").select_option(crawl)
    await page.get_by_label("Status").select_option("completed")  # held
    async with page.expect_response(lambda r: "status=failed" in r.url):
        await page.get_by_label("Status").select_option("failed")
    await _answered_late(page, release, "status=completed")
    await expect(view).not_to_contain_text(fetched)
    assert errors == []


async def test_the_small_things_a_person_meets(dashboard: Dashboard) -> None:
    from playwright.async_api import expect

    served = dashboard.served
    # A person's name and role in the header, and the API docs one click away.
    page, errors = await _page(dashboard.browser, locale="de-DE")
    await page.goto(served.base + "/")
    await page.get_by_label("User name").fill(PERSON)
    await page.get_by_label("Password").fill(PERSON_PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await page.get_by_role("heading", name="Overview").wait_for()
    await expect(page.get_by_test_id("user")).to_have_text(PERSON)
    await expect(page.get_by_test_id("role")).to_have_text("user")
    docs = page.get_by_role("link", name="API docs")
    assert await docs.get_attribute("href") == "/docs"
    async with httpx.AsyncClient(base_url=served.base, timeout=5) as client:
        assert (await client.get("/docs")).status_code == 200

    # One number format in a German locale: thousands and decimals alike.
    await expect(page.get_by_test_id("stat-rate")).to_have_text(re.compile(r"^\d+,\d\d$"))
    formatted = await page.evaluate(
        """async () => {
            const f = await import("/dashboard/js/format.js");
            return [f.num(1051), f.decimal(0.32, 2), f.pct(0.125), f.bytes(1536),
                    f.span(2.5 * 86400), f.span(1109.8 * 86400), f.ms(0), f.ms(12), f.ms(null)];
        }"""
    )
    # A fetch stored as 0 ms (whole milliseconds, cut down) took under one, not none.
    assert formatted == [
        "1.051", "0,32", "12,5%", "1,5 KB", "2,5 d", "1.110 d", "<1 ms", "12 ms", "—"
    ]  # fmt: skip
    await page.screenshot(path=screenshot_path("overview-de"))

    # A search snippet keeps the spaces around its marks.
    snippet = await page.evaluate(
        """async () => {
            const { marked } = await import("/dashboard/js/views/pages.js");
            const span = marked("Steel <mark>Kettle</mark> 1.7L &amp; <mark>lid</mark> &lt;b&gt;");
            return [span.textContent, span.querySelectorAll("mark").length];
        }"""
    )
    assert snippet == ["Steel Kettle 1.7L & lid <b>", 2]

    # A job whose time has come is due, not "12 s ago"; a paused one's time is only a time.
    due = await page.evaluate(
        """async () => {
            const { whenDue } = await import("/dashboard/js/views/jobs.js");
            const now = 1_800_000_000;
            return [["scheduled", now - 12], ["pending", now - 7200], ["scheduled", now + 90],
                    ["paused", now - 12]].map(([status, at]) =>
                whenDue({ status, next_run_at: at }, now));
        }"""
    )
    assert due == ["due now", "overdue by 2 h", "in 1 min 30 s", "12 s ago"]
    # A running job's next run comes after this run, not at the time it was due.
    running = await page.evaluate(
        """async () => {
            const { nextRunText } = await import("/dashboard/js/views/job.js");
            return nextRunText({ status: "running", next_run_at: 1_800_000_000 });
        }"""
    )
    assert running == "after this run"

    # The success rate says which runs it is over: those that completed or failed.
    success = await page.evaluate(
        """async () => {
            const { successText } = await import("/dashboard/js/views/runlog.js");
            return [{ by_status: { running: 1 } },
                    { by_status: { completed: 1 }, success_rate: 1 },
                    { by_status: { completed: 4, failed: 1, cancelled: 2 }, success_rate: 0.8 }]
                .map(successText);
        }"""
    )
    assert success == [
        "No run has ended yet.",
        "1 of 1 run completed (100,0%).",
        "4 of 5 runs completed (80,0%); 2 cancelled, not counted.",
    ]

    # The price chart's time labels never overlap nor repeat, whatever the span.
    overlaps = await page.evaluate(
        """async () => {
            const { priceChart } = await import("/dashboard/js/views/product.js");
            const day = 86400, now = 1_800_000_000;
            const found = [];
            for (const span of [600, 3 * day, 40 * day, 400 * day]) {
                const changes = [{ price: "12.99", currency: "EUR", changed_at: now - span },
                                 { price: "14.50", currency: "EUR", changed_at: now - span / 2 }];
                const box = document.createElement("div");
                box.style.width = "420px";
                box.append(priceChart(changes, now));
                document.body.append(box);
                const texts = [...box.querySelectorAll("text")]
                    .filter((t) => t.getAttribute("y") === String(220 - 6));
                const labels = texts.map((t) => t.getBoundingClientRect());
                for (let i = 1; i < labels.length; i += 1) {
                    if (labels[i].left < labels[i - 1].right) found.push(span);
                }
                const names = texts.map((t) => t.textContent);
                if (new Set(names).size < names.length) found.push(`${span}: ${names}`);
                box.remove();
            }
            return found;
        }"""
    )
    assert overlaps == []

    # An unknown address says so instead of showing the overview.
    await page.goto(f"{served.base}/#/no-such-view")
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    await expect(page.get_by_test_id("not-found")).to_contain_text("#/no-such-view")
    await page.screenshot(path=screenshot_path("not-found"))
    assert errors == []


async def test_the_dashboard_recovers_when_serve_comes_back(dashboard: Dashboard) -> None:
    """The last test: the server is restarted under the open page."""
    from playwright.async_api import expect

    served = dashboard.served
    page, errors = await _admin(dashboard)
    await _nav(page, "Sources").click()
    await expect(page.get_by_test_id("sources-table")).to_be_visible()
    await asyncio.to_thread(stop, served)
    # A view opened while the server is away: the banner says it cannot be reached.
    await _nav(page, "Jobs").click()
    banner = page.get_by_role("alert").filter(has_text="cannot be reached")
    await expect(banner).to_be_visible()
    await page.screenshot(path=screenshot_path("api-down"))
    start_again(served)
    await wait_ready(served)
    # Back without a reload: the banner goes and the view draws itself again.
    await expect(banner).to_have_count(0)
    await expect(page.get_by_test_id("jobs-table")).to_be_visible()
    assert errors == []
