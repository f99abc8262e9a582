"""Sitemaps are streamed into the frontier: read, normalized and written a bounded batch at a
time, so what a crawl holds does not grow with what its sitemaps list."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.crawl.crawler import Crawler
from harvestman.crawl.discovery import Discovery
from harvestman.discovery.listing_stream import ListingStream
from harvestman.discovery.listings import read_listing
from harvestman.discovery.sitemaps import SitemapReader, parse_sitemap
from harvestman.records import NewUrl
from harvestman.stats import Stats
from harvestman.store import SqlStore

SITEMAP = "https://example.com/sitemap.xml"
CHILDREN = 3
PER_CHILD = 3000
BATCH = 500


def urlset(locs: Sequence[str]) -> bytes:
    entries = "".join(
        f"<url><loc>{loc}</loc><lastmod>2024-05-{1 + n % 28:02d}</lastmod></url>\n"
        for n, loc in enumerate(locs)
    )
    return f'<?xml version="1.0"?>\n<urlset>\n{entries}</urlset>\n'.encode()


def test_a_reader_hands_entries_over_in_batches_as_it_parses() -> None:
    body = gzip.compress(urlset([f"https://example.com/p/{n}" for n in range(6000)]))
    reader = SitemapReader(body, SITEMAP)
    batches = reader.batches(500)

    first, _ = next(batches)
    # Only the chunks the first batch needed were parsed, not the document.
    assert len(first) == 500
    assert reader.count < 1500

    sizes = [len(first)] + [len(urls) for urls, _ in batches]
    assert max(sizes) == 500
    assert sum(sizes) == 6000
    assert reader.kind == "urlset"
    assert reader.errors == []
    # parse_sitemap reads the same document whole.
    assert len(parse_sitemap(body, SITEMAP).urls) == 6000


def test_a_reader_keeps_the_limits_and_reasons_of_the_whole_document() -> None:
    body = urlset([f"https://example.com/p/{n}" for n in range(50)])
    reader = SitemapReader(body, SITEMAP, max_urls=30)

    sizes = [len(urls) for urls, _ in reader.batches(7)]

    assert sizes == [7, 7, 7, 7, 2]
    assert reader.errors == ["truncated at 30 URLs"]
    assert parse_sitemap(body, SITEMAP, max_urls=30).errors == reader.errors


def rows_of(rows: Sequence[NewUrl]) -> list[tuple[Any, ...]]:
    return [(r.url, r.url_hash, r.host, r.depth, r.priority, r.kind, r.lastmod) for r in rows]


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (
            b"<urlset><url><loc> HTTP://Example.com/a?utm_source=x&amp;b=1 </loc>"
            b"<lastmod>2024-05-06</lastmod></url><url><loc>/relative</loc></url>"
            b"<url><loc>https://elsewhere.example/x</loc></url>"
            b"<url><lastmod>2024-01-01</lastmod></url>"
            b"<url><loc>https://example.com/b</loc><lastmod>soon</lastmod></url></urlset>",
            0,
        ),
        (
            b"<sitemapindex><sitemap><loc>https://EXAMPLE.com/s-1.xml.gz</loc></sitemap>"
            b"<sitemap><loc>s-2.xml</loc></sitemap>"
            b"<sitemap><loc>https://elsewhere.example/s.xml</loc></sitemap></sitemapindex>",
            1,
        ),
        (
            b"<sitemapindex><sitemap><loc>https://example.com/s.xml</loc></sitemap></sitemapindex>",
            3,
        ),
        (b"\n".join(f"https://example.com/{n} x".encode() for n in range(250)), 0),
        (b"<html><body>not a sitemap</body></html>", 0),
        (b"", 0),
    ],
)
def test_a_stream_yields_the_rows_and_reasons_of_a_whole_read(body: bytes, depth: int) -> None:
    def in_scope(url: str) -> bool:
        return url.startswith("https://example.com/")

    limits = {"depth": depth, "max_depth": 3, "max_urls": 100, "max_bytes": 1 << 20}
    whole = read_listing(body, SITEMAP, in_scope=in_scope, **limits)
    stream = ListingStream(body, SITEMAP, in_scope=in_scope, **limits)

    streamed = [row for batch in stream.batches(2) for row in batch]

    assert rows_of(streamed) == rows_of(whole.urls)
    assert stream.errors == whole.errors
    assert (stream.kind, stream.invalid) == (whole.kind, whole.invalid)
    assert (stream.rows, stream.out_of_scope) == (len(whole.urls), whole.out_of_scope)


class BigSitemapSite:
    """A sitemap index of three sitemaps of 3,000 URLs each (the pages are 404s)."""

    def __init__(self) -> None:
        self.origin = ""

    async def handle(self, request: web.Request) -> web.Response:
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if path == "/":
            return web.Response(
                text="<html><body><p>Home</p></body></html>", content_type="text/html"
            )
        if path == "/sitemap.xml":
            index = "".join(
                f"<sitemap><loc>{self.origin}/sitemaps/{k}.xml.gz</loc></sitemap>"
                for k in range(CHILDREN)
            )
            return web.Response(text=f"<sitemapindex>{index}</sitemapindex>")
        if path.startswith("/sitemaps/"):
            k = int(path.removeprefix("/sitemaps/").partition(".")[0])
            locs = [f"{self.origin}/p/{k}-{n}.html" for n in range(PER_CHILD)]
            return web.Response(body=gzip.compress(urlset(locs)))
        raise web.HTTPNotFound()


@pytest.fixture
async def big_site() -> AsyncIterator[BigSitemapSite]:
    site = BigSitemapSite()
    async with serve(site.handle) as port:
        site.origin = f"http://127.0.0.1:{port}"
        yield site


async def test_a_crawl_writes_sitemap_urls_in_bounded_batches(
    big_site: BigSitemapSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        sitemap_batch_size=BATCH,
        sitemap_concurrency=2,
        frontier_per_host_concurrency=4,
        crawl_max_pages=12,
    )
    written: list[int] = []
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        record = store.outcomes.record

        async def counting(crawl_id: int, outcomes: Any, new_urls: Any, now: float) -> Any:
            written.append(len(new_urls))
            return await record(crawl_id, outcomes, new_urls, now)

        store.outcomes.record = counting  # type: ignore[method-assign]  # the writer's door
        crawler = Crawler(settings, store, [big_site.origin + "/"])
        await crawler.run()
        rows = list(store.iter_urls(crawler.crawl_id))

    listed = [row for row in rows if "/p/" in row["url"]]
    assert len(listed) == CHILDREN * PER_CHILD  # every listed URL is in the frontier
    assert {row["discovered_via"] for row in listed} == {"sitemap"}
    sitemaps = [row for row in rows if row["kind"] == "sitemap"]
    assert {row["status"] for row in sitemaps} == {"completed"}
    # A write holds at most a batch from each sitemap read at once (sitemap_concurrency): not
    # a sitemap's 3,000 URLs, nor the 9,000 of the index.
    assert max(written) <= 2 * BATCH
    assert sum(written) >= CHILDREN * PER_CHILD


def test_listed_pages_do_not_fill_the_seen_cache() -> None:
    discovery = Discovery(Stats(), max_depth=3, seen_cache_size=1000)
    stream = ListingStream(
        urlset([f"https://example.com/p/{n}" for n in range(5000)]),
        SITEMAP,
        depth=0,
        max_depth=3,
        max_urls=50_000,
        max_bytes=1 << 24,
        in_scope=lambda url: True,
    )
    child = NewUrl("https://example.com/s.xml", "h", "example.com", 1, 3, "sitemap")

    listed = [
        row for batch in stream.batches(1000) for row in discovery.listed(batch, 7, "sitemap")
    ]
    listed += discovery.listed([child], 7, "sitemap")

    # Every listed row goes to the store, found on row 7 ...
    assert len(listed) == 5001
    assert {(row.parent_id, row.via) for row in listed} == {(7, "sitemap")}
    # ... but only the child sitemap is remembered: 5,000 (or 2,000,000) listed pages would
    # push the links a crawl keeps meeting out of the cache.
    assert len(discovery.seen) == 1
    assert child.url in discovery.seen
