"""``GET /api/products``, ``/api/products/{id}`` and its ``/history`` over a real store (SQLite
and PostgreSQL): filters, orders, cursors without duplicates or gaps, the shape of a product,
and bad input answered with a clear 422 (or 404)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.api.paging import encode_cursor
from harvestman.store.schema import product_history
from productrows import T0, add_catalogue, catalogue
from storerows import store_url

COUNT = 40


@pytest.fixture(params=["sqlite", "postgresql"])
async def api(
    request: pytest.FixtureRequest, tmp_path: Path, make_settings: SettingsFactory
) -> AsyncIterator[Api]:
    settings = make_settings(database_url=store_url(request, tmp_path))
    async with running_api(settings, products_max_limit=25) as running:
        add_catalogue(running.store, COUNT)
        yield running


@pytest.fixture
async def sqlite_api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    """For what is refused before the store is asked: one store is enough."""
    async with running_api(make_settings(), products_max_limit=25) as running:
        add_catalogue(running.store, 3)
        yield running


async def walk(api: Api, limit: int, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(200):
        query = {**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        answer = await api.get("/api/products", params=query)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["limit"] == limit
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError("the cursor never ended")


def numbers(items: list[dict[str, Any]]) -> list[int]:
    return [int(item["name"].split()[1]) for item in items]


async def test_filters_and_an_order_page_through_every_match_once(api: Api) -> None:
    items = await walk(
        api, 3, crawl="shop", currency="usd", availability=["out_of_stock", "preorder"],
        sort="price", order="asc", min_price=2,
    )  # fmt: skip

    rows = catalogue(COUNT)
    expected = sorted(
        (row["price"], n) for n, row in enumerate(rows)
        if row["currency"] == "USD" and row["availability"] in ("out_of_stock", "preorder")
        and row["price"] is not None and row["price"] >= 2
    )  # fmt: skip
    assert numbers(items) == [n for _, n in expected]
    assert [item["offers"][0]["price"] for item in items] == [
        format(price.normalize(), "f") for price, _ in expected
    ]


async def test_by_rating_descending_with_brand_and_domain(api: Api) -> None:
    items = await walk(api, 2, brand="GLOBEX", domain="shop-b.test", sort="rating", min_rating=1)

    rows = catalogue(COUNT)
    expected = sorted(
        ((row["rating"], n) for n, row in enumerate(rows)
         if row["brand"] == "Globex" and row["domain"] == "shop-b.test"
         and row["rating"] is not None and row["rating"] >= 1),
        reverse=True,
    )  # fmt: skip
    assert numbers(items) == [n for _, n in expected]
    assert expected


async def test_a_product_its_shape_and_its_history(api: Api) -> None:
    [item] = (await api.get("/api/products", params={"sort": "price", "order": "asc",
                                                     "limit": 1, "brand": "initech"})).json()[
        "items"
    ]  # fmt: skip
    assert set(item) == {
        "id", "crawl_id", "crawl", "name", "brand", "category", "url", "domain", "sku", "gtin",
        "mpn", "rating", "best_rating", "worst_rating", "review_count", "rating_count", "source",
        "parser", "sources", "confidence", "offers", "images", "seen",
    }  # fmt: skip
    assert (item["url"], item["domain"]) == ("https://www.shop-b.test/p/34", "shop-b.test")
    assert item["offers"][0]["price"] == "0.25"
    with api.store.engine.begin() as conn:
        conn.execute(insert(product_history), [
            {"product_id": item["id"], "price": 1.5, "currency": "EUR",
             "availability": "in_stock", "changed_at": T0 + n}
            for n in range(5)
        ])  # fmt: skip

    one = await api.get(f"/api/products/{item['id']}")
    assert one.status_code == 200
    assert {k: v for k, v in one.json().items() if k not in ("description", "errors")} == item
    assert (one.json()["description"], one.json()["errors"]) == (None, [])

    changes, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        body = (await api.get(f"/api/products/{item['id']}/history", params=params)).json()
        changes += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert [(c["changed_at"], c["price"], c["availability"]) for c in changes] == [
        (T0 + n, "1.5", "in_stock") for n in range(5)
    ]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 26}, "limit"),  # above api_products_max_limit (25 here)
        ({"limit": 1001}, "limit"),
        ({"limit": 0}, "limit"),
        ({"currency": "EURO"}, "currency"),
        ({"currency": "E1R"}, "currency"),
        ({"availability": "sold"}, "availability"),
        ({"min_price": -1}, "min_price"),
        ({"min_price": "nan"}, "min_price"),
        ({"min_price": 5, "max_price": 4}, None),
        ({"brand": "b" * 201}, "brand"),
        ({"category": ""}, "category"),
        ({"parser": "p" * 101}, "parser"),
        ({"domain": "d" * 301}, "domain"),
        ({"since": -5}, "since"),
        ({"min_rating": 1e9}, "min_rating"),
        ({"sort": "name"}, "sort"),
        ({"order": "up"}, "order"),
        ({"cursor": "not-a-cursor"}, None),
        ({"cursor": encode_cursor("products-price-desc", "3.25|4")}, None),  # another order's
        ({"cursor": encode_cursor("products-changed-desc", "soon|4")}, None),
        ({"cursor": "c" * 401}, "cursor"),
    ],
)
async def test_bad_input_is_a_clear_422(
    sqlite_api: Api, params: dict[str, Any], field: str | None
) -> None:
    answer = await sqlite_api.get("/api/products", params=params)

    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"]["message"]
    if field is not None:
        assert field in answer.text


async def test_unknown_products_and_crawls_are_404s_and_strangers_are_refused(api: Api) -> None:
    assert (await api.get("/api/products/999999")).status_code == 404
    assert (await api.get("/api/products/999999/history")).status_code == 404
    assert (await api.get("/api/products", params={"crawl": "nope"})).status_code == 404
    assert (await api.get("/api/products/0")).status_code == 422
    assert (await api.client.get("/api/products")).status_code == 401
