"""Archive candidates and their scheduling; a real news site on 127.0.0.1 found through them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date

import aiohttp
import pytest
from aiohttp import web

from harvestman.discovery.archives import ArchiveScheduler, archive_candidates
from harvestman.errors import UrlError

STANDARD = [
    "https://a.org/archive",
    "https://a.org/archives",
    "https://a.org/sitemap",
    "https://a.org/sitemap.xml",
]


def test_date_listings_are_learnt_from_seen_urls_with_the_current_month() -> None:
    seen = [
        "https://a.org/2026/11/some-post",
        "https://a.org/news/2025/03/x",
        "https://a.org/news/2026/11/05/y",  # a day segment: the month listing is enough
        "http://a.org/news/2024/07/z",  # the same host over http
        "https://b.org/blog/2023/01/other-host",
        "https://a.org/1800/01/too-old",
        "https://a.org/2030/01/future",
        "https://a.org/a/b/c/d/2010/01/too-deep",
        "https://a.org/about",
    ]
    assert archive_candidates("https://a.org/", seen, date(2026, 12, 3)) == [
        *STANDARD,
        "https://a.org/2026/",
        "https://a.org/2026/12/",
        "https://a.org/2026/11/",
        "https://a.org/news/2026/",
        "https://a.org/news/2026/12/",
        "https://a.org/news/2026/11/",
        "https://a.org/news/2025/",
        "https://a.org/news/2025/03/",
        "https://a.org/news/2024/",
        "https://a.org/news/2024/07/",
    ]


def test_a_prefix_without_months_gets_year_listings_only() -> None:
    seen = ["https://a.org/events/2024/summer-fest", "https://a.org/events/2024/winter/13/x"]
    assert archive_candidates("https://a.org/", seen, date(2026, 12, 3)) == [
        *STANDARD,
        "https://a.org/events/2026/",
        "https://a.org/events/2024/",
    ]


def test_candidates_are_normalized_for_any_url_of_the_host() -> None:
    seen = ["http://xn--bcher-kva.de:8080/Aktuell/2026/01/a", "http://xn--bcher-kva.de/2025/x"]
    assert archive_candidates(
        "HTTP://Bücher.de:8080/some/page?x=1#top", seen, date(2026, 1, 9)
    ) == [
        "http://xn--bcher-kva.de:8080/archive",
        "http://xn--bcher-kva.de:8080/archives",
        "http://xn--bcher-kva.de:8080/sitemap",
        "http://xn--bcher-kva.de:8080/sitemap.xml",
        "http://xn--bcher-kva.de:8080/Aktuell/2026/",
        "http://xn--bcher-kva.de:8080/Aktuell/2026/01/",
    ]


def test_without_seen_urls_only_the_standard_paths() -> None:
    assert archive_candidates("https://a.org", [], date(2026, 1, 1)) == STANDARD
    assert archive_candidates("https://a.org", ["not a url", ""], date(2026, 1, 1)) == STANDARD


def test_a_root_that_is_not_a_crawlable_url_is_refused() -> None:
    with pytest.raises(UrlError):
        archive_candidates("ftp://a.org/", [], date(2026, 1, 1))


# -- scheduling ---------------------------------------------------------------------------------


def test_archives_are_due_once_a_day_per_host() -> None:
    scheduler = ArchiveScheduler(min_interval=86400, low_water=10)
    assert [
        scheduler.due("a.org", 0.0, 100),
        scheduler.due("b.org", 10.0, 100),
        scheduler.due("a.org", 86399.0, 100),
        scheduler.due("a.org", 86400.0, 100),
        scheduler.due("b.org", 86400.0, 100),
    ] == [True, True, False, True, False]


def test_archives_are_due_when_the_high_priority_frontier_runs_low() -> None:
    scheduler = ArchiveScheduler(min_interval=86400, low_water=10, low_water_cooldown=3600)
    assert scheduler.due("a.org", 0.0, 0) is True  # never run
    assert scheduler.due("a.org", 100.0, 0) is False  # still low: that run was for it
    assert scheduler.due("a.org", 200.0, 40) is False  # new work arrives ...
    assert scheduler.due("a.org", 1000.0, 9) is False  # ... runs low again within the cooldown
    assert scheduler.due("a.org", 3600.0, 3) is True  # ... once the cooldown is over
    assert scheduler.due("a.org", 9000.0, 3) is False
    assert scheduler.state() == {"a.org": 3600.0}


def test_last_runs_survive_a_restart() -> None:
    scheduler = ArchiveScheduler()
    scheduler.load({"a.org": 1000.0, "b.org": "garbage"})  # type: ignore[dict-item]
    assert scheduler.due("a.org", 2000.0, 100) is False
    assert scheduler.due("b.org", 2000.0, 100) is True
    assert scheduler.state() == {"a.org": 1000.0, "b.org": 2000.0}


# -- against a real site ------------------------------------------------------------------------


ARCHIVE_PAGES = {"/archive", "/sitemap.xml", "/news/2026/", "/news/2026/11/", "/news/2025/10/"}


@pytest.fixture
async def news_site() -> AsyncIterator[str]:
    """A news site whose older listings exist but are linked from nowhere."""

    async def handle(request: web.Request) -> web.Response:
        if request.path in ARCHIVE_PAGES:
            return web.Response(text="<html><body><p>listing</p></body></html>")
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_unlinked_date_archives_are_found_from_seen_urls(news_site: str) -> None:
    seen = [f"{news_site}/", f"{news_site}/news/2025/10/old-story", f"{news_site}/about"]
    candidates = archive_candidates(news_site, seen, date(2026, 11, 20))
    found = []
    async with aiohttp.ClientSession() as session:
        for url in candidates:
            async with session.get(url) as response:
                if response.status == 200:
                    found.append(url.removeprefix(news_site))
    assert [url.removeprefix(news_site) for url in candidates] == [
        "/archive",
        "/archives",
        "/sitemap",
        "/sitemap.xml",
        "/news/2026/",
        "/news/2026/11/",
        "/news/2025/",
        "/news/2025/10/",
    ]
    assert found == ["/archive", "/sitemap.xml", "/news/2026/", "/news/2026/11/", "/news/2025/10/"]
