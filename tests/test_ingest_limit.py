"""The per-source ingest limit (new URLs per second made due; the rest deferred, never
dropped) on a hand-driven clock and in a real crawl, and the trailing slash rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from apiclient import running_api
from conftest import SettingsFactory, serve
from harvestman.crawl.frontier import Frontier
from harvestman.crawl.ingest import IngestLimit
from harvestman.crawl.run import CrawlRun
from harvestman.crawl.writer import BatchWriter
from harvestman.errors import ConfigError
from harvestman.jobs.errors import InvalidSpec
from harvestman.jobs.records import Source, SourceOptions
from harvestman.jobs.runner import source_settings
from harvestman.records import NewUrl
from harvestman.stats import Stats
from harvestman.store import SqlStore
from harvestman.urls import UrlNormalizer, url_hash
from support.crawling import crawl

TEXT = "<p>Words enough to make this a real page that a validator keeps as content.</p>"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crawl.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


def _rows(n: int, start: int = 0) -> list[NewUrl]:
    urls = [f"http://a.test/p/{i}" for i in range(start, start + n)]
    return [NewUrl(url, url_hash(url), "a.test", 1, 2, parent_id=1, via="link") for url in urls]


def test_the_limit_fills_each_second_then_the_next_ones() -> None:
    limit = IngestLimit(3)
    first = _rows(7)
    assert limit.admit(first, 10.5) == 4
    assert [row.due_at for row in first] == [None, None, None, 11.0, 11.0, 11.0, 12.0]
    # Later in the same second: the room is taken up to 12 s, so these wait further.
    more = _rows(3, 7)
    assert limit.admit(more, 10.9) == 3
    assert [row.due_at for row in more] == [12.0, 12.0, 13.0]
    # Once the clock passes the windows taken, a new second has its room again.
    late = _rows(4, 10)
    assert limit.admit(late, 20.0) == 1
    assert [row.due_at for row in late] == [None, None, None, 21.0]
    with pytest.raises(ValueError, match="at least 1"):
        IngestLimit(0)


async def test_urls_over_the_rate_are_written_due_later_not_dropped(database_url: str) -> None:
    now = [1000.25]
    async with SqlStore(database_url) as store:
        await store.upgrade()
        crawl_id = await store.ensure_crawl("ingest")
        run = CrawlRun(store, Stats(), lambda: now[0])
        run.crawl_id = crawl_id
        run.frontier = Frontier(store.frontier, crawl_id, "w", clock=lambda: now[0])
        writer = BatchWriter(
            run, batch_size=10, flush_interval=1.0, history=None, on_pages=None,
            ingest=IngestLimit(100),
        )  # fmt: skip
        writer.add_urls(_rows(250))
        await writer.flush()
        rows = list(store.iter_urls(crawl_id))
        assert len(rows) == 250
        assert Counter(row["next_crawl_at"] for row in rows) == {
            1000.25: 100,
            1001.0: 100,
            1002.0: 50,
        }
        assert {row["discovered_at"] for row in rows} == {1000.25}
        assert run.stats["frontier/deferred"] == 150
        assert run.frontier.hosts["a.test"].due == 1000.25

        now[0] = 1001.5  # the 1002 window holds 50: 30 more fit there
        writer.add_urls(_rows(30, 250))
        await writer.flush()
        later = [row for row in store.iter_urls(crawl_id) if row["id"] > rows[-1]["id"]]
        assert [row["next_crawl_at"] for row in later] == [1002.0] * 30
        assert run.stats["frontier/deferred"] == 180


class WideSite:
    """A home page linking 250 pages, each a leaf."""

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = (
            "".join(f'<a href="/p/{i}">{i}</a> ' for i in range(250)) if request.path == "/" else ""
        )
        html = f"<html><head><title>{request.path}</title></head><body>{TEXT}{links}</body></html>"
        return web.Response(text=html, content_type="text/html")


async def test_a_crawl_over_the_rate_fetches_every_deferred_url(
    make_settings: SettingsFactory,
) -> None:
    async with serve(WideSite().handle) as port:
        settings = make_settings(
            frontier_ingest_rate=100, discovery_sitemaps=False, crawl_max_depth=1
        )
        crawled = await crawl(settings, f"http://127.0.0.1:{port}/")
    assert len(crawled.rows) == 251
    assert {row["status"] for row in crawled.rows} == {"completed"}
    assert crawled.crawler.stats["frontier/deferred"] == 150


def test_a_sources_crawl_has_the_specs_rate_unless_its_option_says(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings()
    assert (settings.source_ingest_rate, settings.url_trailing_slash) == (100, "keep")
    assert settings.frontier_ingest_rate == 0  # a plain crawl: no limit
    assert IngestLimit.from_settings(settings) is None
    source = Source(
        id=4, name="s", start_urls=["http://a.test/"], created_at=0.0, updated_at=0.0,
        options=SourceOptions(ingest_rate=5, trailing_slash="strip"),
    )  # fmt: skip
    crawl_settings = source_settings(settings, source)
    assert (crawl_settings.frontier_ingest_rate, crawl_settings.url_trailing_slash) == (5, "strip")
    plain = Source(id=5, name="p", start_urls=["http://a.test/"], created_at=0.0, updated_at=0.0)
    assert source_settings(settings, plain).frontier_ingest_rate == 100


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"ingest_rate": -1}, "options.ingest_rate"),
        ({"ingest_rate": True}, "options.ingest_rate"),
        ({"ingest_rate": "fast"}, "options.ingest_rate"),
        ({"trailing_slash": "maybe"}, "options.trailing_slash"),
        ({"feeds": 3}, "options.feeds"),
    ],
)
def test_bad_option_values_are_refused_with_their_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidSpec) as caught:
        SourceOptions.of(options)
    assert caught.value.field == field


async def test_the_options_go_through_the_api(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings()) as api:
        body = {"name": "s", "start_urls": ["http://127.0.0.1:9/"],
                "options": {"ingest_rate": 20, "trailing_slash": "add"}}  # fmt: skip
        created = await api.post("/api/v1/sources", json=body)
        assert created.status_code == 201, created.text
        options = created.json()["options"]
        assert (options["ingest_rate"], options["trailing_slash"]) == (20, "add")
        bad = await api.post(
            "/api/v1/sources",
            json={**body, "name": "t", "options": {"trailing_slash": "sometimes"}},
        )
        assert bad.status_code == 422


# -- the trailing slash rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "url", "normalized"),
    [
        ("keep", "http://a.test/x/", "http://a.test/x/"),
        ("keep", "http://a.test/x", "http://a.test/x"),
        ("strip", "http://a.test/x/", "http://a.test/x"),
        ("strip", "http://a.test/x//", "http://a.test/x"),
        ("strip", "http://a.test/x/?b=2&a=1", "http://a.test/x?a=1&b=2"),
        ("strip", "http://a.test/", "http://a.test/"),
        ("strip", "http://a.test", "http://a.test/"),
        ("add", "http://a.test/x", "http://a.test/x/"),
        ("add", "http://a.test/x/", "http://a.test/x/"),
        ("add", "http://a.test/x.html", "http://a.test/x.html"),
        ("add", "http://a.test/v1.2/x?q=1", "http://a.test/v1.2/x/?q=1"),
        ("add", "http://a.test/a/../b#top", "http://a.test/b/"),
    ],
)
def test_the_trailing_slash_rule(rule: str, url: str, normalized: str) -> None:
    assert UrlNormalizer(trailing_slash=rule).normalize(url) == normalized


def test_an_unknown_trailing_slash_rule_is_a_config_error(make_settings: SettingsFactory) -> None:
    with pytest.raises(ConfigError, match="keep, add or strip"):
        UrlNormalizer(trailing_slash="both")
    with pytest.raises(Exception, match="url_trailing_slash"):
        make_settings(url_trailing_slash="both")


class SlashSite:
    """Links to the same sections with and without their trailing slash."""

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        links = "".join(
            f'<a href="{href}">x</a> ' for href in ("/news/", "/news", "/shop", "/a.html")
        )
        html = f"<html><head><title>t</title></head><body>{TEXT}{links}</body></html>"
        return web.Response(text=html, content_type="text/html")


@pytest.fixture
async def slash_port() -> AsyncIterator[int]:
    async with serve(SlashSite().handle) as port:
        yield port


@pytest.mark.parametrize(
    ("rule", "paths"),
    [
        ("keep", {"/", "/news/", "/news", "/shop", "/a.html"}),
        ("strip", {"/", "/news", "/shop", "/a.html"}),
        ("add", {"/", "/news/", "/shop/", "/a.html"}),
    ],
)
async def test_a_crawl_keeps_one_form_of_each_url(
    make_settings: SettingsFactory, slash_port: int, rule: str, paths: set[str]
) -> None:
    settings = make_settings(url_trailing_slash=rule, discovery_sitemaps=False, crawl_max_depth=1)
    crawled = await crawl(settings, f"http://127.0.0.1:{slash_port}/")
    base = f"http://127.0.0.1:{slash_port}"
    assert {row["url"].removeprefix(base) for row in crawled.rows} == paths
