"""``GET /api/pages/{id}`` (a page's detail and its archived body) after a real crawl of a local
shop, and the downloads ``GET /api/pages/export`` and ``GET /api/products/export``: the exact
CSV and JSONL a filtered list becomes, batch by batch, bounded, over a real store."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

import harvestman.api.downloads
from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.api.routes.pages import EXPORT_COLUMNS
from productrows import add_catalogue
from shopsite import running_shop
from storerows import NOW, add_crawl, add_page
from support.crawling import crawl


async def test_a_page_detail_shows_its_fetch_check_origin_links_and_products(
    tmp_path: Path, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        network_allow=["127.0.0.0/8"],
        archive_enabled=True,
        archive_dir=str(tmp_path / "archive"),
        crawl_name="shop",
    )
    async with running_shop() as shop:
        crawled = await crawl(settings, shop.url("/"))
        body_of_kettle = shop.html("/p/kettle")
    pages = crawled.pages_by_url
    home, kettle, app = pages[shop.url("/")], pages[shop.url("/p/kettle")], pages[shop.url("/js")]

    async with running_api(settings) as api:
        answer = await api.get(f"/api/pages/{kettle['id']}")
        assert answer.status_code == 200, answer.text
        detail = answer.json()
        assert {key: detail[key] for key in ("url", "status_code", "title", "canonical")} == {
            "url": shop.url("/p/kettle"),
            "status_code": 200,
            "title": "Steel Kettle",
            "canonical": shop.url("/p/kettle"),
        }
        assert (detail["crawl"], detail["validation_status"], detail["rejection_reason"]) == (
            "shop",
            "ok",
            None,
        )
        assert detail["crawl_duration_ms"] is not None
        assert detail["fetched_at"] > 0
        assert detail["frontier"]["etag"]  # the one response header kept, with Last-Modified
        frontier = detail["frontier"]
        assert (frontier["depth"], frontier["discovered_via"], frontier["parent_url"]) == (
            1,
            "link",
            shop.url("/"),
        )
        assert frontier["parent_page_id"] == home["id"]  # the home page's detail
        assert frontier["children"] == 0  # its only link (home) was found before
        assert [(p["name"], p["price"], p["currency"]) for p in detail["products"]] == [
            ("Steel Kettle", "25", "EUR")
        ]
        assert detail["archived"] is True
        assert "text" not in detail
        assert "simhash" not in detail

        # The home page revealed the three others; the app shell was rejected, and says why.
        home_detail = (await api.get(f"/api/pages/{home['id']}")).json()
        assert home_detail["frontier"]["children"] == 3
        assert home_detail["frontier"]["discovered_via"] == "seed"
        assert home_detail["products"] == []
        app_detail = (await api.get(f"/api/pages/{app['id']}")).json()
        assert (app_detail["validation_status"], app_detail["rejection_reason"]) == (
            "soft",
            "needs_js",
        )

        # The archived body comes back byte for byte, as a download never shown inline.
        body = await api.get(f"/api/pages/{kettle['id']}/body")
        assert body.status_code == 200
        assert body_of_kettle is not None
        assert body.content == body_of_kettle.encode()
        assert body.headers["content-type"] == "application/octet-stream"
        assert body.headers["content-disposition"].startswith('attachment; filename="page-')
        assert body.headers["content-security-policy"] == "sandbox"

        missing = await api.get("/api/pages/999999")
        assert (missing.status_code, missing.json()["error"]["message"]) == (
            404,
            "no page 999999",
        )


async def test_a_page_without_an_archived_body_says_how_to_keep_bodies(
    make_settings: SettingsFactory,
) -> None:
    async with running_api(make_settings()) as api:
        crawl_id = add_crawl(api.store.engine, "shop")
        add_page(api.store.engine, crawl_id, "https://a.test/x", 1)
        [item] = (await api.get("/api/pages", params={"crawl": "shop"})).json()["items"]
        detail = (await api.get(f"/api/pages/{item['id']}")).json()
        assert (detail["archived"], detail["frontier"], detail["products"]) == (False, None, [])
        body = await api.get(f"/api/pages/{item['id']}/body")
        assert body.status_code == 404
        assert "archive_enabled" in body.json()["error"]["message"]


def _pages(api: Api) -> dict[str, int]:
    """Two crawls; the shop's three pages (one a tricky title) and one page elsewhere."""
    engine = api.store.engine
    shop, other = add_crawl(engine, "shop"), add_crawl(engine, "other")
    add_page(engine, shop, "https://a.test/1", 3, title='Kettles, "steel" and\nglass')
    add_page(engine, shop, "https://b.test/2", 2, title='=HYPERLINK("x")', status_code=404)
    add_page(engine, shop, "https://a.test/3", 1, content_length=2048, crawl_duration_ms=15)
    add_page(engine, other, "https://a.test/elsewhere", 1)
    return {"shop": shop, "other": other}


def _csv_line(values: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(values)
    return out.getvalue()


async def test_a_page_download_holds_the_filtered_list_exactly(
    make_settings: SettingsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harvestman.api.downloads, "BATCH", 2)  # three pages: two batches
    async with running_api(make_settings()) as api:
        crawl_ids = _pages(api)
        listed = (await api.get("/api/pages", params={"crawl": "shop"})).json()["items"]
        ids = [item["id"] for item in listed]
        assert len(ids) == 3  # newest first: 3, 2, 1

        answer = await api.get("/api/pages/export", params={"crawl": "shop", "format": "csv"})
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "text/csv; charset=utf-8"
        assert answer.headers["x-export-limit"] == "1000000"
        disposition = answer.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="pages-shop-')
        assert disposition.endswith('.csv"')
        day = 86400

        def iso(age: float) -> str:
            import datetime

            when = datetime.datetime.fromtimestamp(NOW - age * day, datetime.UTC)
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")

        def row(ident: int, url: str, **values: Any) -> str:
            fields = {name: "" for name in EXPORT_COLUMNS}
            fields.update(crawl_id=str(crawl_ids["shop"]), crawl="shop")
            fields.update(id=str(ident), url=url, final_url=url, host=url.split("/")[2],
                          status_code="200", content_type="text/html", title=f"title of {url}",
                          links_count="3")  # fmt: skip
            fields.update({k: str(v) for k, v in values.items()})
            return _csv_line([fields[name] for name in EXPORT_COLUMNS])

        assert answer.text == (
            _csv_line(list(EXPORT_COLUMNS))
            + row(ids[0], "https://a.test/3", content_length=2048, crawl_duration_ms=15,
                  fetched_at=iso(1))
            + row(ids[1], "https://b.test/2", title="'=HYPERLINK(\"x\")", status_code=404,
                  fetched_at=iso(2))
            + row(ids[2], "https://a.test/1", title="Kettles, \"steel\" and\nglass",
                  fetched_at=iso(3))
        )  # fmt: skip

        # JSONL: each line one item of the list, exactly; a filter narrows both alike.
        jsonl = await api.get(
            "/api/pages/export", params={"crawl": "shop", "format": "jsonl", "host": "a.test"}
        )
        assert jsonl.headers["content-type"] == "application/x-ndjson"
        lines = [orjson.loads(line) for line in jsonl.content.splitlines()]
        assert lines == [item for item in listed if item["host"] == "a.test"]
        assert jsonl.content.endswith(b"\n")

        # Without a crawl: every crawl's pages, each saying its crawl, as the list does.
        everything = await api.get("/api/pages/export", params={"format": "jsonl"})
        every_page = (await api.get("/api/pages")).json()["items"]
        assert [orjson.loads(line) for line in everything.content.splitlines()] == every_page
        assert sorted(item["crawl"] for item in every_page) == ["other", "shop", "shop", "shop"]
        assert everything.headers["content-disposition"].startswith(
            'attachment; filename="pages-all-'
        )

        # A filter that matches nothing is a header alone; an unknown crawl a 404.
        none = await api.get("/api/pages/export", params={"crawl": "shop", "status_code": 500})
        assert none.text == _csv_line(list(EXPORT_COLUMNS))
        unknown = await api.get("/api/pages/export", params={"crawl": "nope"})
        assert unknown.status_code == 404
        bad = await api.get("/api/pages/export", params={"crawl": "shop", "format": "xlsx"})
        assert bad.status_code == 422


async def test_a_download_stops_at_its_bound(make_settings: SettingsFactory) -> None:
    async with running_api(make_settings(), export_max_rows=2) as api:
        _pages(api)
        answer = await api.get("/api/pages/export", params={"crawl": "shop", "format": "jsonl"})
        assert answer.headers["x-export-limit"] == "2"
        urls = [orjson.loads(line)["url"] for line in answer.content.splitlines()]
        assert urls == ["https://a.test/3", "https://b.test/2"]


async def test_a_product_download_holds_the_filtered_list_exactly(
    make_settings: SettingsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harvestman.api.downloads, "BATCH", 1)
    async with running_api(make_settings()) as api:
        add_catalogue(api.store, 7)  # shop-a.test holds products 0, 3 and 6
        query = {"domain": "shop-a.test", "sort": "price", "order": "asc"}
        listed = (await api.get("/api/products", params=query)).json()["items"]
        assert [item["name"] for item in listed] == ["Product 3", "Product 6"]  # 0: no price

        answer = await api.get("/api/products/export", params={**query, "format": "jsonl"})
        assert answer.status_code == 200, answer.text
        assert [orjson.loads(line) for line in answer.content.splitlines()] == listed
        assert answer.headers["content-disposition"].startswith(
            'attachment; filename="products-all-'
        )

        table = await api.get("/api/products/export", params={**query, "format": "csv"})
        three, six = (item["id"] for item in listed)
        assert table.text.splitlines() == [
            "id,name,brand,category,price,currency,availability,condition,low_price,high_price,"
            "offer_count,rating,review_count,sku,gtin,mpn,url,page_url,domain,crawl_id,crawl,source,"
            "parser,first_seen_at,changed_at,last_seen_at,images",
            f"{three},Product 3,,Kitchen,3.25,USD,,,,,,3.5,,,,,https://shop-a.test/p/3,"
            "https://shop-a.test/p/3,shop-a.test,1,shop,json-ld,harvestman.products@2,"
            "2027-01-15T08:00:00Z,2027-01-15T08:03:00Z,2027-01-15T08:00:01Z,",
            f"{six},Product 6,Initech,Kitchen,6.25,EUR,preorder,,,,,1.5,,,,,https://shop-a.test/p/6,"
            "https://shop-a.test/p/6,shop-a.test,1,shop,json-ld,harvestman.products@2,"
            f"2027-01-15T08:00:00Z,2027-01-15T08:06:00Z,2027-01-15T08:00:01Z,https://img.test/{six}.jpg",
        ]  # fmt: skip

        bad = await api.get("/api/products/export", params={"min_price": 5, "max_price": 1})
        assert bad.status_code == 422


async def test_a_download_reads_the_next_batch_only_once_the_last_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(harvestman.api.downloads, "BATCH", 2)
    asked: list[tuple[int | None, int]] = []

    async def rows(after: int | None, limit: int) -> tuple[list[dict[str, Any]], int | None]:
        asked.append((after, limit))
        start = after or 0
        return [{"n": start + i} for i in range(limit)], start + limit  # an endless list

    response = harvestman.api.downloads.download_response(
        "csv", "pages", rows, columns=("n",), flatten=lambda row: [row["n"]], most=5, scope="all"
    )
    body = response.body_iterator
    assert await anext(body) == b"n\r\n"  # the header, before any read
    assert asked == []
    assert await anext(body) == b"0\r\n1\r\n"
    assert asked == [(None, 2)]
    rest = [chunk async for chunk in body]
    assert rest == [b"2\r\n3\r\n", b"4\r\n"]  # stopped at the bound, asking no more
    assert asked == [(None, 2), (2, 2), (4, 1)]
