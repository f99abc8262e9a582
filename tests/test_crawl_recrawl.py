"""Re-crawls: what a second crawl of a namespace fetches again once the visited TTL has run out,
against a real site whose home page answers 304 to a conditional request."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from support.crawling import crawl

TTL = 600.0
PAGE = (
    "<html><head><title>{title}</title></head><body><p>A page with words enough to be kept "
    "as real content by the validator, which wants a sentence or two.</p>{links}</body></html>"
)


class Home:
    """``/`` (ETag ``"home-v1"``: 304 when asked with it) links to ``/a``, which links to
    ``/b``; the children have no validators, so a re-fetch is a 200."""

    ETAG = '"home-v1"'

    def __init__(self) -> None:
        self.port = 0
        self.hits: Counter[tuple[str, int]] = Counter()
        self.gone: set[str] = set()  # paths that answer 404

    async def handle(self, request: web.Request) -> web.Response:
        response = self._answer(request)
        self.hits[(request.path, response.status)] += 1
        return response

    def _answer(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path in self.gone:
            return web.Response(status=404, text="gone")
        if request.path == "/":
            if request.headers.get("If-None-Match") == self.ETAG:
                return web.Response(status=304, headers={"ETag": self.ETAG})
            html = PAGE.format(title="Home", links='<a href="/a">a</a>')
            return web.Response(text=html, content_type="text/html", headers={"ETag": self.ETAG})
        if request.path == "/a":
            html = PAGE.format(title="A", links='<a href="/b">b</a>')
            return web.Response(text=html, content_type="text/html")
        if request.path == "/b":
            return web.Response(text=PAGE.format(title="B", links=""), content_type="text/html")
        raise web.HTTPNotFound()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
async def home() -> AsyncIterator[Home]:
    site = Home()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def test_pages_under_a_304_start_page_come_due_again_after_their_ttl(
    home: Home, make_settings: SettingsFactory
) -> None:
    settings = make_settings(crawl_visited_ttl=TTL, discovery_sitemaps=False)
    start = 1_800_000_000.0

    await crawl(settings, home.root, clock=lambda: start)
    assert (home.hits[("/", 200)], home.hits[("/a", 200)], home.hits[("/b", 200)]) == (1, 1, 1)

    # Within the TTL nothing but the seed is asked again.
    within = await crawl(settings, home.root, clock=lambda: start + TTL / 2)
    assert within.crawler.stats["fetch/pages"] == 0
    assert (home.hits[("/", 304)], home.hits[("/a", 200)], home.hits[("/b", 200)]) == (0, 1, 1)

    # Past it, the home page is unchanged (304: no body, no links), yet its children are due.
    later = await crawl(settings, home.root, clock=lambda: start + TTL + 1)
    assert (home.hits[("/", 304)], home.hits[("/a", 200)], home.hits[("/b", 200)]) == (1, 2, 2)
    assert later.crawler.stats["fetch/not_modified"] == 1
    assert {(row["url"].removeprefix(home.root), row["status"]) for row in later.rows} == {
        ("", "completed"),
        ("a", "completed"),
        ("b", "completed"),
    }


async def test_pages_past_a_shrunken_max_depth_stay_as_they_are(
    home: Home, make_settings: SettingsFactory
) -> None:
    start = 1_800_000_000.0
    await crawl(make_settings(crawl_visited_ttl=TTL, discovery_sitemaps=False), home.root,
                clock=lambda: start)  # fmt: skip

    shallow = make_settings(crawl_visited_ttl=TTL, discovery_sitemaps=False, crawl_max_depth=1)
    later = await crawl(shallow, home.root, clock=lambda: start + TTL + 1)

    assert (home.hits[("/", 304)], home.hits[("/a", 200)], home.hits[("/b", 200)]) == (1, 2, 1)
    depth_two = next(row for row in later.rows if row["url"].endswith("/b"))
    assert (depth_two["status"], depth_two["next_crawl_at"]) == ("completed", start + TTL)


async def test_a_page_that_failed_is_asked_for_again_after_its_ttl(
    home: Home, make_settings: SettingsFactory
) -> None:
    """A dead letter is not dead for good: the next crawl past its TTL asks for it again, as for
    a page it fetched (a recurring job's planned run, not only "Run now" or a re-queue)."""
    settings = make_settings(crawl_visited_ttl=TTL, discovery_sitemaps=False)
    start = 1_800_000_000.0
    home.gone = {"/b"}

    first = await crawl(settings, home.root, clock=lambda: start)
    b_row = next(row for row in first.rows if row["url"].endswith("/b"))
    assert (b_row["status"], b_row["status_code"], b_row["next_crawl_at"]) == (
        "failed",
        404,
        start + TTL,
    )

    home.gone.clear()
    within = await crawl(settings, home.root, clock=lambda: start + TTL / 2)
    assert home.hits[("/b", 200)] == 0
    assert next(row for row in within.rows if row["url"].endswith("/b"))["status"] == "failed"

    later = await crawl(settings, home.root, clock=lambda: start + TTL + 1)
    assert (home.hits[("/b", 404)], home.hits[("/b", 200)]) == (1, 1)
    assert {(row["url"].removeprefix(home.root), row["status"]) for row in later.rows} == {
        ("", "completed"),
        ("a", "completed"),
        ("b", "completed"),
    }
