"""extract_products: schema.org products from JSON-LD, microdata and OpenGraph, exact fields."""

from __future__ import annotations

import codecs
import doctest
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.extract import (
    agreement,
    identifiers,
    money,
    products,
    schemaorg,
    structured,
    vocabulary,
)
from harvestman.extract.money import parse_count, parse_currency, parse_price
from harvestman.extract.products import (
    Product,
    ProductImage,
    ProductScan,
    extract_products,
    scan_products,
)

FIXTURES = Path(__file__).parent / "fixtures" / "products"
PAGE = "https://shop.example/p/item?id=7"


def product(**fields: Any) -> Product:
    """A Product with every field not given empty, ``source`` JSON-LD and ``url`` the page's,
    read from its own form alone (``sources`` that form, ``confidence`` 0.5)."""
    values: dict[str, Any] = {
        name: None
        for name in [
            "name",
            "description",
            "price",
            "currency",
            "availability",
            "rating",
            "review_count",
            "brand",
            "category",
            "sku",
            "gtin",
        ]
    }
    values.update(url=PAGE, images=[], image_details=[], source="json-ld", errors=[])
    values.update(fields)
    values.setdefault("sources", [values["source"]])
    values.setdefault("confidence", 0.5)
    if "image_details" in fields and "images" not in fields:
        values["images"] = [image.url for image in fields["image_details"]]
    return Product(**values)


def extract(name: str) -> list[Product]:
    return extract_products((FIXTURES / name).read_bytes(), PAGE)


def test_a_json_ld_product_with_every_field() -> None:
    assert extract("jsonld_basic.html") == [
        product(
            name="Trail Runner 2 & Laces",
            description="A light trail shoe with a grippy sole.",
            price=Decimal("119.90"),
            currency="EUR",
            availability="in_stock",
            rating=Decimal("4.6"),
            review_count=89,
            brand="Stridewell",
            category="Shoes > Running",
            sku="TR-2",
            gtin="4006381333931",
            url="https://shop.example/p/trail-runner-2",
            image_details=[ProductImage("https://shop.example/img/trail-runner-2.jpg")],
        )
    ]


def test_a_graph_with_references_and_a_junk_offer_before_a_good_one() -> None:
    assert extract("jsonld_graph.html") == [
        product(
            name="Desk Lamp",
            price=Decimal("49"),
            currency="USD",
            availability="limited",
            brand="Lumo",
            sku="100200",
            mpn="L-100",
            image_details=[
                ProductImage(
                    "https://cdn.shop.example/lamp-1.jpg", "Lamp, switched on", 0, 1200, 900
                ),
                ProductImage("https://cdn.shop.example/lamp-2.jpg", "Lamp from the side", 1, 600),
            ],
            errors=["price skipped: no number in 'Call us'"],
        )
    ]


def test_a_top_level_array_with_a_list_of_products_and_no_related_ones() -> None:
    assert extract("jsonld_array.html") == [
        product(
            name="Sencha",
            price=Decimal("12.5"),
            currency="GBP",
            availability="out_of_stock",
            url="https://tea.example/tea/sencha",
        ),
        product(
            name="Assam",
            price=Decimal("8.00"),
            currency="GBP",
            availability="preorder",
            url="https://tea.example/tea/assam",
        ),
    ]


def test_several_blocks_a_base_href_and_a_repeated_block_listed_once() -> None:
    base = "https://static.books.example/assets/covers/"
    assert extract("jsonld_several_blocks.html") == [
        product(
            name="The Crawler's Handbook",
            price=Decimal("24.00"),
            currency="CHF",
            availability="in_stock",
            gtin="9780306406157",
            image_details=[
                ProductImage(base + "handbook.jpg", position=0),
                ProductImage(base + "handbook-back.jpg", position=1),
            ],
        ),
        product(name="Bookmark", price=Decimal("2"), currency="CHF", availability="in_stock"),
    ]


def test_aggregate_offers_wrapping_offers_and_product_group_variants() -> None:
    socks = "https://socks.example/"
    # The group gives ratingCount, not reviewCount: review_count stays empty.
    group = {"rating": Decimal("4.8"), "rating_count": 1024, "brand": "Knitters"}
    assert extract("jsonld_offers.html") == [
        product(
            name="Noise-Cancelling Headphones",
            price=Decimal("199.00"),
            currency="USD",
            availability="backorder",
            sku="NC-700",
            low_price=Decimal("199.00"),
            high_price=Decimal("249.00"),
            offer_count=3,
        ),
        product(name="Gift Card", price=Decimal("15"), currency="CAD", availability="online_only"),
        product(
            name="Wool Socks, size M",
            price=Decimal("14.00"),
            currency="EUR",
            availability="in_store_only",
            sku="WS-M",
            image_details=[ProductImage(socks + "ws.jpg")],
            **group,
        ),
        product(
            name="Wool Socks",
            price=Decimal("15.00"),
            currency="EUR",
            availability="sold_out",
            sku="WS-L",
            image_details=[ProductImage(socks + "ws-l.jpg")],
            **group,
        ),
    ]


def test_malformed_blocks_are_repaired_or_skipped_with_a_reason() -> None:
    repaired = (
        "json-ld block 1: repaired (HTML comment, control characters in strings, trailing comma)"
    )
    broken = (
        "json-ld block 2: skipped, invalid JSON "
        "(Expecting ',' delimiter: line 1 column 21 (char 20))"
    )
    empty = "json-ld block 3: skipped, empty"
    commented = "json-ld block 4: repaired (JS comment)"
    scan = scan_products((FIXTURES / "jsonld_malformed.html").read_bytes(), PAGE)
    assert scan == ProductScan(
        products=[
            product(
                name="Camp Stove",
                description="Folds flat. Boils a litre in 4 minutes.",
                price=Decimal("39.95"),
                currency="EUR",
                errors=[repaired, broken, empty],
            ),
            product(
                name="Fuel Canister",
                price=Decimal("6.50"),
                currency="EUR",
                errors=[broken, empty, commented],
            ),
            product(name="Spork", price=Decimal("3.20"), currency="EUR", errors=[broken, empty]),
        ],
        errors=[repaired, broken, empty, commented],
    )


def test_a_page_whose_only_block_is_broken_keeps_the_reason_and_falls_back() -> None:
    html = (
        '<script type="application/ld+json">{"@type": "Product", "name": </script>'
        '<div itemscope itemtype="https://schema.org/Product"><b itemprop="name">Kite</b></div>'
    )
    reason = "json-ld block 1: skipped, invalid JSON (Expecting value: line 1 column 29 (char 28))"
    assert scan_products(html, PAGE) == ProductScan(
        [product(name="Kite", source="microdata", errors=[reason])], [reason]
    )
    assert scan_products(html.split("<div")[0], PAGE) == ProductScan([], [reason])


def test_microdata_with_nested_items_and_lazy_images() -> None:
    assert extract("microdata.html") == [
        product(
            name="Espresso Machine Pro",
            description="Makes two cups at once.",
            price=Decimal("1299.00"),
            currency="EUR",
            availability="discontinued",
            rating=Decimal("4.2"),
            review_count=1234,
            brand="Crema",
            sku="EM-PRO",
            gtin="012345678905",
            image_details=[
                ProductImage(
                    "https://shop.example/img/espresso.jpg", "Espresso machine, front", 0, 640, 480
                ),
                ProductImage("https://shop.example/img/espresso-side.jpg", "Side", 1),
            ],
            source="microdata",
        ),
        product(
            name="Descaler",
            price=Decimal("9.99"),
            currency="EUR",
            availability="in_stock",
            source="microdata",
        ),
    ]


def test_opengraph_product_tags() -> None:
    assert extract("opengraph.html") == [
        product(
            name="Linen Shirt",
            description="Breathable linen, relaxed fit.",
            price=Decimal("59.00"),
            currency="GBP",
            availability="in_stock",
            brand="Loom & Co",
            category="Shirts",
            sku="LS-01",
            url="https://wear.example/linen-shirt",
            image_details=[
                ProductImage(
                    "https://wear.example/i/linen-1.jpg", "Linen shirt, white", 0, 1000, 1250
                ),
                ProductImage("https://shop.example/i/linen-2.jpg", position=1),
            ],
            source="opengraph",
        )
    ]


def test_opengraph_og_price_variants_and_an_ambiguous_currency() -> None:
    assert extract("opengraph_og_price.html") == [
        product(
            name="Ceramic Mug",
            price=Decimal("12.50"),
            availability="out_of_stock",
            image_details=[ProductImage("https://shop.example/p/mug.png")],
            source="opengraph",
            errors=["currency '$' is not an ISO 4217 code"],
        )
    ]


def test_json_ld_wins_then_microdata_then_opengraph() -> None:
    html = (FIXTURES / "fallback_order.html").read_text()
    assert extract_products(html, PAGE) == [
        # One product on each side: OpenGraph describes the same one, under another name.
        product(
            name="Gadget (from microdata)",
            url="https://gadgets.example/g",
            source="microdata",
            confidence=0.375,
            errors=["opengraph names it 'Gadget (from OpenGraph)'"],
        )
    ]
    without_microdata = html.split("<body>")[0]
    assert extract_products(without_microdata, PAGE) == [
        product(name="Gadget (from OpenGraph)", price=Decimal("1"), source="opengraph")
    ]
    with_json_ld = without_microdata.replace('"Organization"', '"Product"')
    assert extract_products(with_json_ld, PAGE) == [
        product(
            name="Gadgets",
            confidence=0.375,
            errors=["opengraph names it 'Gadget (from OpenGraph)'"],
        )
    ]


def test_pages_without_product_data() -> None:
    assert extract("no_structured_data.html") == []
    assert extract_products(b"<p>Our product range</p>", PAGE) == []
    assert extract_products(b"", PAGE) == []


# Every member of https://schema.org/ItemAvailability has a stored value of its own.
AVAILABILITY = [
    ("in_stock", "out_of_stock", "in_stock", "preorder", "presale", "backorder"),
    ("discontinued", "limited", "online_only", "in_store_only", "sold_out", "in_stock"),
    ("out_of_stock", "made_to_order", "in_stock", "reserved"),
]


def test_availability_variants() -> None:
    found = extract("availability_variants.html")
    expected = [value for row in AVAILABILITY for value in row]
    assert [(p.name, p.availability) for p in found] == [
        (f"Item {letter}", value)
        for letter, value in zip("ABCDEFGHIJKLMNOP", expected, strict=True)
    ]
    assert all(p.errors == [] for p in found)


def test_price_formats() -> None:
    found = extract("price_formats.html")
    assert [(p.name, p.price, p.currency, p.errors) for p in found] == [
        ("Item A", Decimal("1299.00"), "USD", []),
        ("Item B", Decimal("1299.00"), "EUR", []),
        ("Item C", Decimal("19.99"), "USD", []),
        ("Item D", Decimal("19.99"), "EUR", []),
        ("Item E", Decimal("24"), "USD", []),
        ("Item F", Decimal("19.9"), "USD", []),
        ("Item G", Decimal("1299.00"), "SEK", []),
        ("Item H", None, None, ["price skipped: no number in 'Free!'"]),
        ("Item I", None, None, ["price skipped: negative: '-5.00'"]),
        ("Item J", Decimal("1299"), "USD", []),
        ("Item K", Decimal("7"), "GBP", []),
        ("Item L", Decimal("12.00"), None, ["currency 'Euro' is not an ISO 4217 code"]),
    ]


def test_image_forms() -> None:
    cdn = "https://cdn.pics.example/"
    found = extract("image_forms.html")
    assert [(p.name, p.image_details, p.errors) for p in found] == [
        ("One string", [ProductImage("https://shop.example/p/pics/one.jpg")], []),
        (
            "A list",
            [ProductImage(cdn + "two-a.jpg"), ProductImage(cdn + "two-b.jpg?w=800&h=600", None, 1)],
            [],
        ),
        ("An ImageObject", [ProductImage(cdn + "three.jpg", "Three", 0, 800, 600)], []),
        (
            "Mixed",
            [ProductImage(cdn + "four.jpg"), ProductImage(cdn + "five.jpg", position=1)],
            [
                "image skipped: 'data:image/png;base64,iVBORw0KGgo=' is not an http(s) URL",
                "image skipped: no URL in '42'",
                "image width 'wide' skipped: not a pixel count",
            ],
        ),
    ]
    assert [p.images for p in found][1] == [cdn + "two-a.jpg", cdn + "two-b.jpg?w=800&h=600"]


def test_bytes_in_other_encodings_and_text() -> None:
    cafe = product(
        name="Café Crème – 500 g", price=Decimal("7.90"), currency="EUR", source="microdata"
    )
    raw = (FIXTURES / "microdata_windows1252.html").read_bytes()
    assert extract_products(raw, PAGE) == [cafe]
    unlabeled = raw.replace(b'<meta charset="windows-1252">', b"")
    assert extract_products(unlabeled, PAGE, charset="windows-1252") == [cafe]
    text = raw.decode("cp1252")
    assert extract_products(text, PAGE) == [cafe]
    assert extract_products(codecs.BOM_UTF16_LE + text.encode("utf-16-le"), PAGE) == [cafe]


def test_content_hash_follows_the_fields() -> None:
    first = extract("jsonld_basic.html")[0]
    assert first.content_hash() == extract("jsonld_basic.html")[0].content_hash()
    assert len(first.content_hash()) == 64
    same_price = product(**{**_fields(first), "price": Decimal("119.9")})
    assert same_price.content_hash() == first.content_hash()
    cheaper = product(**{**_fields(first), "price": Decimal("99.90")})
    assert cheaper.content_hash() != first.content_hash()
    restocked = product(**{**_fields(first), "availability": "out_of_stock"})
    assert restocked.content_hash() != first.content_hash()


def _fields(item: Product) -> dict[str, Any]:
    return {name: getattr(item, name) for name in Product.__dataclass_fields__}


@pytest.mark.parametrize(
    ("text", "amount", "currency"),
    [
        ("1,299.00", "1299.00", None),
        ("1.299,00", "1299.00", None),
        ("$19.99", "19.99", None),
        ("19,99 €", "19.99", "EUR"),
        ("1 299,00 kr", "1299.00", None),
        ("1\u202f299,00", "1299.00", None),
        ("CHF 1'299.50", "1299.50", "CHF"),
        ("1,299", "1299", None),
        ("1.299", "1.299", None),
        ("0,500", "0.500", None),
        ("1,00,000", "100000", None),
        ("1.234.567,89", "1234567.89", None),
        ("US$ 5", "5", "USD"),
        ("from 4.5 to 9", "4.5", None),
        ("0", "0", None),
    ],
)
def test_parse_price(text: str, amount: str, currency: str | None) -> None:
    assert parse_price(text) == (Decimal(amount), currency, None)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("free", "no number in 'free'"),
        ("", "no number in ''"),
        ("-5", "negative: '-5'"),
        ("1,299,00", "unclear digit grouping in '1,299,00'"),
        (True, "not a number: True"),
        (float("inf"), "not a usable number: inf"),
        ({"price": 1}, "not a number: dict"),
    ],
)
def test_parse_price_junk(value: object, reason: str) -> None:
    assert parse_price(value) == (None, None, reason)


def test_parse_count_and_currency() -> None:
    assert [parse_count(v) for v in (12, "1,234 reviews", "1.234", "12.0")] == [
        (12, None),
        (1234, None),
        (1234, None),
        (12, None),
    ]
    assert parse_count("4.5") == (None, "not a whole number: '4.5'")
    assert [parse_currency(v) for v in ("usd", " EUR ", "€", "zł")] == [
        ("USD", None),
        ("EUR", None),
        ("EUR", None),
        ("PLN", None),
    ]
    assert parse_currency("XXX") == (None, "currency 'XXX' is not an ISO 4217 code")
    assert parse_currency(840) == (None, "currency is not text: 840")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "@type",
                    "@id",
                    "@graph",
                    "name",
                    "offers",
                    "price",
                    "lowPrice",
                    "priceCurrency",
                    "availability",
                    "image",
                    "url",
                    "width",
                    "aggregateRating",
                    "ratingValue",
                    "reviewCount",
                    "brand",
                    "gtin13",
                    "hasVariant",
                    "itemOffered",
                    "priceSpecification",
                ]
            ),
            children | st.sampled_from(["Product", "Offer", "AggregateOffer", "ProductGroup"]),
            max_size=6,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_ld_value_is_read_without_raising(value: Any) -> None:
    block = json.dumps(value).replace("</", "<\\/")
    found = extract_products(f'<script type="application/ld+json">{block}</script>', PAGE)
    assert all(isinstance(item, Product) for item in found)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_read_without_raising(junk: bytes) -> None:
    html = b'<div itemscope itemtype="schema.org/Product" property="og:type">' + junk
    extract_products(html + b'<meta property="og:type" content="product">', PAGE)


@pytest.mark.parametrize(
    "module", [agreement, identifiers, money, products, schemaorg, structured, vocabulary]
)
def test_docstring_examples(module: Any) -> None:
    assert doctest.testmod(module).failed == 0


def test_deeply_nested_json_is_skipped_or_walked_without_raising() -> None:
    deep = "[" * 5000 + "]" * 5000
    scan = scan_products(f'<script type="application/ld+json">{deep}</script>product', PAGE)
    assert scan.products == []
    assert len(scan.errors) == 1
    assert scan.errors[0].startswith("json-ld block 1: skipped, invalid JSON (")
    nested: Any = {"@type": "Product", "name": "Deep"}
    for _ in range(200):
        nested = {"@type": "Thing", "about": nested}
    block = json.dumps(nested)
    assert extract_products(f'<script type="application/ld+json">{block}</script>', PAGE) == []
