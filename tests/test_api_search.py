"""``GET /api/search`` over a real SQLite store: ranking, highlights, filters, paging, and bad
queries answered in the API's error shape (the search itself on both stores: test_search.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, get_args

import pytest
from sqlalchemy import text

from apiclient import Api, running_api
from conftest import SettingsFactory
from harvestman.api.routes.search import Availability
from harvestman.extract.vocabulary import AVAILABILITY_VALUES
from test_search import page, product, write, write_products


@pytest.fixture
async def api(make_settings: SettingsFactory) -> AsyncIterator[Api]:
    async with running_api(make_settings()) as running:
        with running.store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO crawls (name, created_at, seeds) "
                    "VALUES ('one', 0, '[]'), ('two', 0, '[]')"
                )
            )
        yield running


async def search(api: Api, **params: Any) -> dict[str, Any]:
    response = await api.get("/api/search", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def names(body: dict[str, Any]) -> list[str]:
    return [item.get("requested_url", item.get("url", "")).rsplit("/", 1)[1]
            for item in body["items"]]  # fmt: skip


async def test_pages_ranked_with_escaped_highlighted_snippets(api: Api) -> None:
    write(
        api.store.engine,
        page("text", text="the <b>zephyr</b> & other winds", at=10.0),
        page("title", title="Zephyr <script>", text="a west wind", at=20.0),
    )

    body = await search(api, q="zephyr")

    assert names(body) == ["title", "text"]
    title, text_hit = body["items"]
    assert (title["title"], title["host"], title["fetched_at"]) == (
        "Zephyr <script>",
        "a.test",
        20.0,
    )
    assert title["url"] == "https://a.test/title"
    assert text_hit["snippet"] == "the &lt;b&gt;<mark>zephyr</mark>&lt;/b&gt; &amp; other winds"
    assert title["rank"] > text_hit["rank"] > 0
    assert {k: body[k] for k in ("target", "total", "total_is_exact", "limit", "offset")} == {
        "target": "pages", "total": 2, "total_is_exact": True, "limit": 20, "offset": 0
    }  # fmt: skip
    assert (body["next_offset"], body["ignored"]) == (None, [])


async def test_pages_through_results_with_next_offset(api: Api) -> None:
    write(api.store.engine, *(page(f"p{n}", text="zephyr " * n) for n in (5, 4, 3, 2, 1)))

    seen, offsets, offset = [], [], 0
    while offset is not None:
        offsets.append(offset)
        body = await search(api, q="zephyr", limit=2, offset=offset)
        seen.extend(names(body))
        offset = body["next_offset"]

    assert (seen, offsets) == (["p5", "p4", "p3", "p2", "p1"], [0, 2, 4])


async def test_filters_by_crawl_domain_and_dates(api: Api) -> None:
    write(
        api.store.engine,
        page("old", text="zephyr", host="www.b.test", at=100.0),
        page("new", text="zephyr", host="b.test", at=300.0),
        page("elsewhere", text="zephyr", host="c.test", at=300.0),
        page("two", text="zephyr", host="b.test", at=300.0, crawl=2),
    )

    every = await search(api, q="zephyr")
    assert sorted(names(every)) == ["elsewhere", "new", "old", "two"]
    # Over every crawl each hit says whose it is: one page stored by two crawls is two hits.
    assert {(h["requested_url"].rsplit("/", 1)[1], h["crawl_id"], h["crawl"])
            for h in every["items"]} == {("elsewhere", 1, "one"), ("new", 1, "one"),
                                         ("old", 1, "one"), ("two", 2, "two")}  # fmt: skip
    # And which stored page it is.
    for hit in every["items"]:
        detail = await api.get(f"/api/pages/{hit['page_id']}")
        assert (detail.status_code, detail.json()["url"]) == (200, hit["requested_url"])
    assert sorted(names(await search(api, q="zephyr", crawl="one", domain="b.test"))) == [
        "new", "old"
    ]  # fmt: skip
    assert names(await search(api, q="zephyr", crawl="two")) == ["two"]
    assert names(await search(api, q="zephyr", crawl="one", since=200, until=400,
                              domain="B.test")) == ["new"]  # fmt: skip
    assert names(await search(api, q="zephyr", until=200)) == ["old"]
    missing = await api.get("/api/search", params={"q": "zephyr", "crawl": "nope"})
    assert (missing.status_code, missing.json()["error"]["details"]) == (
        404,
        {"crawl": "nope", "crawls": ["one", "two"]},
    )


async def test_products_by_price_currency_and_availability(api: Api) -> None:
    write_products(
        api.store.engine,
        product("kettle cheap", price="9.99"),
        product("kettle dear", price="120.00"),
        product("kettle gone", price="30.00", availability="out_of_stock"),
        product("kettle dollars", price="30.00", currency="USD"),
        product("toaster", price="30.00"),
    )

    every = await search(api, q="kettle", target="products")
    assert sorted(i["name"] for i in every["items"]) == [
        "kettle cheap", "kettle dear", "kettle dollars", "kettle gone"
    ]  # fmt: skip
    priced = await search(api, q="kettle", target="products", min_price=5, max_price=50,
                          currency="eur", availability=["in_stock", "preorder"])  # fmt: skip
    (hit,) = priced["items"]
    assert {k: hit[k] for k in ("name", "price", "currency", "availability", "url", "host")} == {
        "name": "kettle cheap", "price": "9.99", "currency": "EUR", "availability": "in_stock",
        "url": "https://shop.test/kettle cheap", "host": "shop.test",
    }  # fmt: skip
    assert hit["snippet"] == "<mark>kettle</mark> cheap"
    gone = await search(api, q="kettle", target="products", availability="out_of_stock")
    assert [i["name"] for i in gone["items"]] == ["kettle gone"]


BAD_QUERIES: list[tuple[dict[str, Any], str]] = [
    ({"q": "!!! ..."}, "the query has no word to look for (punctuation alone is ignored)"),
    ({"q": '-diesel -"heat pump"'}, "the query only excludes words: add a word to look for"),
    ({"q": "x", "min_price": 1}, "min_price filter products: add target=products"),
    ({"q": "x", "availability": "in_stock", "currency": "EUR"},
     "currency, availability filter products: add target=products"),
    ({"q": "x", "since": 5, "until": 5}, "since must be before until"),
    ({"q": "x", "target": "products", "min_price": 9, "max_price": 1},
     "min_price is above max_price"),
    ({"q": ""}, "the request is invalid"),
    ({"q": "x" * 1001}, "the request is invalid"),
    ({"q": "x", "offset": 1000}, "the request is invalid"),
    ({"q": "x", "limit": 101}, "the request is invalid"),
    ({"q": "x", "target": "images"}, "the request is invalid"),
    ({"q": "x", "target": "products", "availability": "maybe"}, "the request is invalid"),
    ({"q": "x", "since": "nan"}, "the request is invalid"),
]  # fmt: skip


async def test_bad_queries_are_422_in_the_error_shape(api: Api) -> None:
    for params, message in BAD_QUERIES:
        response = await api.get("/api/search", params=params)

        assert response.status_code == 422, (params, response.text)
        error = response.json()["error"]
        assert (error["status"], error["message"]) == (422, message)
        code = "invalid" if message == "the request is invalid" else "invalid_query"
        assert error["code"] == code


async def test_operator_syntax_is_matched_as_words(api: Api) -> None:
    write(api.store.engine, page("hit", text="near zephyr and"))

    for q in ("NEAR(zephyr", 'zephyr"', "zephyr*", "AND zephyr OR", "{zephyr}:^"):
        assert names(await search(api, q=q)) == ["hit"], q
    # A NUL is no text at all: refused at the door, as in every parameter (test_api_boundary).
    refused = await api.get("/api/search", params={"q": "zephyr\x00"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_text")


async def test_product_hits_carry_the_product_record_and_every_availability_filters(
    api: Api,
) -> None:
    write_products(
        api.store.engine,
        {**product("anvil aggregate", price="119.99", availability="made_to_order"),
         "sku": "0446310786", "mpn": "925872", "gtin": "09506000134352", "condition": "used",
         "low_price": "119.99", "high_price": "199.99", "offer_count": 5, "rating": "4.4",
         "best_rating": None, "worst_rating": None, "review_count": 89, "rating_count": None,
         "sources": '["json-ld", "microdata"]', "confidence": 0.75},
        {**product("anvil plain", price="5.00", position=1), "sku": None, "mpn": None,
         "gtin": None, "condition": None, "low_price": None, "high_price": None,
         "offer_count": None, "rating": None, "best_rating": None, "worst_rating": None,
         "review_count": None, "rating_count": None, "sources": None, "confidence": None},
    )  # fmt: skip

    found = await search(api, q="anvil", target="products", availability="made_to_order")
    (hit,) = found["items"]
    fields = (
        "name",
        "sku",
        "mpn",
        "gtin",
        "condition",
        "low_price",
        "high_price",
        "offer_count",
        "rating",
        "best_rating",
        "review_count",
        "rating_count",
        "sources",
        "confidence",
        "crawl",
    )
    assert {k: hit[k] for k in fields} == {
        "name": "anvil aggregate", "sku": "0446310786", "mpn": "925872",
        "gtin": "09506000134352", "condition": "used", "low_price": "119.99",
        "high_price": "199.99", "offer_count": 5, "rating": "4.4", "best_rating": None,
        "review_count": 89, "rating_count": None, "sources": ["json-ld", "microdata"],
        "confidence": 0.75, "crawl": "one",
    }  # fmt: skip
    plain = await search(api, q="anvil", target="products", availability="in_stock")
    assert [(i["name"], i["sources"], i["confidence"]) for i in plain["items"]] == [
        ("anvil plain", [], None)
    ]


def test_the_availability_filter_accepts_exactly_the_stored_values() -> None:
    assert get_args(Availability) == AVAILABILITY_VALUES
