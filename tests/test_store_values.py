"""Values fitted to their columns before a batch is written (store/values.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Boolean, Column

from harvestman.extract.products import Product, ProductImage
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.store.schema import crawled_pages, error_logs, metadata, products, urls
from harvestman.store.values import check_batch, rule_for

HUGE = "123456789012345678901234567890"


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        (products.c.price, Decimal("19.99"), (Decimal("19.99"), None)),
        (products.c.price, Decimal("99999999999999.9999"), (Decimal("99999999999999.9999"), None)),
        # PostgreSQL rounds to the scale before it checks the size: this one rounds up past it.
        (products.c.price, Decimal("99999999999999.99995"),
         (None, "cleared: 99999999999999.99995 is outside NUMERIC(18, 4)")),
        (products.c.price, Decimal(HUGE), (None, f"cleared: {HUGE} is outside NUMERIC(18, 4)")),
        (products.c.price, Decimal("NaN"), (None, "cleared: NaN is not a finite number")),
        (products.c.rating, Decimal("9999.99"), (Decimal("9999.99"), None)),
        (products.c.rating, Decimal("98765"), (None, "cleared: 98765 is outside NUMERIC(6, 2)")),
        (products.c.review_count, 2**31 - 1, (2**31 - 1, None)),
        (products.c.review_count, 2**31, (None, "cleared: 2147483648 is outside INTEGER")),
        (crawled_pages.c.simhash, -(2**63), (-(2**63), None)),
        (crawled_pages.c.simhash, 2**63, (None, "cleared: 9223372036854775808 is outside BIGINT")),
        (urls.c.attempts, 40_000, (32_767, "40000 clamped to 32767 (SMALLINT)")),
        (crawled_pages.c.lang, "en-GB", ("en-GB", None)),
        (crawled_pages.c.lang, "x" * 36, (None, "cleared: 36 characters, over VARCHAR(35)")),
        (error_logs.c.error_class, "E" * 70, ("E" * 64, "cut to 64 characters (VARCHAR(64))")),
        (products.c.name, "Ket\x00tle", ("Kettle", "NUL removed")),
        (products.c.name, "Ket\ud800tle", ("Ket?tle", "lone surrogates replaced")),
        (products.c.name, "Kettle ☕", ("Kettle ☕", None)),
        (crawled_pages.c.crawl_duration_ms, float("inf"), (float("inf"), None)),  # not a Float
        (urls.c.lastmod, float("nan"), (None, "cleared: nan is not a finite number")),
        # NOT NULL with nothing to put in its place: left for the store to refuse.
        (crawled_pages.c.fetched_at, float("inf"), (float("inf"), None)),
        (products.c.name, None, (None, None)),
    ],
)  # fmt: skip
def test_a_value_is_fitted_to_its_column_type(
    column: Column[Any], value: object, expected: tuple[object, str | None]
) -> None:
    assert rule_for(column).check(value) == expected


def test_every_column_has_a_rule_from_its_type() -> None:
    unchecked = [
        f"{table.name}.{column.name}"
        for table in metadata.tables.values()
        for column in table.columns
        if rule_for(column).kind == "other" and not isinstance(column.type, Boolean)
    ]
    assert unchecked == []


def product(**values: Any) -> Product:
    fields: dict[str, Any] = {
        "name": "Kettle", "description": None, "price": Decimal("19.99"), "currency": "EUR",
        "availability": "in_stock", "rating": None, "review_count": None, "brand": None,
        "category": None, "sku": "K-1", "gtin": None, "url": "http://a.test/p",
        "images": [], "image_details": [], "source": "json-ld", "errors": [],
    }  # fmt: skip
    return Product(**{**fields, **values})


def outcome(path: str, **values: Any) -> Outcome:
    url = f"http://a.test{path}"
    request = CrawlRequest(1, url, "h" * 64, "a.test", 0, 2)
    return Outcome(request, UrlStatus.COMPLETED, 10.0, 0, status_code=200, **values)


def test_a_batch_is_checked_record_by_record_and_the_changes_are_noted() -> None:
    page = PageRecord(
        url="http://a.test/p", final_url="http://a.test/p", host="a.test", status_code=200,
        content_type="text/html", content_length=10, fetched_at=1.0, crawl_duration_ms=5,
        title="Ket\x00tle", lang="x" * 40,
    )  # fmt: skip
    image = ProductImage("http://a.test/k.jpg", width=2**40)
    bad = product(price=Decimal(HUGE), image_details=[image], errors=["gtin skipped"])
    healthy = outcome("/ok", products=[product()])
    batch = [outcome("/p", page=page, products=[product(), bad]), healthy]
    dropped = NewUrl("http://a.test/x\x00", "u" * 64, "a.test", 1, 2)
    kept = NewUrl("http://a.test/y", "v" * 64, "a.test", 1, 2)

    checked = check_batch(batch, [dropped, kept])

    assert checked.new_urls == [kept]
    assert checked.outcomes[1] is healthy  # nothing to change: not copied
    fitted = checked.outcomes[0]
    assert fitted.page is not None
    assert (fitted.page.title, fitted.page.lang) == ("Kettle", None)
    assert fitted.products is not None
    assert fitted.products[0] is batch[0].products[0]  # type: ignore[index]
    assert (fitted.products[1].price, fitted.products[1].image_details[0].width) == (None, None)
    assert fitted.products[1].errors == [
        "gtin skipped",
        f"price cleared: {HUGE} is outside NUMERIC(18, 4)",
        "image 0 width cleared: 1099511627776 is outside INTEGER",
    ]
    # The caller's records are left as they were (a retried batch is checked again).
    assert (page.title, bad.price, image.width) == ("Ket\x00tle", Decimal(HUGE), 2**40)
    assert [(note.task, note.message, note.dropped) for note in checked.notes] == [
        ("http://a.test/x",
         "discovered URL dropped: url NUL removed", True),
        ("http://a.test/p",
         "values changed to fit the store: page title NUL removed; page lang cleared: 40"
         f" characters, over VARCHAR(35); product 1 price cleared: {HUGE} is outside"
         " NUMERIC(18, 4); product 1 image 0 width cleared: 1099511627776 is outside INTEGER",
         False),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "note"),
    [
        ("title", "Ket\x00tle", "page title NUL removed"),
        ("title", "Ket\ud800tle", "page title lone surrogates replaced"),
        ("lang", "x" * 36, "page lang cleared: 36 characters, over VARCHAR(35)"),
        ("simhash", 2**63, "page simhash cleared: 9223372036854775808 is outside BIGINT"),
        ("links_count", -(2**31) - 1,
         "page links_count -2147483649 clamped to -2147483648 (INTEGER)"),
    ],
)  # fmt: skip
def test_one_bad_value_in_a_large_batch_is_found_and_the_rest_kept_as_they_are(
    field: str, value: Any, note: str
) -> None:
    """A batch is checked column by column first; a value that needs a change sends it to the
    record-by-record check, which changes that record only."""

    def page(path: str, **values: Any) -> PageRecord:
        fields: dict[str, Any] = {"title": "Café ☕", "lang": "fr", "simhash": -(2**63)}
        return PageRecord(
            url=f"http://a.test{path}", final_url=f"http://a.test{path}", host="a.test",
            status_code=200, content_type="text/html", content_length=10, fetched_at=1.0,
            crawl_duration_ms=5, **{**fields, **values},
        )  # fmt: skip

    healthy = [outcome(f"/{i}", page=page(f"/{i}")) for i in range(50)]
    assert check_batch(healthy, []).outcomes == healthy
    assert all(a is b for a, b in zip(check_batch(healthy, []).outcomes, healthy, strict=True))
    bad = outcome("/bad", page=page("/bad", **{field: value}))
    batch = [*healthy[:25], bad, *healthy[25:]]

    checked = check_batch(batch, [])

    assert [o.request.url for o in checked.outcomes] == [o.request.url for o in batch]
    assert all(a is b for a, b in zip(checked.outcomes, batch, strict=True) if b is not bad)
    assert checked.outcomes[25] is not bad
    assert [n.message for n in checked.notes] == [f"values changed to fit the store: {note}"]
