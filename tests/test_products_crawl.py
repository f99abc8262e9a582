"""A crawl of a local shop stores every product field, on SQLite and PostgreSQL, and exports it.

The shop's pages are the fixtures of tests/fixtures/products/, each citing the public example
it is modelled on (schema.org's Product and AggregateOffer examples, Google's product examples).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conftest import SettingsFactory, serve
from harvestman.export import PRODUCT_FIELDS, export_pages
from harvestman.store import SqlStore
from storerows import store_url
from support.crawling import crawl

FIXTURES = Path(__file__).parent / "fixtures" / "products"
PAGES = {
    "/p/anvil": "google_executive_anvil.html",
    "/p/monitor": "schemaorg_aggregate_offer_monitor.html",
    "/p/microwave": "schemaorg_product_microwave.html",
    "/p/organiser": "three_forms.html",
    "/p/checked": "validation.html",
}
# Validation rejects a page under 500 bytes without a paragraph: every page gets one.
PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)


@pytest.fixture
async def shop() -> AsyncIterator[int]:
    async def handle(request: web.Request) -> web.Response:
        if request.path == "/":
            links = "".join(f'<a href="{path}">{path}</a> ' for path in PAGES)
            html = f"<html><head><title>Shop</title></head><body>{PARAGRAPH}{links}</body></html>"
            return web.Response(text=html, content_type="text/html")
        name = PAGES.get(request.path)
        if name is None:
            raise web.HTTPNotFound()
        html = (FIXTURES / name).read_text().replace("</body>", PARAGRAPH + "</body>")
        return web.Response(text=html, content_type="text/html")

    async with serve(handle) as port:
        yield port


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


def exported(database_url: str, fmt: str) -> str:
    out = io.BytesIO()
    store = SqlStore(database_url)
    try:
        [crawl_id] = store.crawl_ids().values()
        export_pages(store, crawl_id, fmt, out, what="products")
    finally:
        store.engine.dispose()
    return out.getvalue().decode()


NONE: dict[str, Any] = {
    "mpn": None, "condition": None, "low_price": None, "high_price": None, "offer_count": None,
    "best_rating": None, "worst_rating": None, "rating_count": None, "rating": None,
    "review_count": None, "brand": None, "sku": None, "gtin": None, "availability": None,
}  # fmt: skip
# What the export says of each stored product, by page and name (fields not listed: NONE's).
EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    ("/p/anvil", "Executive Anvil"): {
        "price": "119.99", "currency": "USD", "low_price": "119.99", "high_price": "199.99",
        "offer_count": 5, "rating": "4.4", "review_count": 89, "brand": "ACME",
        "sku": "0446310786", "mpn": "925872", "sources": ["json-ld"], "confidence": 0.5,
    },
    ("/p/anvil", "Executive Anvil, used"): {
        "price": "119.99", "currency": "USD", "availability": "in_stock", "condition": "used",
        "brand": "ACME", "sku": "0446310787", "gtin": "09506000134352",
        "sources": ["json-ld"], "confidence": 0.5,
    },
    ("/p/monitor", 'Dell UltraSharp 30" LCD Monitor'): {
        "price": "1250", "currency": "USD", "low_price": "1250", "high_price": "1495",
        "offer_count": 8, "rating": "87", "best_rating": "100", "rating_count": 24,
        "sources": ["json-ld"], "confidence": 0.5,
    },
    ("/p/microwave", 'Kenmore White 17" Microwave'): {
        "price": "55", "currency": "USD", "availability": "in_stock", "rating": "3.5",
        "review_count": 11, "sources": ["json-ld"], "confidence": 0.5,
    },
    ("/p/organiser", "Walnut Desk Organiser"): {
        "price": "34.5", "currency": "EUR", "availability": "made_to_order", "condition": "new",
        "sku": "WDO-7", "mpn": "WDO-7", "gtin": "96385074",
        "sources": ["json-ld", "microdata", "opengraph"], "confidence": 1.0,
    },
    ("/p/checked", "Seven Stars"): {
        "price": "10", "currency": None, "review_count": 3, "sources": ["json-ld"],
        "confidence": 0.5,
    },
    ("/p/checked", "Ten Out Of Ten"): {
        "price": None, "currency": None, "rating": "10", "best_rating": "10", "worst_rating": "0",
        "sources": ["json-ld"], "confidence": 0.5,
    },
    ("/p/checked", "Upside Down"): {
        "price": "12.5", "currency": "GBP", "high_price": "20", "sources": ["json-ld"],
        "confidence": 0.5,
    },
    ("/p/checked", "Backwards Range"): {
        "price": "30", "currency": "GBP", "low_price": "30", "offer_count": 2,
        "sources": ["json-ld"], "confidence": 0.5,
    },
}  # fmt: skip


async def test_a_crawl_stores_and_exports_every_product_field(
    shop: int, database_url: str, make_settings: SettingsFactory
) -> None:
    settings = make_settings(database_url=database_url, discovery_sitemaps=False, crawl_max_depth=1)
    root = f"http://127.0.0.1:{shop}"
    crawled = await crawl(settings, f"{root}/")

    assert crawled.crawler.stats["extract/products/rejected"] == 1  # the nameless one
    lines = [json.loads(line) for line in exported(database_url, "jsonl").splitlines()]
    assert all(set(line) == {*PRODUCT_FIELDS, "images"} for line in lines)
    found = {
        (line["page_url"].removeprefix(root), line["name"]): {
            key: line[key] for key in ("price", "currency", "sources", "confidence", *NONE)
        }
        for line in lines
    }
    assert found == {key: {**NONE, **fields} for key, fields in EXPECTED.items()}

    rows = list(csv.DictReader(io.StringIO(exported(database_url, "csv"))))
    organiser = next(row for row in rows if row["name"] == "Walnut Desk Organiser")
    assert (organiser["sources"], organiser["confidence"], organiser["condition"]) == (
        "json-ld microdata opengraph", "1.0", "new"
    )  # fmt: skip


async def test_the_reasons_for_cleared_values_are_stored_with_the_product(
    shop: int, database_url: str, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        database_url=database_url, discovery_sitemaps=False, crawl_max_depth=0,
        extract_products_max_price=100,
    )  # fmt: skip
    await crawl(settings, f"http://127.0.0.1:{shop}/p/checked")

    store = SqlStore(database_url)
    try:
        [crawl_id] = store.crawl_ids().values()
        errors = {row["name"]: json.loads(row["errors"]) for row in store.iter_products(crawl_id)}
    finally:
        store.engine.dispose()
    assert errors == {
        "Seven Stars": ["currency 'EURO' is not an ISO 4217 code",
                        "ratingValue 7 skipped: outside 1..5"],
        "Ten Out Of Ten": ["price 5000000000 skipped: over the maximum 100",
                           "gtin13 '4006381333932' skipped: check digit 2, expected 1"],
        "Upside Down": ["lowPrice skipped: negative: '-5'", "price skipped: negative: '-3'",
                        "rating skipped: bestRating 1 is not above worstRating 5",
                        "gtin '12345' skipped: not 8, 12, 13 or 14 digits"],
        "Backwards Range": ["highPrice 20 skipped: below lowPrice 30"],
    }  # fmt: skip
