"""Two behaviours of the crawl pinned end to end, on SQLite and PostgreSQL: an empty HTML page
is judged (and a rejected page keeps what names it), and a page's feeds are crawled as feeds."""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.export import export_pages
from harvestman.store import SqlStore
from support.crawling import crawl

SHORT = (
    "<html><head><title>Coming soon</title><meta name=description content='Our new shop'>"
    "<link rel=canonical href='/soon.html'></head><body></body></html>"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, make_settings: SettingsFactory) -> str:
    if request.param == "sqlite":
        return make_settings().database_url
    return str(request.getfixturevalue("pg_schema_url"))


class Blank:
    """Pages with nothing (or only white space) in them, and a short one with a title."""

    def __init__(self) -> None:
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        bodies = {"/empty.html": "", "/blank.html": "  \n\t \r\n", "/soon.html": SHORT}
        if request.path not in bodies:
            raise web.HTTPNotFound()
        return web.Response(text=bodies[request.path], content_type="text/html")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
async def blank() -> AsyncIterator[Blank]:
    site = Blank()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def test_an_empty_html_page_is_judged_too_small_and_a_rejected_page_keeps_its_title(
    blank: Blank, make_settings: SettingsFactory, database_url: str
) -> None:
    settings = make_settings(database_url=database_url, crawl_max_depth=0,
                             discovery_sitemaps=False)  # fmt: skip
    seeds = [blank.url(p) for p in ("/empty.html", "/blank.html", "/soon.html")]

    crawled = await crawl(settings, seeds)

    pages = {
        page["url"].rsplit("/", 1)[1]: (
            page["validation_status"], page["rejection_reason"], page["error_class"],
            page["title"], page["description"], page["content_hash"], page["text"],
        )
        for page in crawled.pages
    }  # fmt: skip
    assert pages == {
        "empty.html": ("soft", "too_small", "ContentRejected", None, None, None, None),
        "blank.html": ("soft", "too_small", "ContentRejected", None, None, None, None),
        "soon.html": ("soft", "too_small", "ContentRejected", "Coming soon", "Our new shop",
                      None, None),
    }  # fmt: skip
    soon = crawled.pages_by_url[blank.url("/soon.html")]
    assert soon["canonical"] == blank.url("/soon.html")
    assert {(r["status"], r["error_class"]) for r in crawled.rows} == {
        ("completed", "ContentRejected")
    }
    assert crawled.crawler.stats["validate/soft/too_small"] == 3

    out = io.BytesIO()
    async with SqlStore(database_url) as store:
        assert export_pages(store, crawled.crawler.crawl_id, "jsonl", out) == 3
    exported = {doc["url"]: doc for doc in map(json.loads, out.getvalue().splitlines())}
    assert exported[blank.url("/soon.html")]["title"] == "Coming soon"
    assert exported[blank.url("/soon.html")]["description"] == "Our new shop"


POSTS = 4
RSS = (
    '<?xml version="1.0"?><rss version="2.0"><channel><title>Blog</title>'
    + "".join(f"<item><title>Post {n}</title><link>{{root}}/posts/{n}.html</link></item>"
              for n in range(1, POSTS + 1))
    + "</channel></rss>"
)  # fmt: skip
POST = (
    "<html><head><title>Post</title></head><body><p>A post with words enough to be kept as "
    "real content by the validator, which wants a sentence or two.</p></body></html>"
)


class Blog:
    """A home page whose posts are listed only in its RSS feed (no anchor leads to them)."""

    ETAG = '"feed-v1"'

    def __init__(self) -> None:
        self.port = 0
        self.hits: Counter[str] = Counter()
        self.feed_conditions: list[str | None] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        root = f"http://127.0.0.1:{self.port}"
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            html = (
                "<html><head><title>Blog</title><link rel=alternate "
                "type='application/rss+xml' href='/feed.xml'></head><body><p>Welcome to a "
                "blog whose posts are in its feed, with words enough to be a page.</p>"
                "</body></html>"
            )
            return web.Response(text=html, content_type="text/html")
        if request.path == "/feed.xml":
            self.feed_conditions.append(request.headers.get("If-None-Match"))
            if request.headers.get("If-None-Match") == self.ETAG:
                return web.Response(status=304, headers={"ETag": self.ETAG})
            return web.Response(text=RSS.format(root=root), content_type="application/rss+xml",
                                headers={"ETag": self.ETAG})  # fmt: skip
        if request.path.startswith("/posts/"):
            return web.Response(text=POST, content_type="text/html")
        raise web.HTTPNotFound()


@pytest.fixture
async def blog() -> AsyncIterator[Blog]:
    site = Blog()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def test_posts_reachable_only_through_the_feed_are_all_crawled_and_the_feed_polled(
    blog: Blog, make_settings: SettingsFactory, database_url: str
) -> None:
    settings = make_settings(database_url=database_url, discovery_feeds=True,
                             discovery_sitemaps=False, feed_poll_interval=60.0,
                             crawl_visited_ttl=600.0)  # fmt: skip
    root = f"http://127.0.0.1:{blog.port}"

    first = await crawl(settings, root + "/")

    kinds = {(row["url"].removeprefix(root), row["kind"], row["status"]) for row in first.rows}
    assert kinds == {
        ("/", "page", "completed"),
        ("/feed.xml", "feed", "completed"),
        *((f"/posts/{n}.html", "page", "completed") for n in range(1, POSTS + 1)),
    }
    assert blog.feed_conditions == [None]

    # Past the visited TTL the home page is due again; the feed, past its poll interval, is
    # asked for with its ETag and is unchanged (304: nothing listed); its posts, past their
    # own TTL, come due by themselves and are asked once more.
    later = await crawl(settings, root + "/", clock=lambda: time.time() + 900.0)

    assert blog.hits["/"] == 2
    assert blog.feed_conditions == [None, Blog.ETAG]
    assert later.crawler.stats["fetch/not_modified"] == 1
    assert all(blog.hits[f"/posts/{n}.html"] == 2 for n in range(1, POSTS + 1))
    feed = next(row for row in later.rows if row["kind"] == "feed")
    assert feed["status"] == "completed"
