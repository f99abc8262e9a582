"""The pagination predictor: a real paginated site on 127.0.0.1, crawled to its last pages."""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from harvestman.discovery.pagination import PaginationPredictor
from harvestman.parse import parse_html


class PagedSite:
    """A site with two listings: ``/news?page=N`` (prev/next links only; page 1 is ``/news``)
    and ``/blog/page/N/`` (links to the next two pages and the last one; page 1 is ``/blog/``).
    Each listing page links to two articles of its own. Pages past the end answer 404."""

    def __init__(self, news_pages: int = 7, blog_pages: int = 5) -> None:
        self.news_pages = news_pages
        self.blog_pages = blog_pages
        self.hits: Counter[str] = Counter()
        self.runner: web.AppRunner | None = None
        self.base = ""

    def news(self, request: web.Request) -> web.Response:
        n = int(request.query.get("page", "1"))
        if not 1 <= n <= self.news_pages:
            raise web.HTTPNotFound()
        links = [f"/news/story-{n}-{i}" for i in (1, 2)]
        if n > 1:
            links.append("/news" if n == 2 else f"/news?page={n - 1}")
        if n < self.news_pages:
            links.append(f"/news?page={n + 1}")
        return _html(links)

    def blog(self, request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "1"))
        if not 1 <= n <= self.blog_pages:
            raise web.HTTPNotFound()
        links = [f"/blog/post-{n}-{i}" for i in (1, 2)]
        shown = {m for m in (n - 1, n + 1, n + 2, self.blog_pages) if 1 <= m <= self.blog_pages}
        links += ["/blog/" if m == 1 else f"/blog/page/{m}/" for m in sorted(shown - {n})]
        return _html(links)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path_qs] += 1
        if request.path == "/":
            return _html(["/news", "/blog/", "/about?p=123", "/about?p=456"])
        if request.path == "/news":
            return self.news(request)
        if request.path.startswith("/blog/page/"):
            request.match_info["n"] = request.path.split("/")[3]
            return self.blog(request)
        if request.path == "/blog/":
            return self.blog(request)
        if request.path.startswith(("/news/story-", "/blog/post-", "/about")):
            return _html([])
        raise web.HTTPNotFound()

    async def __aenter__(self) -> PagedSite:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.base = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


def _html(links: list[str]) -> web.Response:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return web.Response(text=f"<html><body>{anchors}</body></html>", content_type="text/html")


async def crawl(site: PagedSite, predictor: PaginationPredictor) -> list[str]:
    """Breadth-first crawl of the site, queueing the predictor's guesses as the engine would.

    Returns the guesses that were made, as path + query.
    """
    start = site.base + "/"
    queue, seen, guesses = deque([start]), {start}, []
    async with aiohttp.ClientSession() as session:
        while queue:
            url = queue.popleft()
            async with session.get(url, allow_redirects=False) as response:
                status, body = response.status, await response.read()
            found: list[str] = []
            if status == 200:
                page = parse_html(body, url)
                new = [link for link in page.links if link not in seen]
                seen.update(new)
                queue.extend(new)
                found = predictor.observe(url, page.links)
                found += predictor.record_result(url, status, len(new))
            else:
                found = predictor.record_result(url, status, 0)
            for guess in found:
                guesses.append(guess.removeprefix(site.base))
                if guess not in seen:
                    seen.add(guess)
                    queue.append(guess)
    return guesses


NEWS = {"/news"} | {f"/news?page={n}" for n in range(2, 8)}
BLOG = {"/blog/"} | {f"/blog/page/{n}/" for n in range(2, 6)}


@pytest.fixture
async def site() -> AsyncIterator[PagedSite]:
    async with PagedSite() as running:
        yield running


async def test_a_paginated_listing_is_crawled_to_its_end_and_one_page_beyond_once(
    site: PagedSite,
) -> None:
    predictor = PaginationPredictor()
    guesses = await crawl(site, predictor)

    assert guesses == [
        "/news?page=3",
        "/blog/page/6/",
        "/news?page=4",
        "/news?page=5",
        "/news?page=6",
        "/news?page=7",
        "/news?page=8",
    ]
    pages = {path for path in site.hits if path.startswith(("/news", "/blog"))}
    pages -= {path for path in pages if "/story-" in path or "/post-" in path}
    assert pages == NEWS | BLOG | {"/news?page=8", "/blog/page/6/"}
    assert set(site.hits.values()) == {1}  # nothing was fetched twice
    # Post ids (?p=123, ?p=456) are not pagination.
    assert {"/about?p=124", "/about?p=457"}.isdisjoint(site.hits)
    host = site.base.removeprefix("http://")
    assert predictor.rules(host) == {
        f"{site.base}/news?page={{n}}": {"max_seen": 7, "speculated": 8, "dead_at": 8},
        f"{site.base}/blog/page/{{n}}/": {"max_seen": 5, "speculated": 6, "dead_at": 6},
    }
    assert predictor.take_changed() == [host]
    assert predictor.take_changed() == []


async def test_restored_rules_never_guess_past_the_end_again_until_the_listing_grows(
    site: PagedSite,
) -> None:
    first = PaginationPredictor()
    await crawl(site, first)
    host = site.base.removeprefix("http://")
    rules = first.rules(host)

    site.hits.clear()
    second = PaginationPredictor()
    assert second.load(host, rules) == 2
    assert await crawl(site, second) == []
    assert {"/news?page=8", "/blog/page/6/"}.isdisjoint(site.hits)

    site.hits.clear()
    site.news_pages = 9  # two more pages: page 8 is linked from page 7 now
    third = PaginationPredictor()
    third.load(host, second.rules(host))
    assert await crawl(site, third) == ["/news?page=9", "/news?page=10"]
    assert site.hits["/news?page=10"] == 1  # the one 404 of this crawl
    assert set(site.hits.values()) == {1}
    assert third.rules(host)[f"{site.base}/news?page={{n}}"] == {
        "max_seen": 9,
        "speculated": 10,
        "dead_at": 10,
    }


def test_a_page_without_new_links_ends_the_speculation() -> None:
    predictor = PaginationPredictor()
    links = ["https://a.org/list?page=2", "https://a.org/list?page=3"]
    assert predictor.observe("https://a.org/list", links) == ["https://a.org/list?page=4"]
    assert predictor.record_result("https://a.org/list?page=4", 200, 5) == [
        "https://a.org/list?page=5"
    ]
    assert predictor.record_result("https://a.org/list?page=5", 200, 0) == []
    assert predictor.observe("https://a.org/list?page=5", ["https://a.org/list?page=4"]) == []
    assert predictor.rules("a.org")["https://a.org/list?page={n}"]["dead_at"] == 6


@pytest.mark.parametrize("status", [500, 503, 429, 301, None])
def test_errors_that_say_nothing_about_the_end_teach_nothing(status: int | None) -> None:
    predictor = PaginationPredictor()
    predictor.observe("https://a.org/list", ["https://a.org/list?page=2"])
    assert predictor.record_result("https://a.org/list?page=3", status, 0) == []
    assert predictor.rules("a.org")["https://a.org/list?page={n}"]["dead_at"] is None


@pytest.mark.parametrize(
    ("page_url", "links", "expected"),
    [
        # Other query parameters stay; any of page/p/pg/paged, any case.
        (
            "https://a.org/search?q=x",
            ["https://a.org/search?Pg=2&q=x"],
            ["https://a.org/search?Pg=3&q=x"],
        ),
        ("https://a.org/", ["https://a.org/?paged=2"], ["https://a.org/?paged=3"]),
        ("https://a.org/tag/x/", ["https://a.org/tag/x/page/2/"], ["https://a.org/tag/x/page/3/"]),
        # Page N of a listing learns from its neighbours (0-based listings too).
        ("https://a.org/l?page=0", ["https://a.org/l?page=1"], ["https://a.org/l?page=2"]),
        # Pages of another listing, post ids, leading zeros: nothing to learn.
        ("https://a.org/news", ["https://a.org/blog?page=2", "https://a.org/blog?page=3"], []),
        ("https://a.org/", ["https://a.org/?p=123", "https://a.org/?p=456"], []),
        ("https://a.org/l", ["https://a.org/l?page=02"], []),
        ("https://a.org/l", ["https://a.org/other/page/2"], []),
    ],
)
def test_what_is_learnt_from_a_listing(
    page_url: str, links: list[str], expected: list[str]
) -> None:
    assert PaginationPredictor().observe(page_url, links) == expected


def test_no_guess_beyond_max_page() -> None:
    predictor = PaginationPredictor(max_page=3)
    assert predictor.observe("https://a.org/l?page=2", ["https://a.org/l?page=3"]) == []


def test_malformed_rules_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    predictor = PaginationPredictor()
    rules = {
        "https://a.org/l?page={n}": {"max_seen": 4, "speculated": 5, "dead_at": 5},
        "https://b.org/l?page={n}": {"max_seen": 4, "speculated": 5, "dead_at": None},
        "https://a.org/no-slot": {"max_seen": 4, "speculated": 5, "dead_at": None},
        "https://a.org/m?page={n}": {"max_seen": "many"},
    }
    with caplog.at_level(logging.WARNING):
        assert predictor.load("a.org", rules) == 1
    assert list(predictor.rules("a.org")) == ["https://a.org/l?page={n}"]
    assert caplog.text.count("skipped") == 3
