"""A crawl of pages carrying values the store cannot hold finishes and keeps every healthy page:
`harvestman crawl` on SQLite and PostgreSQL, `harvestman worker --exit-when-done` on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import text

from conftest import serve
from harvestman.store import SqlStore, dialect
from storerows import store_url
from support.cli import run_cli

HUGE = "123456789012345678901234567890"
# Each product page's JSON-LD, by path: one value PostgreSQL refuses per page, and one healthy.
PRODUCTS: dict[str, dict[str, Any]] = {
    "/p/huge-price": {"name": "Huge", "offers": {"price": HUGE, "priceCurrency": "EUR"}},
    "/p/big-rating": {
        "name": "Rated", "offers": {"price": "5.00", "priceCurrency": "EUR"},
        # On its own scale, so that the extractor keeps it and the store's check clears it
        # (and the scale's top with it).
        "aggregateRating": {"ratingValue": 98765, "bestRating": 100000, "reviewCount": 12},
    },
    "/p/many-reviews": {
        "name": "Popular", "offers": {"price": "6.00", "priceCurrency": "EUR"},
        "aggregateRating": {"ratingValue": "4.5", "reviewCount": "3000000000"},
    },
    "/p/nul-name": {"name": "Ket\u0000tle", "offers": {"price": "7.00", "priceCurrency": "EUR"}},
    "/p/kettle": {"name": "Kettle", "offers": {"price": "19.99", "priceCurrency": "EUR"}},
}  # fmt: skip
LONG_LANG = "x" * 40  # crawled_pages.lang is VARCHAR(35)
# A real paragraph: a page under 500 bytes without one is rejected as too small.
PARAGRAPH = (
    "<p>Every item in this shop is made by hand in a small workshop by the river, tested for a"
    " week before it is sold, and sent out in plain recycled paper with a note from its maker.</p>"
)


class BadValueShop:
    """A shop whose product pages carry values past their columns, and one healthy page."""

    def __init__(self) -> None:
        self.port = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/":
            links = "".join(f'<a href="{path}">{path}</a> ' for path in [*PRODUCTS, "/about"])
            return self.page("Shop", f"{PARAGRAPH}<p>Everything we sell: {links}</p>")
        if request.path == "/about":
            return self.page("About", PARAGRAPH, lang=LONG_LANG)
        data = PRODUCTS.get(request.path)
        if data is None:
            raise web.HTTPNotFound()
        ld = {"@context": "https://schema.org", "@type": "Product", **data}
        head = f'<script type="application/ld+json">{json.dumps(ld)}</script>'
        return self.page(str(data["name"]).replace("\x00", ""), PARAGRAPH, head)

    @staticmethod
    def page(title: str, body: str, head: str = "", lang: str = "en") -> web.Response:
        html = (
            f'<html lang="{lang}"><head><title>{title}</title>{head}</head>'
            f"<body>{body}</body></html>"
        )
        return web.Response(text=html, content_type="text/html")

    def paths(self) -> list[str]:
        return sorted(["/", "/about", *PRODUCTS])


@pytest.fixture
async def shop() -> AsyncIterator[BadValueShop]:
    state = BadValueShop()
    async with serve(state.handle) as port:
        state.port = port
        yield state


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


def crawl_env(database_url: str) -> dict[str, str]:
    return {
        "HARVESTMAN_DATABASE_URL": database_url,
        "HARVESTMAN_FRONTIER_DELAY": "0",
        "HARVESTMAN_FETCH_TIMEOUT": "5",
        "HARVESTMAN_DISCOVERY_SITEMAPS": "false",
        "HARVESTMAN_CRAWL_MAX_DEPTH": "1",
        # Past NUMERIC(18, 4): the store's check, not the extractor's maximum, clears a price.
        "HARVESTMAN_EXTRACT_PRODUCTS_MAX_PRICE": "1e40",
        "HARVESTMAN_STORE_FLUSH_INTERVAL": "0.02",
        "HARVESTMAN_FRONTIER_REFRESH_INTERVAL": "0.2",
    }


def rows(database_url: str, query: str) -> list[tuple[Any, ...]]:
    engine = dialect.make_engine(database_url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(query))]
    finally:
        engine.dispose()


async def upgraded(database_url: str) -> None:
    async with SqlStore(database_url) as store:
        await store.upgrade()


async def assert_every_page_stored_with_its_values_fitted(
    shop: BadValueShop, database_url: str
) -> None:
    assert rows(database_url, "SELECT url, status FROM urls ORDER BY url") == [
        (shop.url(path), "completed") for path in shop.paths()
    ]
    assert rows(database_url, "SELECT url FROM crawled_pages ORDER BY url") == [
        (shop.url(path),) for path in shop.paths()
    ]
    assert rows(
        database_url, f"SELECT lang FROM crawled_pages WHERE url = '{shop.url('/about')}'"
    ) == [(None,)]
    stored = rows(
        database_url,
        "SELECT page_url, name, price, rating, review_count, errors FROM products",
    )
    found = {
        url: (name, price, rating, count, errors)
        for url, name, price, rating, count, errors in stored
    }
    assert set(found) == {shop.url(path) for path in PRODUCTS}
    assert found[shop.url("/p/huge-price")][1::3] == (
        None, json.dumps([f"price cleared: {HUGE} is outside NUMERIC(18, 4)"]),
    )  # fmt: skip
    assert found[shop.url("/p/big-rating")][2::2] == (
        None, json.dumps(["rating cleared: 98765 is outside NUMERIC(6, 2)",
                          "best_rating cleared: 100000 is outside NUMERIC(6, 2)"]),
    )  # fmt: skip
    assert found[shop.url("/p/many-reviews")][3:] == (
        None, json.dumps(["review_count cleared: 3000000000 is outside INTEGER"]),
    )  # fmt: skip
    assert found[shop.url("/p/nul-name")][::4] == ("Kettle", json.dumps(["name NUL removed"]))
    name, price, _, _, errors = found[shop.url("/p/kettle")]
    assert (name, float(price), errors) == ("Kettle", 19.99, None)

    logged = rows(
        database_url,
        "SELECT task, category, message FROM error_logs WHERE error_class = 'UnstorableValue'"
        " ORDER BY task",
    )
    assert logged == [
        (shop.url("/about"), "validation",
         "values changed to fit the store: page lang cleared: 40 characters, over VARCHAR(35)"),
        (shop.url("/p/big-rating"), "validation",
         "values changed to fit the store: product 0 rating cleared: 98765 is outside"
         " NUMERIC(6, 2); product 0 best_rating cleared: 100000 is outside NUMERIC(6, 2)"),
        (shop.url("/p/huge-price"), "validation",
         f"values changed to fit the store: product 0 price cleared: {HUGE} is outside"
         " NUMERIC(18, 4)"),
        (shop.url("/p/many-reviews"), "validation",
         "values changed to fit the store: product 0 review_count cleared: 3000000000 is"
         " outside INTEGER"),
        (shop.url("/p/nul-name"), "validation",
         "values changed to fit the store: product 0 name NUL removed"),
    ]  # fmt: skip

    code, out, err = await run_cli(
        "dead-letter", "list", env={"HARVESTMAN_DATABASE_URL": database_url}
    )
    assert code == 0, err
    assert (out, err.strip()) == ("", "0 of 0 failed URLs shown")


async def test_a_crawl_of_values_the_store_cannot_hold_keeps_every_page(
    shop: BadValueShop, database_url: str
) -> None:
    await upgraded(database_url)
    code, _, err = await run_cli(
        "crawl", shop.url("/"), "--no-progress", env=crawl_env(database_url)
    )
    assert code == 0, err
    await assert_every_page_stored_with_its_values_fitted(shop, database_url)


async def test_a_worker_on_postgres_stores_the_healthy_pages_and_exits_when_done(
    shop: BadValueShop, pg_schema_url: str
) -> None:
    env = crawl_env(pg_schema_url)
    await upgraded(pg_schema_url)
    code, _, err = await run_cli("seed", shop.url("/"), env=env)
    assert code == 0, err

    code, _, err = await run_cli("worker", "--exit-when-done", env=env)

    assert code == 0, err
    await assert_every_page_stored_with_its_values_fitted(shop, pg_schema_url)
