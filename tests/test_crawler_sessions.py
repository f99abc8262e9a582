"""The crawler's fetch features end to end: proxies, cookies, conditional re-crawls, breakers."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.crawl.crawler import Crawler
from harvestman.resilience import BreakerState
from harvestman.store import SqlStore
from proxyservers import HttpProxy, Socks5Server
from support.crawling import crawl


class Site:
    """A few linked pages that set a cookie, answer conditional requests and can fail."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.cookies_seen: list[str | None] = []
        self.conditional: list[str | None] = []
        self.failing = False
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.hits[path] += 1
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if path == "/sitemap.xml":
            raise web.HTTPNotFound()
        self.cookies_seen.append(request.cookies.get("session"))
        if path.startswith("/flaky/") and self.failing:
            return web.Response(status=503)
        etag = '"v1"'
        self.conditional.append(request.headers.get("If-None-Match"))
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        links = "".join(f'<a href="/p/{i}">p{i}</a> ' for i in range(1, 4))
        links += "".join(f'<a href="/flaky/{i}">f{i}</a> ' for i in range(1, 9))
        html = (
            f"<html><head><title>{path}</title></head><body><p>{links}</p>"
            f"<p>Some words so that this page is a real page with text in it.</p></body></html>"
        )
        response = web.Response(text=html, content_type="text/html", headers={"ETag": etag})
        if path == "/":
            response.set_cookie("session", "abc123")
        return response

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    state = Site()
    async with serve(state.handle) as port:
        state.port = port
        yield state


def rows(settings: object, query: str) -> list[tuple]:
    path = settings.database_url.removeprefix("sqlite:///")  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


async def test_fetches_go_through_the_proxies_and_a_dead_one_is_taken_out(
    site: Site, make_settings: SettingsFactory
) -> None:
    async with HttpProxy() as proxy, Socks5Server() as socks:
        dead = "http://127.0.0.1:9"  # nothing listens on the discard port here
        settings = make_settings(
            proxy_urls=[proxy.url, dead, socks.url],
            proxy_max_consecutive_failures=2,
            proxy_domain_rate=1000.0,
            crawl_max_depth=1,
        )
        crawler = (await crawl(settings, [site.root])).crawler

    assert site.hits["/p/1"] == 1  # every page arrived exactly once, through the live proxies
    assert proxy.requests > 0
    assert socks.connections > 0
    assert crawler.stats["proxy/failure"] == 2  # the dead proxy, twice, then out
    used = {p for (p,) in rows(settings, "SELECT DISTINCT proxy FROM crawled_pages")}
    assert used == {proxy.url, socks.url}
    health = dict(rows(settings, "SELECT url, active FROM proxies"))
    assert health == {proxy.url: 1, dead: 0, socks.url: 1}


async def test_robots_txt_goes_out_through_the_proxies_like_the_pages(
    site: Site, make_settings: SettingsFactory
) -> None:
    async with HttpProxy() as proxy:
        settings = make_settings(
            proxy_urls=[proxy.url], proxy_domain_rate=1000.0, crawl_max_depth=0
        )
        await crawl(settings, [site.root])

    assert site.hits["/robots.txt"] == 1
    assert proxy.targets.count(f"{site.root}robots.txt") == 1  # asked once, through the proxy
    assert site.root in proxy.targets


async def test_cookies_are_sent_back_and_kept_across_runs(
    site: Site, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    # A zero visited TTL: what the first run stores is due again at once.
    settings = make_settings(crawl_max_depth=1, crawl_visited_ttl=0)
    await crawl(settings, [site.root])
    assert site.cookies_seen[0] is None  # the first request, before the cookie was set
    assert set(site.cookies_seen[1:]) == {"abc123"}

    site.cookies_seen.clear()
    await crawl(make_settings(crawl_max_depth=1, crawl_visited_ttl=0), [site.root])
    assert site.cookies_seen
    assert set(site.cookies_seen) == {"abc123"}


async def test_a_recrawl_sends_the_etag_and_a_304_counts_as_unchanged(
    site: Site, make_settings: SettingsFactory
) -> None:
    await crawl(make_settings(crawl_max_depth=0, crawl_visited_ttl=0), [site.root])
    [(first_hash,)] = rows(make_settings(), "SELECT content_hash FROM urls WHERE depth = 0")

    crawler = (
        await crawl(make_settings(crawl_max_depth=0, crawl_visited_ttl=0), [site.root])
    ).crawler

    assert site.conditional == [None, '"v1"']
    assert crawler.stats["fetch/not_modified"] == 1
    [(status, code, content_hash)] = rows(
        make_settings(), "SELECT status, status_code, content_hash FROM urls WHERE depth = 0"
    )
    assert (status, code, content_hash) == ("completed", 304, first_hash)


async def test_a_failing_host_opens_its_breaker_and_it_closes_after_recovery(
    site: Site, make_settings: SettingsFactory
) -> None:
    site.failing = True
    settings = make_settings(
        crawl_max_depth=1, fetch_max_retries=1, breaker_open_seconds=0.5, crawl_concurrency=1
    )

    def recover_when_open(host: str, old: BreakerState, new: BreakerState) -> None:
        if new is BreakerState.OPEN:
            site.failing = False  # the host recovers while its breaker is open

    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        crawler = Crawler(settings, store, [site.root])
        assert crawler.breakers is not None
        report = crawler.breakers.on_transition

        def on_transition(host: str, old: BreakerState, new: BreakerState) -> None:
            recover_when_open(host, old, new)
            if report is not None:
                report(host, old, new)

        crawler.breakers.on_transition = on_transition
        await crawler.run()

    assert crawler.stats["breaker/open"] == 1
    assert crawler.stats["breaker/half_open"] >= 1
    assert crawler.stats["breaker/closed"] == 1
    assert crawler.stats["breaker/deferred"] >= 1
    done = dict(rows(settings, "SELECT status, count(*) FROM urls WHERE kind = 'page' GROUP BY 1"))
    assert done == {"completed": 12}  # every page, the flaky ones after the breaker closed
