"""What `crawl --output` and `export` hold: the crawl's pages, not the sitemaps and feeds it also
fetched and stored, unless `--kind` asks for them. A real process crawls a real local site whose
robots.txt names a sitemap and whose home page names an RSS feed."""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from conftest import serve
from harvestman.export import page_summary, parse_kinds
from harvestman.records import CrawlRequest, Outcome, PageRecord, UrlStatus
from support.cli import invoke_cli
from test_cli import FAST, run_cli

WORDS = "A page with words enough to be kept as real content by the validator, which wants some."


class Site:
    """``/`` links ``/a``; the sitemap (named by robots.txt) lists ``/s``; the feed (named by
    ``/``) lists ``/f``."""

    def __init__(self) -> None:
        self.port = 0

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, request: web.Request) -> web.Response:
        root, path = self.root, request.path
        if path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {root}/sitemap.xml\n")
        if path == "/sitemap.xml":
            xml = (
                '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>{root}/s</loc></url></urlset>"
            )
            return web.Response(text=xml, content_type="application/xml")
        if path == "/feed.xml":
            rss = (
                '<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>'
                f"<item><title>F</title><link>{root}/f</link></item></channel></rss>"
            )
            return web.Response(text=rss, content_type="application/rss+xml")
        if path in ("/", "/a", "/s", "/f"):
            head = '<link rel=alternate type="application/rss+xml" href="/feed.xml">'
            html = f"<html><head><title>{path}</title>{head}</head><body><p>{WORDS}</p>"
            html += '<a href="/a">a</a></body></html>'
            return web.Response(text=html, content_type="text/html")
        raise web.HTTPNotFound()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    running = Site()
    async with serve(running.handle) as port:
        running.port = port
        yield running


PAGES = {"/", "/a", "/s", "/f"}
EVERYTHING = PAGES | {"/sitemap.xml", "/feed.xml"}
FEEDS_ON = {"HARVESTMAN_DISCOVERY_FEEDS": "true"}


def paths(site: Site, lines: list[dict[str, object]]) -> set[str]:
    return {str(line["url"]).removeprefix(site.root) for line in lines}


def jsonl(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


async def test_output_and_export_hold_pages_unless_kind_asks_for_more(
    site: Site, tmp_path: Path
) -> None:
    db, out = str(tmp_path / "h.db"), tmp_path / "pages.jsonl"
    code, _, err = await run_cli(
        "crawl", site.root + "/", "--db", db, "--output", str(out), *FAST, env=FEEDS_ON
    )
    assert code == 0, err
    assert paths(site, jsonl(out.read_text())) == PAGES

    code, text, _ = await invoke_cli("export", "--db", db, "--format", "jsonl")
    assert (code, paths(site, jsonl(text))) == (0, PAGES)
    assert {line["kind"] for line in jsonl(text)} == {"page"}

    code, text, _ = await invoke_cli("export", "--db", db, "--kind", "page,sitemap,feed")
    assert (code, paths(site, jsonl(text))) == (0, EVERYTHING)
    kinds = {str(line["url"]).removeprefix(site.root): line["kind"] for line in jsonl(text)}
    assert (kinds["/sitemap.xml"], kinds["/feed.xml"], kinds["/s"]) == ("sitemap", "feed", "page")

    code, text, _ = await invoke_cli("export", "--db", db, "--format", "csv", "--kind", "feed")
    assert code == 0
    assert [row["url"] for row in csv.DictReader(text.splitlines())] == [site.root + "/feed.xml"]

    code, _, err = await invoke_cli("export", "--db", db, "--kind", "robots")
    assert code == 2
    assert "unknown kind 'robots'" in err


async def test_crawl_output_with_every_kind_holds_the_listings_too(
    site: Site, tmp_path: Path
) -> None:
    db, out = str(tmp_path / "h.db"), tmp_path / "all.jsonl"
    code, _, err = await run_cli(
        "crawl", site.root + "/", "--db", db, "-o", str(out), "--kind", "page,sitemap,feed",
        *FAST, env=FEEDS_ON,
    )  # fmt: skip
    assert code == 0, err
    assert paths(site, jsonl(out.read_text())) == EVERYTHING


def test_a_summary_line_is_written_only_for_the_kinds_asked() -> None:
    request = CrawlRequest(1, "http://a.test/feed.xml", "h", "a.test", 1, 2, 0, kind="feed")
    page = PageRecord(
        url=request.url, final_url=request.url, host="a.test", status_code=200,
        content_type="application/rss+xml", content_length=10, fetched_at=0.0,
        crawl_duration_ms=1,
    )  # fmt: skip
    outcome = Outcome(request, UrlStatus.COMPLETED, 0.0, 0, status_code=200, page=page)

    assert page_summary(outcome) is None
    line = page_summary(outcome, parse_kinds("page,feed"))
    assert line is not None
    assert json.loads(line)["kind"] == "feed"


def test_the_kind_parsers_examples_hold() -> None:
    import doctest

    from harvestman import export

    assert doctest.testmod(export).failed == 0
