"""Price and availability history and the adaptive re-crawl of a product page, on SQLite and
PostgreSQL: a real shop on 127.0.0.1 whose JSON-LD price and availability change between
crawls, each crawl run at a chosen time (an injected clock)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from conftest import SettingsFactory, serve
from harvestman.store import SqlStore
from harvestman.store.schema import products, urls
from storerows import store_url
from support.crawling import crawl

BASELINE = 3600.0
CAP = 4 * 3600.0
START = 1_800_000_000.0
PARAGRAPH = (
    "<p>Every kettle in this shop is made by hand in a small workshop by the river, tested for "
    "a week before it is sold, and sent out in plain recycled paper with a note.</p>"
)


class Shop:
    """``/kettle``: one product whose offer the test changes; ``/about``: no product."""

    def __init__(self) -> None:
        self.port = 0
        self.price = "25.00"
        self.availability = "https://schema.org/InStock"
        self.fetches = 0
        self.etag: str | None = None  # given: the page carries it and answers 304 to it

    async def handle(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path == "/kettle":
            self.fetches += 1
            if self.etag is not None and request.headers.get("If-None-Match") == self.etag:
                return web.Response(status=304, headers={"ETag": self.etag})
            product = {
                "@context": "https://schema.org", "@type": "Product", "name": "Copper Kettle",
                "image": "/img/kettle.jpg", "brand": {"@type": "Brand", "name": "Hearth"},
                "offers": {"@type": "Offer", "price": self.price, "priceCurrency": "EUR",
                           "availability": self.availability},
            }  # fmt: skip
            html = (
                "<html><head><title>Copper Kettle</title><script type='application/ld+json'>"
                f"{json.dumps(product)}</script></head><body>{PARAGRAPH}</body></html>"
            )
            headers = {"ETag": self.etag} if self.etag else {}
            return web.Response(text=html, content_type="text/html", headers=headers)
        raise web.HTTPNotFound()

    @property
    def kettle(self) -> str:
        return f"http://127.0.0.1:{self.port}/kettle"


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    site = Shop()
    async with serve(site.handle) as port:
        site.port = port
        yield site


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


def _state(database_url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The kettle page's frontier row (due time, unchanged count) and the product's history."""
    store = SqlStore(database_url)
    try:
        with store.engine.connect() as conn:
            row = conn.execute(
                select(urls.c.next_crawl_at, urls.c.recrawl_unchanged).where(
                    urls.c.url.like("%/kettle")
                )
            ).one()
            product_id = conn.execute(select(products.c.id)).scalar_one()
        found = store.product_history(product_id)
        assert found is not None
        changes, _ = found
    finally:
        store.dispose()
    return {"due": row.next_crawl_at, "unchanged": row.recrawl_unchanged}, [
        {k: change[k] for k in ("changed_at", "price", "currency", "availability")}
        for change in changes
    ]


def _change(at: float, price: str, availability: str = "in_stock") -> dict[str, Any]:
    return {"changed_at": at, "price": Decimal(price), "currency": "EUR",
            "availability": availability}  # fmt: skip


async def test_each_change_is_kept_and_the_page_comes_due_sooner_after_one(
    shop: Shop, database_url: str, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        database_url=database_url, discovery_sitemaps=False,
        products_recrawl_interval=BASELINE, products_recrawl_max_interval=CAP,
    )  # fmt: skip

    # First sighting: one history row, due after the baseline.
    await crawl(settings, shop.kettle, clock=lambda: START)
    page, history = _state(database_url)
    assert page == {"due": START + BASELINE, "unchanged": 0}
    assert history == [_change(START, "25")]

    # Not yet due: nothing is fetched.
    await crawl(settings, shop.kettle, clock=lambda: START + BASELINE - 1)
    assert shop.fetches == 1

    # Due, unchanged: no history; the interval doubles, then doubles again.
    t1 = START + BASELINE
    await crawl(settings, shop.kettle, clock=lambda: t1)
    page, history = _state(database_url)
    assert (shop.fetches, page, len(history)) == (2, {"due": t1 + 2 * BASELINE, "unchanged": 1}, 1)
    t2 = t1 + 2 * BASELINE
    await crawl(settings, shop.kettle, clock=lambda: t2 - 1)  # still within the longer wait
    assert shop.fetches == 2
    await crawl(settings, shop.kettle, clock=lambda: t2)
    page, _ = _state(database_url)
    assert page == {"due": t2 + 4 * BASELINE, "unchanged": 2}
    t3 = t2 + 4 * BASELINE
    await crawl(settings, shop.kettle, clock=lambda: t3)
    page, _ = _state(database_url)
    assert page == {"due": t3 + CAP, "unchanged": 3}  # 8 h, capped at 4 h

    # The price changes: a history row, and the page is due after the baseline again.
    shop.price = "19.50"
    t4 = t3 + CAP
    await crawl(settings, shop.kettle, clock=lambda: t4)
    page, history = _state(database_url)
    assert page == {"due": t4 + BASELINE, "unchanged": 0}
    assert history == [_change(START, "25"), _change(t4, "19.5")]

    # Then it sells out: availability alone is a change too.
    shop.availability = "https://schema.org/OutOfStock"
    t5 = t4 + BASELINE
    await crawl(settings, shop.kettle, clock=lambda: t5)
    page, history = _state(database_url)
    assert page == {"due": t5 + BASELINE, "unchanged": 0}
    assert history == [
        _change(START, "25"), _change(t4, "19.5"), _change(t5, "19.5", "out_of_stock"),
    ]  # fmt: skip
    assert shop.fetches == 6


@pytest.mark.parametrize(
    ("interval", "ttl"),
    [(0.0, 7 * 86400.0), (BASELINE, 0.0)],
    ids=["no product interval", "a visited ttl of 0"],
)
async def test_without_a_recrawl_interval_a_product_page_waits_the_visited_ttl(
    shop: Shop, database_url: str, make_settings: SettingsFactory, interval: float, ttl: float
) -> None:
    settings = make_settings(
        database_url=database_url, discovery_sitemaps=False,
        products_recrawl_interval=interval, crawl_visited_ttl=ttl,
    )  # fmt: skip

    await crawl(settings, shop.kettle, clock=lambda: START)

    page, history = _state(database_url)
    assert page == {"due": START + ttl, "unchanged": None}
    assert history == [_change(START, "25")]


async def test_a_304_counts_as_an_unchanged_re_crawl(
    shop: Shop, database_url: str, make_settings: SettingsFactory
) -> None:
    settings = make_settings(
        database_url=database_url, discovery_sitemaps=False,
        products_recrawl_interval=BASELINE, products_recrawl_max_interval=CAP,
    )  # fmt: skip
    shop.etag = '"kettle-v1"'
    await crawl(settings, shop.kettle, clock=lambda: START)

    t1 = START + BASELINE
    await crawl(settings, shop.kettle, clock=lambda: t1)  # asked with the ETag: 304

    page, history = _state(database_url)
    assert shop.fetches == 2
    assert page == {"due": t1 + 2 * BASELINE, "unchanged": 1}
    assert history == [_change(START, "25")]
