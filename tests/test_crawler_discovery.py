"""Discovery end to end: pagination speculation and archive guessing on a real local site."""

from __future__ import annotations

import datetime
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from support.crawling import crawl

LAST_PAGE = 5
TODAY = datetime.date.today()
MONTH = f"/news/{TODAY.year}/{TODAY.month:02d}/"
TEXT = "<p>Words enough to make this a real page that a validator keeps as content.</p>"


class NewsSite:
    """A paginated news listing (pages 1..5) whose posts live under dated paths; one post
    is reachable only from the month's archive listing, which nothing links to."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.hits[request.path_qs] += 1
        path, query = request.path, request.query
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if path == "/news" and "page" in query:
            n = int(query["page"])
            if not 1 <= n <= LAST_PAGE:
                raise web.HTTPNotFound()
            near = [i for i in (n - 1, n + 1) if 1 <= i <= LAST_PAGE]
            links = [f"/news?page={i}" for i in near] + [f"{MONTH}post-{n}.html"]
            return self.page(f"News page {n}", links)
        if path == "/":
            return self.page("Home", ["/news?page=1"])
        if path == MONTH:
            return self.page("This month", [f"{MONTH}hidden.html"])
        if path.startswith(MONTH) and path.endswith(".html"):
            return self.page(path, [])
        raise web.HTTPNotFound()

    @staticmethod
    def page(title: str, links: list[str]) -> web.Response:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        html = (
            f"<html><head><title>{title}</title></head><body>{TEXT}<p>{anchors}</p></body></html>"
        )
        return web.Response(text=html, content_type="text/html")


@pytest.fixture
async def news() -> AsyncIterator[NewsSite]:
    site = NewsSite()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def test_a_paginated_listing_is_followed_to_its_end_and_one_page_beyond_once(
    news: NewsSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(discovery_pagination=True, crawl_max_depth=10)
    root = f"http://127.0.0.1:{news.port}/"
    await crawl(settings, root)

    assert all(news.hits[f"/news?page={n}"] == 1 for n in range(1, LAST_PAGE + 1))
    assert news.hits[f"/news?page={LAST_PAGE + 1}"] == 1  # one speculation, a 404: dead
    assert news.hits[f"/news?page={LAST_PAGE + 2}"] == 0

    # The learnt rule is kept per host: a second crawl does not guess again.
    news.hits.clear()
    await crawl(make_settings(discovery_pagination=True, crawl_visited_ttl=0), root)
    assert news.hits[f"/news?page={LAST_PAGE + 1}"] == 0
    path = settings.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        [(rules,)] = conn.execute("SELECT pagination_rules FROM domains").fetchall()
    assert rules
    assert "page" in rules


async def test_date_archives_learnt_from_seen_urls_find_unlinked_pages(
    news: NewsSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(discovery_archives=True, crawl_max_depth=10)
    crawler = (await crawl(settings, f"http://127.0.0.1:{news.port}/")).crawler

    assert news.hits[MONTH] == 1
    assert news.hits[f"{MONTH}hidden.html"] == 1
    assert news.hits["/archive"] == 1  # a standard guess (a 404 here)
    assert crawler.stats["discovery/archives"] >= 3


async def test_a_near_duplicate_is_recorded_and_its_links_are_not_followed(
    make_settings: SettingsFactory,
) -> None:
    article = " ".join(
        f"sentence {i} of an article about crawling politely and well." for i in range(80)
    )
    hits: Counter[str] = Counter()

    async def handle(request: web.Request) -> web.Response:
        hits[request.path] += 1
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = {"/": ["/a", "/b"], "/a": ["/from-a"], "/b": ["/from-b"]}.get(request.path, [])
        stamp = "printed 2026-11-25" if request.path == "/b" else ""  # /b = /a and a date
        text = article if request.path != "/" else "An index of two articles, nothing else here."
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        html = (
            f"<html><head><title>{request.path}</title></head>"
            f"<body><p>{text} {stamp}</p>{anchors}</body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    async with serve(handle) as port:
        settings = make_settings(near_duplicates=True, discovery_sitemaps=False)
        await crawl(settings, f"http://127.0.0.1:{port}/")
        path = settings.database_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            rows = dict(conn.execute("SELECT url, near_duplicate_of FROM crawled_pages").fetchall())
            [(a_hash,)] = conn.execute(
                "SELECT url_hash FROM urls WHERE url = ?", (f"http://127.0.0.1:{port}/a",)
            ).fetchall()

    assert rows[f"http://127.0.0.1:{port}/b"] == a_hash
    assert rows[f"http://127.0.0.1:{port}/a"] is None
    assert hits["/from-a"] == 1
    assert hits["/from-b"] == 0  # a near-duplicate's links are not followed again
