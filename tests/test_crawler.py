"""End-to-end crawls of the local test site through the crawler, on a real SQLite store."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from conftest import SettingsFactory
from harvestman.crawl.crawler import Crawler
from harvestman.store import SqlStore
from support.crawling import crawl
from testsite import (
    EXPECTED,
    EXPECTED_DEPTHS,
    EXPECTED_FINAL_URLS,
    EXPECTED_HITS,
    EXPECTED_STATUS,
    EXPECTED_TITLES,
    GARBAGE,
    TestSite,
)


def relative(site: TestSite, url: str) -> str:
    assert url.startswith(site.base), url
    return "/" + url[len(site.base) :].lstrip("/")


def by_status(site: TestSite, rows: list[dict], kind: str = "page") -> dict[str, set[str]]:
    result: dict[str, set[str]] = {}
    for row in rows:
        if row["kind"] == kind:
            result.setdefault(row["status"], set()).add(relative(site, row["url"]))
    return result


async def test_crawl_of_the_test_site_ends_with_the_exact_sets(
    full_site: TestSite, make_settings: SettingsFactory
) -> None:
    site = full_site
    crawler, rows, pages = await crawl(make_settings(), [site.url("/")])

    states = by_status(site, rows)
    assert states.get("completed") == EXPECTED["completed"]
    assert states.get("blocked") == EXPECTED["blocked"]
    failed = {
        relative(site, r["url"]): r["error_class"]
        for r in rows
        if r["status"] == "failed" and r["kind"] == "page"
    }
    assert failed == {path: cls.__name__ for path, cls in EXPECTED["failed"].items()}
    assert set(states) == {"completed", "failed", "blocked"}  # nothing left pending or leased

    assert {path: site.hits[path] for path in EXPECTED_HITS} == EXPECTED_HITS

    by_path = {relative(site, r["url"]): r for r in rows if r["kind"] == "page"}
    assert {p: by_path[p]["depth"] for p in EXPECTED_DEPTHS} == EXPECTED_DEPTHS
    for path, status in EXPECTED_STATUS.items():
        assert by_path[path]["status_code"] == status

    page_by_path = {
        relative(site, p["url"]): p for p in pages if relative(site, p["url"]) != "/sitemap.xml"
    }
    assert {p: page_by_path[p]["title"] for p in EXPECTED_TITLES} == EXPECTED_TITLES
    for path, final in EXPECTED_FINAL_URLS.items():
        assert relative(site, page_by_path[path]["final_url"]) == final
        assert json.loads(page_by_path[path]["redirects"])[0] == site.url(path)
    # Every fetch that got as far as a request has a page row with its error, if any.
    assert set(page_by_path) == EXPECTED["completed"] | set(EXPECTED["failed"])
    assert page_by_path["/slow.html"]["error_class"] == "FetchTimeout"
    assert crawler.stats["robots/denied"] == len(EXPECTED["blocked"])
    # robots.txt declares /sitemap.xml: it is crawled as a sitemap and its pages are known.
    assert by_status(site, rows, "sitemap") == {"completed": {"/sitemap.xml"}}
    assert crawler.stats["sitemap/urls"] == 2


async def test_sitemaps_can_be_turned_off(site: TestSite, make_settings: SettingsFactory) -> None:
    _, rows, _ = await crawl(make_settings(discovery_sitemaps=False), [site.url("/")])
    assert {row["kind"] for row in rows} == {"page"}
    assert site.hits["/sitemap.xml"] == 0


async def test_a_second_run_fetches_nothing_already_completed(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    await crawl(settings, [site.url("/")])
    site.reset_counts()

    crawler, rows, _ = await crawl(settings, [site.url("/")])

    assert sum(site.hits.values()) == 0  # robots.txt comes from the store's cache too
    assert crawler.stats["fetch/pages"] == 0
    assert by_status(site, rows).get("completed") == site.expected["completed"]


async def test_max_pages_stops_the_crawl_and_the_next_run_goes_on(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(crawl_max_pages=5)
    _, rows, _ = await crawl(settings, [site.url("/")])
    first = by_status(site, rows)
    fetched = [row for row in rows if row["status"] in ("completed", "failed")]
    assert len(fetched) == 5  # pages and the sitemap: every fetch counts
    assert "in_progress" not in {row["status"] for row in rows}  # leases went back to pending

    _, rows, _ = await crawl(make_settings(), [site.url("/")])

    assert by_status(site, rows).get("completed") == site.expected["completed"]
    # Nothing completed in the first run was fetched again in the second.
    for path in first.get("completed", set()):
        assert site.hits[path] == site.expected_hits[path], path


async def test_max_depth_limits_how_far_links_are_followed(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    _, rows, _ = await crawl(make_settings(crawl_max_depth=1), [site.url("/")])

    pages = [row for row in rows if row["kind"] == "page"]
    assert {row["depth"] for row in pages} == {0, 1}
    recorded = {relative(site, row["url"]) for row in pages}
    assert recorded == {p for p, d in site.expected_depths.items() if d <= 1}


async def test_crawl_delay_spaces_requests_to_a_host(make_settings: SettingsFactory) -> None:
    async with TestSite(crawl_delay=0.2) as site:
        await crawl(make_settings(crawl_max_pages=8, crawl_concurrency=8), [site.url("/")])
        times = [t for t, _ in site.log]

    assert len(times) >= 8
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.2 - 0.05, gaps


@pytest.mark.parametrize("per_host", [1, 4])
async def test_delay_zero_with_per_host_concurrency(
    site: TestSite, make_settings: SettingsFactory, per_host: int
) -> None:
    _, rows, _ = await crawl(make_settings(frontier_per_host_concurrency=per_host), [site.url("/")])
    assert by_status(site, rows).get("completed") == site.expected["completed"]


async def test_bad_seeds_are_reported_and_good_ones_crawled(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(crawl_max_depth=0)
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        crawler = Crawler(settings, store, ["mailto:x@example.com", "http://", site.url("/")])
        await crawler.run()
    assert crawler.rejected_seeds == [("mailto:x@example.com", "scheme"), ("http://", "no_host")]
    assert crawler.stats["fetch/pages"] == 1


async def test_garbage_pages_are_recorded_with_their_reasons_and_good_short_pages_kept(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        crawl_max_depth=0, validate_hard_cooldown=0.1, fetch_max_retries=1, discovery_sitemaps=False
    )
    seeds = [site.url(path) for path in GARBAGE] + [site.url("/private/open.html")]
    crawler, rows, pages = await crawl(settings, seeds)

    verdicts = {
        relative(site, p["url"]): (p["validation_status"], p["rejection_reason"]) for p in pages
    }
    assert verdicts == {**GARBAGE, "/private/open.html": ("ok", None)}
    kept = next(p for p in pages if p["url"] == site.url("/private/open.html"))
    assert kept["title"] == "Open private page"
    rejected = [p for p in pages if p["validation_status"] != "ok"]
    # Content is held back from every rejected page; a soft one keeps what names it.
    assert all(p["content_hash"] is None and p["text"] is None for p in rejected)
    titles = {relative(site, p["url"]): p["title"] for p in rejected}
    assert titles == {
        "/garbage/enable-js.html": "App",
        "/garbage/denied.html": None,
        "/garbage/shell.html": "x",
    }
    states = {relative(site, r["url"]): (r["status"], r["error_class"]) for r in rows}
    # The host that said "access denied" cooled down and was asked once more, then given up.
    assert states["/garbage/denied.html"] == ("failed", "ContentRejected")
    assert site.hits["/garbage/denied.html"] == 2
    assert states["/garbage/enable-js.html"] == ("completed", "ContentRejected")
    assert crawler.stats["validate/soft/needs_js"] == 1


async def test_a_crawler_stopped_while_it_starts_ends_without_fetching(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    # A worker stopped (SIGTERM) during its start-up must not keep crawling: the stop came
    # before the crawl had a task to cancel.
    settings = make_settings()
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        crawler = Crawler(settings, store, [site.url()], worker_mode=True, exit_when_done=False)
        crawler.stop()
        await crawler.run()
    assert crawler.stopped_early
    assert site.log == []


async def test_outcomes_are_written_at_once_when_the_frontier_has_nothing_else(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    # A batch would wait a minute: only the frontier's starving can bring each level's links to
    # the store. The crawl ends with the same sets as with the suite's short flush interval.
    settings = make_settings(store_flush_interval=60.0)
    _, rows, _ = await asyncio.wait_for(crawl(settings, [site.url("/")]), 120)

    states = by_status(site, rows)
    assert states.get("completed") == site.expected["completed"]
    assert states.get("blocked") == site.expected["blocked"]
    assert set(states) == {"completed", "failed", "blocked"}
