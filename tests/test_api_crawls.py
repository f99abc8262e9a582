"""Results follow the job: a source's crawl is named after it and shown on the source, its
jobs and their runs; every read route shows every crawl, or the one ``crawl`` names, or a 404
that lists the crawls there are. A real shop on 127.0.0.1 crawled into a real SQLite store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import insert, text

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.crawl.crawler import Crawler
from harvestman.jobs.records import Source
from harvestman.store import SqlStore, migrate
from harvestman.store.schema import parser_stats
from support.shop import Shop, running_shop


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    async with running_shop() as running:
        yield running


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """Each test on both stores: the lists, counts and sums differ by dialect."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("pg_schema_url"))
    return f"sqlite:///{tmp_path / 'crawl.db'}"


@pytest.fixture
async def api(make_settings: SettingsFactory, database_url: str) -> AsyncIterator[Api]:
    async with running_api(make_settings(database_url=database_url)) as running:
        yield running


async def _crawl_into(
    api: Api, settings: Any, name: str, seeds: list[str], max_pages: int = 0
) -> None:
    crawl = settings.model_copy(update={"crawl_name": name, "crawl_max_pages": max_pages})
    await Crawler(crawl, api.store, seeds).run()


async def _source(api: Api, name: str, url: str) -> dict[str, Any]:
    created = await api.post("/api/v1/sources", json={"name": name, "start_urls": [url]})
    assert created.status_code == 201, created.text
    body: dict[str, Any] = created.json()
    return body


async def _all_pages(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a keyset-paged list, following ``next_cursor`` two items at a time."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await api.get(path, params=query)).json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


async def test_a_source_names_its_crawl_and_its_jobs_and_runs_show_it(api: Api) -> None:
    source = await _source(api, "Kettles & Co. Shop", "http://127.0.0.1:9/")
    assert source["crawl"] == f"kettles-co-shop-{source['id']}"
    job = await api.post(
        "/api/v1/jobs", json={"source_id": source["id"], "url": "http://127.0.0.1:9/"}
    )
    assert job.json()["crawl"] == source["crawl"]
    listed = (await api.get("/api/v1/jobs")).json()["items"]
    assert [j["crawl"] for j in listed] == [source["crawl"]]
    (claim,) = await api.jobs.locks.claim_due("test", 1)
    runs = (await api.get(f"/api/v1/jobs/{job.json()['id']}/executions")).json()["items"]
    assert [run["crawl"] for run in runs] == [source["crawl"]]
    one = await api.get(f"/api/v1/executions/{claim.execution.id}")
    assert one.json()["crawl"] == source["crawl"]

    # A rename moves no data: the crawl stays.
    renamed = await api.client.put(
        f"/api/v1/sources/{source['id']}", json={"name": "Toasters"}, headers=api.admin
    )
    assert (renamed.json()["name"], renamed.json()["crawl"]) == ("Toasters", source["crawl"])
    # Listed and browsable before its first run.
    crawls = (await api.get("/api/crawls")).json()
    assert crawls["items"] == [
        {
            "id": crawls["items"][0]["id"],
            "name": source["crawl"],
            "created_at": crawls["items"][0]["created_at"],
            "pages": 0,
            "urls": {},
            "source": {"id": source["id"], "name": "Toasters"},
            "job_ids": [job.json()["id"]],
            "default": False,
        }
    ]
    empty = await api.get("/api/pages", params={"crawl": source["crawl"]})
    assert (empty.status_code, empty.json()["items"]) == (200, [])


async def test_run_now_shows_the_run_it_brought_forward(api: Api) -> None:
    source = await _source(api, "Shop", "http://127.0.0.1:9/")
    body = {"source_id": source["id"], "url": "http://127.0.0.1:9/", "interval_minutes": 60}
    job = (await api.post("/api/v1/jobs", json=body)).json()
    assert (job["status"], job["forced_planned_at"]) == ("scheduled", None)
    forced = (await api.post(f"/api/v2/jobs/{job['id']}/force-run")).json()
    assert (forced["status"], forced["forced_planned_at"]) == ("scheduled", job["next_run_at"])
    assert forced["next_run_at"] <= time.time()  # due now


async def test_every_read_route_shows_every_crawl_or_one(
    api: Api, shop: Shop, make_settings: SettingsFactory
) -> None:
    settings = make_settings(discovery_sitemaps=False, database_url=str(api.store.engine.url))
    source = await _source(api, "Shop", shop.url)
    await _crawl_into(api, settings, source["crawl"], [shop.url])
    await _crawl_into(api, settings, "default", [shop.product_url("kettle")], max_pages=1)
    names = sorted([source["crawl"], "default"])

    pages = await _all_pages(api, "/api/pages")
    assert sorted((p["crawl"], p["url"]) for p in pages) == sorted(
        [(source["crawl"], shop.url)]
        + [(source["crawl"], shop.product_url(slug)) for slug in shop.prices]
        + [("default", shop.product_url("kettle"))]
    )
    assert len({p["id"] for p in pages}) == 5  # keyset paging across crawls: no repeat
    one = await _all_pages(api, "/api/pages", crawl="default")
    assert [(p["crawl"], p["url"]) for p in one] == [("default", shop.product_url("kettle"))]

    urls = await _all_pages(api, "/api/frontier/urls")
    assert {u["crawl"] for u in urls} == set(names)
    assert len(await _all_pages(api, "/api/frontier/urls", crawl=source["crawl"])) == 4
    stats = (await api.get("/api/frontier/stats")).json()
    assert stats["by_status"] == {"completed": 5, "pending": 1}  # default: "/" not fetched
    assert (await api.get("/api/stats")).json()["pages"] == 5
    assert (await api.get("/api/stats", params={"crawl": "default"})).json()["pages"] == 1
    links = (await api.get("/api/v1/discovered-links")).json()["items"]
    assert {(link["crawl"], link["parent_url"]) for link in links} == {
        (source["crawl"], shop.url),  # the products, found on the shop's index
        ("default", shop.product_url("kettle")),  # the index, found on the kettle's page
    }

    products = (await api.get("/api/products", params={"limit": 10})).json()["items"]
    assert len(products) == 4
    assert sorted(p["crawl"] for p in products) == ["default", *[source["crawl"]] * 3]
    kettles = await api.get("/api/products", params={"crawl": "default"})
    assert [(p["crawl"], p["name"]) for p in kettles.json()["items"]] == [
        ("default", "Steel Kettle")
    ]
    one = await api.get(f"/api/products/{kettles.json()['items'][0]['id']}")
    assert one.json()["crawl"] == "default"
    parsers = (await api.get("/api/parsers/stats", params={"source_id": source["id"]})).json()
    assert parsers["crawl"] == source["crawl"]

    crawls = {c["name"]: c for c in (await api.get("/api/crawls")).json()["items"]}
    assert (crawls[source["crawl"]]["pages"], crawls["default"]["pages"]) == (4, 1)
    assert crawls[source["crawl"]]["urls"] == {"completed": 4}
    assert (crawls["default"]["source"], crawls["default"]["default"]) == (None, True)

    for path in (
        "/api/pages",
        "/api/frontier/urls",
        "/api/frontier/stats",
        "/api/v1/discovered-links",
        "/api/parsers/stats",
        "/api/domains",
        "/api/errors",
        "/api/errors/summary",
        "/api/dead-letter",
        "/api/stats",
        "/api/stats/timeseries",
        "/api/products",
        "/api/search",
        "/api/v1/frontier",
    ):
        given = {"q": "kettle"} if path == "/api/search" else {}
        everything = await api.get(path, params=given)
        assert everything.status_code == 200, (path, everything.text)
        unknown = await api.get(path, params={**given, "crawl": "nope"})
        assert unknown.status_code == 404, path
        error = unknown.json()["error"]
        assert (error["code"], error["details"]) == (
            "unknown_crawl",
            {"crawl": "nope", "crawls": names},
        )
        assert error["message"] == f"no crawl named 'nope'; the crawls are: {', '.join(names)}"


async def test_parser_stats_of_every_crawl_sum_each_days_counts(api: Api) -> None:
    one, two = await api.store.ensure_crawl("one"), await api.store.ensure_crawl("two")
    row = {"day": 86400.0, "host": "a.test", "parser": "p", "parser_version": "1", "empty": 0,
           "errors": 0, "seconds": 0.5, "updated_at": 1.0}  # fmt: skip
    with api.store.engine.begin() as conn:
        conn.execute(
            insert(parser_stats),
            [
                {**row, "crawl_id": one, "attempts": 3, "successes": 3, "records": 6},
                {**row, "crawl_id": two, "attempts": 1, "successes": 0, "records": 0,
                 "empty": 1},
            ],
        )  # fmt: skip
    every = (await api.get("/api/parsers/stats")).json()
    [line] = every["items"]
    assert (line["attempts"], line["successes"], line["records"], line["seconds"]) == (
        4, 3, 6, 1.0,
    )  # fmt: skip
    assert line["success_rate"] == 0.75
    [mine] = (await api.get("/api/parsers/stats", params={"crawl": "two"})).json()["items"]
    assert (mine["attempts"], mine["successes"]) == (1, 0)


async def test_a_source_made_before_its_crawl_had_a_name_keeps_source_n(tmp_path: Any) -> None:
    async with SqlStore(f"sqlite:///{tmp_path / 'old.db'}") as store:
        migrate.upgrade(store.engine, "0023")
        with store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO sources (name, start_urls, max_depth, scope, max_pages, enabled,"
                    " created_at, updated_at, options) VALUES ('Old Shop', '[]', 0,"
                    ' \'{"allow_domains": [], "include": [], "exclude": []}\', 0, 1, 0, 0, \'{}\')'
                )
            )
        migrate.upgrade(store.engine)
        from harvestman.store.jobs.db import JobStore

        async with JobStore(store.engine) as jobs:
            (old,) = (await jobs.sources.list()).items
            assert old.crawl == f"source-{old.id}"
            assert await jobs.sources.by_crawl() == {f"source-{old.id}": (old.id, "Old Shop")}


def test_a_source_record_without_a_crawl_is_on_source_n() -> None:
    source = Source(id=7, name="x", start_urls=["http://a.test/"], created_at=0, updated_at=0)
    assert source.crawl == "source-7"


async def test_a_refused_start_url_names_the_setting_once(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings(), allow_networks=[]) as api:
        refused = await api.post(
            "/api/v1/sources", json={"name": "local", "start_urls": ["http://127.0.0.1:19200/"]}
        )
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["message"] == (
            "start_urls.0: URL refused: 127.0.0.1 port 19200 is a"
            " non-public address outside the network allow-list. To crawl it, add"
            ' "127.0.0.1:19200" to the setting network_allow and restart serve:'
            " HARVESTMAN_NETWORK_ALLOW=127.0.0.1:19200 in its environment, or network_allow ="
            ' ["127.0.0.1:19200"] in its config file (a CIDR such as 127.0.0.0/8 admits a'
            " whole network)."
        )
        assert (error["code"], error["details"]["setting"], error["details"]["allow"]) == (
            "url_refused",
            "network_allow",
            "127.0.0.1:19200",
        )
    async with running_api(make_settings(), allow_networks=["127.0.0.1:19200"]) as api:
        admitted = await api.post(
            "/api/v1/sources", json={"name": "local", "start_urls": ["http://127.0.0.1:19200/"]}
        )
        assert admitted.status_code == 201, admitted.text
