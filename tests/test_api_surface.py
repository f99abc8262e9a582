"""The crawler service guide's endpoints: the aliases answer as the routes they name and both
are documented; frontier rows by id; the URLs a crawl discovered and how (a crawl of a local
site with plain links, a sitemap, a feed, pagination and archives); the sync script."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from aiohttp import web

from apiclient import running_api
from conftest import SettingsFactory, serve
from harvestman.jobs.lifecycle import after_failure
from harvestman.jobs.records import ExecutionResult, ExecutionStatus, LogLine
from support.crawling import crawl

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "sync-enabled-sources-jobs.sh"
TODAY = datetime.date.today()
MONTH = f"/news/{TODAY.year}/{TODAY.month:02d}/"
TEXT = "<p>Words enough to make this a real page that a validator keeps as content.</p>"
LAST_PAGE = 3


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crawl.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


# -- aliases ------------------------------------------------------------------------------------


async def test_the_aliases_answer_as_the_routes_they_name_and_both_are_documented(
    make_settings: SettingsFactory, database_url: str
) -> None:
    async with running_api(make_settings(database_url=database_url)) as api:
        added = await api.post(
            "/api/v1/frontier", json={"urls": ["http://127.0.0.1:9/a", "http://127.0.0.1:9/b"]}
        )
        assert (added.status_code, added.json()["added"]) == (200, 2)
        again = await api.post("/api/frontier/add", json={"urls": ["http://127.0.0.1:9/c"]})
        assert again.json()["added"] == 1

        for query in ({}, {"status": "pending", "limit": 2}, {"host": "127.0.0.1"}):
            original = await api.get("/api/frontier/urls", params=query)
            alias = await api.get("/api/v1/frontier", params=query)
            assert alias.status_code == original.status_code == 200
            assert _without_times(alias.json()) == _without_times(original.json())
        page = (await api.get("/api/v1/frontier", params={"limit": 2})).json()
        assert [row["url"] for row in page["items"]] == [
            "http://127.0.0.1:9/a",
            "http://127.0.0.1:9/b",
        ]
        rest = await api.get("/api/v1/frontier", params={"cursor": page["next_cursor"]})
        assert [row["url"] for row in rest.json()["items"]] == ["http://127.0.0.1:9/c"]

        refused = await api.client.get("/api/v1/frontier")
        assert (
            refused.status_code == (await api.client.get("/api/frontier/urls")).status_code == 401
        )

        cleared = await api.client.delete("/api/v1/frontier", headers=api.admin)
        assert cleared.json() == {"deleted": 3}

        paths = (await api.client.get("/openapi.json")).json()["paths"]
        for original, alias, method in (
            ("/api/frontier/urls", "/api/v1/frontier", "get"),
            ("/api/frontier/add", "/api/v1/frontier", "post"),
            ("/api/frontier", "/api/v1/frontier", "delete"),
            ("/api/v1/jobs/{job_id}/logs/stream", "/api/v1/jobs/{job_id}/logs/stream/v2", "get"),
        ):
            assert method in paths[original]
            assert method in paths[alias]
            assert _names(paths[alias][method]) == _names(paths[original][method])
        for path in ("/api/v1/frontier/{url_id}", "/api/v1/discovered-links",
                     "/api/v1/discovered-links/{url_id}"):  # fmt: skip
            assert "get" in paths[path]


def _without_times(page: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in page.items() if key != "total_as_of"}


def _names(operation: dict[str, Any]) -> list[str]:
    return sorted(param["name"] for param in operation.get("parameters", []))


async def test_a_frontier_row_by_id(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings()) as api:
        await api.post("/api/v1/frontier", json={"urls": ["http://127.0.0.1:9/x"]})
        [row] = (await api.get("/api/v1/frontier")).json()["items"]
        one = await api.get(f"/api/v1/frontier/{row['id']}")
        assert one.status_code == 200
        assert one.json() == row
        assert (one.json()["status"], one.json()["priority"], one.json()["attempts"]) == (
            "pending", 2, 0,
        )  # fmt: skip
        missing = await api.get(f"/api/v1/frontier/{row['id'] + 1}")
        assert (missing.status_code, missing.json()["error"]["details"]) == (
            404, {"kind": "frontier row", "id": row["id"] + 1},
        )  # fmt: skip


async def test_the_log_stream_v2_is_the_log_stream(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings(), scheduler=True) as api:
        source = await api.post(
            "/api/v1/sources", json={"name": "s", "start_urls": ["http://127.0.0.1:9/"]}
        )
        await api.post(
            "/api/v1/jobs", json={"source_id": source.json()["id"], "url": "http://127.0.0.1:9/"}
        )
        claims = await api.jobs.locks.claim_due("test", 1)
        execution = claims[0].execution
        lines = [LogLine(execution.id, n, 1.0, "INFO", "harvestman.t", f"line {n}") for n in (1, 2)]
        await api.jobs.executions.append_logs(lines)
        # The stream ends once the run is over and every line was sent: end the run first.
        result = ExecutionResult(status=ExecutionStatus.FAILED, error_message="gone")
        await api.jobs.locks.finish(claims[0], result, after_failure(claims[0].job, time.time()))
        base = f"/api/v1/jobs/{execution.job_id}/logs/stream"
        original = await api.get(base)
        alias = await api.get(f"{base}/v2")
        assert alias.status_code == original.status_code == 200
        assert alias.headers["content-type"] == original.headers["content-type"]
        assert _events(alias.text) == _events(original.text) == [
            ("log", "line 1"), ("log", "line 2"), ("end", "failed"),
        ]  # fmt: skip


def _events(text: str) -> list[tuple[str, str]]:
    found = []
    event = ""
    for line in text.splitlines():
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            data = json.loads(line.split(":", 1)[1])
            found.append((event, data.get("message") or data.get("status")))
    return found


# -- discovered links ---------------------------------------------------------------------------


class LinkSite:
    """Home links a paged news list (pages 1..3; 3 and 4 are guessed) and declares a feed; the
    sitemap lists a page nothing links; the feed an item nothing links; this month's archive
    listing (linked by nothing, guessed) links a hidden post."""

    def __init__(self) -> None:
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        path, query = request.path, request.query
        if path == "/robots.txt":
            return web.Response(
                text=f"User-agent: *\nAllow: /\nSitemap: {self.url('/sitemap.xml')}\n"
            )
        if path == "/sitemap.xml":
            body = (
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<url><loc>{self.url('/from-sitemap.html')}</loc></url></urlset>"
            )
            return web.Response(text=body, content_type="application/xml")
        if path == "/feed.xml":
            body = (
                '<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
                f"<item><title>Item</title><link>{self.url('/from-feed.html')}</link></item>"
                "</channel></rss>"
            )
            return web.Response(text=body, content_type="application/rss+xml")
        if path == "/":
            head = '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
            return self.page("Home", ["/news?page=1", "/about.html"], head)
        if path == "/news" and "page" in query:
            n = int(query["page"])
            if not 1 <= n <= LAST_PAGE:
                raise web.HTTPNotFound()
            links = [f"/news?page={n + 1}"] if n < LAST_PAGE else []
            return self.page(f"News {n}", [*links, f"{MONTH}post-{n}.html"])
        if path == MONTH:
            return self.page("This month", [f"{MONTH}hidden.html"])
        if path.endswith(".html"):
            return self.page(path, [])
        raise web.HTTPNotFound()

    @staticmethod
    def page(title: str, links: list[str], head: str = "") -> web.Response:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = f"<body>{TEXT}<p>{anchors}</p></body>"
        html = f"<html><head><title>{title}</title>{head}</head>{body}</html>"
        return web.Response(text=html, content_type="text/html")


@pytest.fixture
async def link_site() -> AsyncIterator[LinkSite]:
    site = LinkSite()
    async with serve(site.handle) as port:
        site.port = port
        yield site


async def test_discovered_links_say_how_and_where_each_url_was_found(
    link_site: LinkSite, make_settings: SettingsFactory, database_url: str
) -> None:
    settings = make_settings(
        database_url=database_url,
        crawl_max_depth=10,
        discovery_feeds=True,
        discovery_pagination=True,
        discovery_archives=True,
    )
    crawled = await crawl(settings, link_site.url("/"))
    by_path = {row["url"].removeprefix(link_site.url("")): row for row in crawled.rows}
    n = LAST_PAGE
    expected = {
        # path: (how, found on)
        "/about.html": ("link", "/"),
        "/news?page=1": ("link", "/"),
        "/news?page=2": ("link", "/news?page=1"),
        # The predictor, once page 1 links page 2, guesses a page ahead of each page it sees.
        "/news?page=3": ("pagination", "/news?page=1"),
        f"/news?page={n + 1}": ("pagination", f"/news?page={n - 1}"),
        f"{MONTH}post-1.html": ("link", "/news?page=1"),
        "/archive": ("archive", None),  # a standard guess, made whenever the host runs dry
        "/feed.xml": ("feed", "/"),
        "/from-feed.html": ("feed", "/feed.xml"),
        "/sitemap.xml": ("sitemap", None),
        "/from-sitemap.html": ("sitemap", "/sitemap.xml"),
    }
    assert by_path["/"]["discovered_via"] == "seed"

    async with running_api(settings) as api:
        listed: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"crawl": settings.crawl_name, "limit": 5}
            if cursor:
                params["cursor"] = cursor
            page = (await api.get("/api/v1/discovered-links", params=params)).json()
            listed += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        found = {item["url"].removeprefix(link_site.url("")): item for item in listed}
        assert "/" not in found  # a seed is no discovered link
        for path, (via, parent) in expected.items():
            item = found[path]
            assert item["discovered_via"] == via, path
            assert item["parent_url"] == (None if parent is None else link_site.url(parent)), path
            assert item["parent_id"] == (None if parent is None else by_path[parent]["id"]), path
        assert len(listed) == len(crawled.rows) - 1
        # The dated guesses depend on the URLs seen when the host first ran dry (a race of
        # the archive discovery); whatever it guessed is an archive guess without a parent.
        assert all(
            item["parent_id"] is None for item in listed if item["discovered_via"] == "archive"
        )
        if f"{MONTH}hidden.html" in found:
            assert found[MONTH]["discovered_via"] == "archive"
            assert found[f"{MONTH}hidden.html"]["parent_url"] == link_site.url(MONTH)

        kinds = {}
        for via in ("link", "sitemap", "feed", "pagination", "archive"):
            answer = await api.get(
                "/api/v1/discovered-links", params={"crawl": settings.crawl_name, "via": via}
            )
            kinds[via] = {item["url"] for item in answer.json()["items"]}
            assert answer.json()["total"] == len(kinds[via])
        assert kinds == {
            via: {link_site.url(path) for path in paths} for via, paths in _by_via(found).items()
        }

        home_id = by_path["/"]["id"]
        yielded = await api.get(
            "/api/v1/discovered-links", params={"crawl": settings.crawl_name, "parent_id": home_id}
        )
        assert {item["url"] for item in yielded.json()["items"]} == {
            link_site.url(p) for p in ("/about.html", "/news?page=1", "/feed.xml")
        }
        one = found["/from-feed.html"]
        by_id = await api.get(
            f"/api/v1/discovered-links/{one['id']}", params={"crawl": settings.crawl_name}
        )
        assert by_id.json() == one
        seed = await api.get(
            f"/api/v1/discovered-links/{home_id}", params={"crawl": settings.crawl_name}
        )
        assert seed.status_code == 404


def _by_via(found: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    grouped: dict[str, set[str]] = {}
    for path, item in found.items():
        grouped.setdefault(item["discovered_via"], set()).add(path)
    return grouped


# -- the sync script ----------------------------------------------------------------------------


async def test_the_sync_script_calls_the_sync_endpoint_with_the_token(
    make_settings: SettingsFactory, unused_tcp_port: int
) -> None:
    async with running_api(make_settings(), scheduler=True) as api:
        config = uvicorn.Config(
            api.app, host="127.0.0.1", port=unused_tcp_port, log_level="warning"
        )
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.01)
        try:
            source = await api.post(
                "/api/v1/sources", json={"name": "s", "start_urls": ["http://127.0.0.1:9/"]}
            )
            job_id = (await api.get("/api/v1/jobs")).json()["items"][0]["id"]
            await api.client.delete(f"/api/v1/jobs/{job_id}", headers=api.admin)
            env = {
                **os.environ,
                "JWT": api.admin["Authorization"].removeprefix("Bearer "),
                "HARVESTMAN_API_URL": f"http://127.0.0.1:{unused_tcp_port}",
            }
            preview = await _script(["--dry-run"], env)
            assert preview.returncode == 0, preview.stderr
            assert json.loads(preview.stdout)["create_for_sources"] == [source.json()["id"]]
            assert (await api.get("/api/v1/jobs")).json()["total"] == 0

            done = await _script([], env)
            assert done.returncode == 0, done.stderr
            answer = json.loads(done.stdout)
            assert (answer["dry_run"], len(answer["created_jobs"])) == (False, 1)
            assert (await api.get("/api/v1/jobs")).json()["total"] == 1

            refused = await _script([], {**env, "JWT": "not-a-token"})
            assert refused.returncode == 1
            assert "401" in refused.stderr
            missing = await _script([], {k: v for k, v in env.items() if k != "JWT"})
            assert (missing.returncode, "JWT is not set" in missing.stderr) == (2, True)
        finally:
            server.should_exit = True
            await task


async def _script(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run, ["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
