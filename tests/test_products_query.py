"""The product query on SQLite and PostgreSQL: every filter keeps exactly the products it
names, every order pages through them without a duplicate or a gap, and a product comes with
its images, offers and where it was seen."""

from __future__ import annotations

import doctest
from collections.abc import AsyncIterator, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select

from harvestman import elastic, recrawl
from harvestman.store import SqlStore
from harvestman.store.products import ProductQuery
from harvestman.store.products import history as history_module
from harvestman.store.products import query as query_module
from harvestman.store.products.query import INDEXED_CHARS
from harvestman.store.schema import crawls, images
from productrows import T0, add_catalogue, catalogue
from storerows import store_url

COUNT = 90


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStore]:
    async with SqlStore(store_url(request, tmp_path)) as opened:
        await opened.upgrade()
        yield opened


@pytest.fixture
def crawl_id(store: SqlStore) -> int:
    return add_catalogue(store, COUNT)


def everything(store: SqlStore, query: ProductQuery, limit: int) -> list[dict[str, Any]]:
    """Every page of ``query``, following the keys; a key never repeats."""
    found, after, keys = [], None, []
    while True:
        items, after = store.list_products(query, after=after, limit=limit)
        found.extend(items)
        if after is None:
            return found
        assert after not in keys
        keys.append(after)


def numbers(items: list[dict[str, Any]]) -> list[int]:
    return [int(item["name"].split()[1]) for item in items]


Row = dict[str, Any]
FILTERS: list[tuple[str, dict[str, Any], Callable[[Row], bool]]] = [
    ("min_price", {"min_price": Decimal("10")},
     lambda r: r["price"] is not None and r["price"] >= 10),
    ("max_price", {"max_price": Decimal("3.25")},
     lambda r: r["price"] is not None and r["price"] <= Decimal("3.25")),
    ("price range", {"min_price": Decimal("2"), "max_price": Decimal("4")},
     lambda r: r["price"] is not None and 2 <= r["price"] <= 4),
    ("currency, any case", {"currency": "eur"}, lambda r: r["currency"] == "EUR"),
    ("availability", {"availability": ("in_stock", "preorder")},
     lambda r: r["availability"] in ("in_stock", "preorder")),
    ("brand, any case", {"brand": "GLOBEX"}, lambda r: r["brand"] == "Globex"),
    ("category", {"category": "garden"}, lambda r: r["category"] == "Garden"),
    ("min_rating", {"min_rating": Decimal("3")},
     lambda r: r["rating"] is not None and r["rating"] >= 3),
    ("domain, also www.", {"domain": "shop-b.test"},
     lambda r: r["page_url"].startswith("https://www.shop-b.test/")),
    ("www. domain", {"domain": "www.shop-b.test"}, lambda r: r["domain"] == "shop-b.test"),
    ("domain", {"domain": "SHOP-A.test."}, lambda r: r["page_url"].startswith("https://shop-a")),
    ("parser by name", {"parser": "shop.parser"}, lambda r: r["parser"] == "shop.parser@1"),
    ("parser@version", {"parser": "harvestman.products@2"},
     lambda r: r["parser"] == "harvestman.products@2"),
    ("parser, other version", {"parser": "shop.parser@2"}, lambda r: False),
    ("since", {"since": T0 + 600}, lambda r: r["updated_at"] >= T0 + 600),
    ("all at once", {"currency": "EUR", "availability": ("in_stock",), "brand": "acme",
                     "min_price": Decimal("1"), "domain": "shop-c.test"},
     lambda r: (r["currency"], r["availability"], r["brand"], r["domain"]) ==
               ("EUR", "in_stock", "Acme", "shop-c.test")
               and r["price"] is not None and r["price"] >= 1),
]  # fmt: skip


@pytest.mark.parametrize(("case", "filters", "keep"), FILTERS, ids=[f[0] for f in FILTERS])
def test_each_filter_keeps_exactly_its_products(
    store: SqlStore, crawl_id: int, case: str, filters: dict[str, Any], keep: Callable[[Row], bool]
) -> None:
    query = ProductQuery(crawl_id=crawl_id, **filters)
    expected = {n for n, row in enumerate(catalogue(COUNT)) if keep(row)}

    found = numbers(everything(store, query, limit=500))

    assert sorted(found) == sorted(expected)
    assert len(found) == len(set(found))
    assert expected or case == "parser, other version"


def _sorted(sort: str, descending: bool) -> list[int]:
    column = {"price": "price", "rating": "rating", "changed": "updated_at"}[sort]
    # the products' ids follow their numbers (inserted in order): id breaks ties
    rows = [(row[column], n) for n, row in enumerate(catalogue(COUNT)) if row[column] is not None]
    return [n for _, n in sorted(rows, reverse=descending)]


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("sort", ["price", "rating", "changed"])
@pytest.mark.parametrize("limit", [1, 7])
def test_pages_follow_the_order_without_duplicates_or_gaps(
    store: SqlStore, crawl_id: int, sort: str, descending: bool, limit: int
) -> None:
    query = ProductQuery(crawl_id=crawl_id, sort=sort, descending=descending)

    found = numbers(everything(store, query, limit=limit))

    assert found == _sorted(sort, descending)


def test_a_filtered_order_pages_through_the_filtered_products(
    store: SqlStore, crawl_id: int
) -> None:
    query = ProductQuery(crawl_id=crawl_id, currency="USD", sort="price", descending=True)
    expected = [n for n in _sorted("price", True) if catalogue(COUNT)[n]["currency"] == "USD"]

    assert numbers(everything(store, query, limit=4)) == expected


def test_a_product_comes_with_its_images_offers_and_sightings(
    store: SqlStore, crawl_id: int
) -> None:
    items, _ = store.list_products(
        ProductQuery(crawl_id=crawl_id, brand="initech", sort="price", descending=False), limit=1
    )
    [item] = items  # the cheapest Initech product: number 34, price 0.25 (34 % 17 == 0)
    assert numbers(items) == [34]
    assert item["offers"] == [{
        "price": Decimal("0.25"), "currency": "EUR", "availability": "preorder",
        "condition": None, "low_price": None, "high_price": None, "offer_count": None,
    }]  # fmt: skip
    assert item["images"] == [
        {"url": f"https://img.test/{item['id']}.jpg", "alt": "Product 34", "width": 100,
         "height": None}
    ]  # fmt: skip
    assert item["seen"] == {
        "page_url": "https://www.shop-b.test/p/34", "first_seen_at": T0,
        "changed_at": T0 + 8 * 60.0, "last_seen_at": T0 + 1,
    }  # fmt: skip
    assert (item["domain"], item["brand"], item["category"]) == (
        "shop-b.test", "Initech", "Garden",
    )  # fmt: skip

    one = store.get_product(item["id"])
    assert one is not None
    assert {**one, "description": None, "errors": []} == {**item, "description": None,
                                                          "errors": []}  # fmt: skip
    assert store.get_product(10**9) is None
    assert store.product_history(10**9) is None
    assert store.product_history(item["id"]) == ([], None)


def _shop(store: SqlStore, rows: list[dict[str, Any]]) -> int:
    """A crawl holding ``rows`` (catalogue rows, changed), without frontier rows or images."""
    with store.engine.begin() as conn:
        conn.execute(insert(crawls).values(name="odd", created_at=T0, seeds="[]"))
        crawl_id = int(conn.execute(select(crawls.c.id).where(crawls.c.name == "odd")).scalar_one())
    store.load_products(crawl_id, rows)
    return crawl_id


def test_images_come_in_the_order_of_their_positions(store: SqlStore) -> None:
    crawl_id = _shop(store, catalogue(2))
    first, second = numbered(store, crawl_id)
    with store.engine.begin() as conn:
        conn.execute(insert(images), [
            {"product_id": first, "position": position, "url": f"https://img.test/{position}",
             "alt": None, "width": None, "height": 10 * position}
            for position in (2, 0, 1)
        ])  # fmt: skip

    items, _ = store.list_products(ProductQuery(crawl_id=crawl_id, sort="changed"))
    one = store.get_product(first)

    expected = [
        {"url": f"https://img.test/{n}", "alt": None, "width": None, "height": 10 * n}
        for n in (0, 1, 2)
    ]
    assert {item["id"]: item["images"] for item in items} == {first: expected, second: []}
    assert one is not None
    assert one["images"] == expected
    assert one["seen"]["last_seen_at"] is None  # no frontier row


def numbered(store: SqlStore, crawl_id: int) -> list[int]:
    """The crawl's product ids by their number."""
    items, _ = store.list_products(ProductQuery(crawl_id=crawl_id), limit=500)
    return [item["id"] for item in sorted(items, key=lambda item: numbers([item]))]


def test_a_parser_name_matches_its_own_versions_literally(store: SqlStore) -> None:
    rows = catalogue(4)
    for row, parser in zip(rows, ("a_b@1", "a_b@2", "axb@1", "a%b@1"), strict=True):
        row["parser"] = parser
    crawl_id = _shop(store, rows)

    def found(parser: str) -> list[int]:
        items, _ = store.list_products(ProductQuery(crawl_id=crawl_id, parser=parser))
        return sorted(numbers(items))

    assert (found("a_b"), found("a%b"), found("a"), found("a_b@2")) == ([0, 1], [3], [], [1])


def test_a_brand_longer_than_its_index_is_compared_whole(store: SqlStore) -> None:
    rows = catalogue(3)
    long = "B" * INDEXED_CHARS
    for row, brand in zip(rows, (f"{long}-one", f"{long}-two", long), strict=True):
        row["brand"] = brand
    crawl_id = _shop(store, rows)

    def found(brand: str) -> list[int]:
        items, _ = store.list_products(ProductQuery(crawl_id=crawl_id, brand=brand))
        return sorted(numbers(items))

    assert found(f"{long.lower()}-ONE") == [0]
    assert found(long) == [2]
    assert found(long[:-1]) == []


@pytest.mark.parametrize("key", ["x|1", "1.5", "nan|3", "1|0", "1|-4", "inf|2", ""])
def test_a_key_the_query_cannot_have_made_is_refused(
    store: SqlStore, crawl_id: int, key: str
) -> None:
    with pytest.raises(ValueError, match="not a cursor key"):
        store.list_products(ProductQuery(crawl_id=crawl_id, sort="price"), after=key)


@pytest.mark.parametrize("module", [query_module, history_module, recrawl, elastic])
def test_docstring_examples(module: Any) -> None:
    found = doctest.testmod(module)
    assert found.attempted > 0
    assert found.failed == 0
