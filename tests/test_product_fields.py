"""Product fields beyond name and price, checked values, and the agreement of the three forms.

Each fixture cites the public example it is modelled on (schema.org's examples, Google's
product structured data examples, GS1's example GTIN).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from harvestman.extract.identifiers import check_digit, read_gtin
from harvestman.extract.products import ProductImage, scan_products
from harvestman.extract.vocabulary import (
    AVAILABILITY_VALUES,
    CONDITION_VALUES,
    availability_of,
    condition_of,
)
from test_products import FIXTURES, PAGE, extract, product

SHOP = "https://shop.example/p/"
WIDE = "４００６３８１３３３９３１"  # fullwidth digits


def test_schemaorg_aggregate_offer_and_a_rating_out_of_100() -> None:
    assert extract("schemaorg_aggregate_offer_monitor.html") == [
        product(
            name='Dell UltraSharp 30" LCD Monitor',
            price=Decimal("1250"),
            currency="USD",
            low_price=Decimal("1250"),
            high_price=Decimal("1495"),
            offer_count=8,
            rating=Decimal("87"),
            best_rating=Decimal("100"),
            rating_count=24,  # the page gives ratingCount only: no review_count
            image_details=[ProductImage(SHOP + "dell-30in-lcd.jpg")],
        )
    ]


def test_google_examples_brand_sku_mpn_condition_and_a_gs1_digital_link() -> None:
    assert extract("google_executive_anvil.html") == [
        product(
            name="Executive Anvil",
            description="Sleeker than the classic anvil, for the business traveller with"
            " something to drop.",
            price=Decimal("119.99"),
            currency="USD",
            low_price=Decimal("119.99"),
            high_price=Decimal("199.99"),
            offer_count=5,
            rating=Decimal("4.4"),
            review_count=89,
            brand="ACME",
            sku="0446310786",
            mpn="925872",
            image_details=[
                ProductImage("https://example.com/photos/1x1/photo.jpg", position=0),
                ProductImage("https://example.com/photos/4x3/photo.jpg", position=1),
            ],
        ),
        product(
            name="Executive Anvil, used",
            price=Decimal("119.99"),
            currency="USD",
            availability="in_stock",
            condition="used",
            brand="ACME",  # an Organization's name, as a Brand's
            sku="0446310787",
            gtin="09506000134352",
        ),
    ]


def test_item_conditions_by_schemaorg_name_in_every_form() -> None:
    found = extract("item_conditions.html")
    assert [(p.name, p.condition, p.errors) for p in found] == [
        ("Cond A", "new", []),
        ("Cond B", "used", []),
        ("Cond C", "refurbished", []),
        ("Cond D", "damaged", []),  # on the product, not its offer
        ("Cond E", "used", []),
        ("Cond F", None, ["itemCondition 'LikeNewCondition' is not a known value"]),
    ]


def test_values_out_of_range_are_left_out_with_their_reason_and_a_nameless_product_rejected() -> (
    None
):
    scan = scan_products((FIXTURES / "validation.html").read_bytes(), PAGE)
    assert scan.products == [
        product(
            name="Seven Stars",
            price=Decimal("10.00"),
            review_count=3,
            errors=[
                "currency 'EURO' is not an ISO 4217 code",
                "ratingValue 7 skipped: outside 1..5",
            ],
        ),
        product(
            name="Ten Out Of Ten",
            rating=Decimal("10"),  # within its own scale, 0..10
            best_rating=Decimal("10"),
            worst_rating=Decimal("0"),
            errors=[
                "price 5000000000 skipped: over the maximum 1000000000",
                "gtin13 '4006381333932' skipped: check digit 2, expected 1",
            ],
        ),
        product(
            name="Upside Down",
            price=Decimal("12.50"),
            currency="GBP",  # declared by the AggregateOffer listing the offer
            high_price=Decimal("20"),
            errors=[
                "lowPrice skipped: negative: '-5'",
                "price skipped: negative: '-3'",
                "rating skipped: bestRating 1 is not above worstRating 5",
                "gtin '12345' skipped: not 8, 12, 13 or 14 digits",
            ],
        ),
        product(
            name="Backwards Range",
            price=Decimal("30"),
            currency="GBP",
            low_price=Decimal("30"),
            offer_count=2,
            errors=["highPrice 20 skipped: below lowPrice 30"],
        ),
    ]
    assert (scan.errors, scan.rejected) == (["json-ld product 5 rejected: no name"], 1)


def test_the_maximum_price_is_a_parameter() -> None:
    html = (FIXTURES / "validation.html").read_bytes()
    [_, ten, *_] = scan_products(html, PAGE, max_price=Decimal(10) ** 10).products
    assert (ten.price, ten.currency) == (Decimal("5000000000"), "USD")
    [seven, *_] = scan_products(html, PAGE, max_price=Decimal(5)).products
    assert (seven.price, seven.errors[0]) == (None, "price 10.00 skipped: over the maximum 5")


def test_three_forms_that_agree_give_full_confidence() -> None:
    assert extract("three_forms.html") == [
        product(
            name="Walnut Desk Organiser",
            price=Decimal("34.5"),
            currency="EUR",
            availability="made_to_order",
            condition="new",
            sku="WDO-7",
            mpn="WDO-7",
            gtin="96385074",
            sources=["json-ld", "microdata", "opengraph"],
            confidence=1.0,
        )
    ]


def test_the_forms_of_schemaorgs_product_example_disagree_on_the_price() -> None:
    [microwave] = extract("schemaorg_product_microwave.html")
    # The name agrees (+0.125), the price does not (-0.125): microdata is not among the sources.
    assert (microwave.price, microwave.sources, microwave.confidence, microwave.errors) == (
        Decimal("55.00"),
        ["json-ld"],
        0.5,
        ["microdata prices it 1000 USD"],
    )
    assert (microwave.rating, microwave.review_count, microwave.rating_count) == (
        Decimal("3.5"),
        11,
        None,
    )


@pytest.mark.parametrize(
    ("html", "sources", "confidence"),
    [
        # OpenGraph names the page ("… | Shop"); its price agrees.
        ('<meta property="og:type" content="product">'
         '<meta property="og:title" content="Pen | Shop">'
         '<meta property="product:price:amount" content="2.00">', ["json-ld", "opengraph"], 0.75),
        # Another name and another price: the page's only other product still describes it.
        ('<meta property="og:type" content="product"><meta property="og:title" content="Pencil">'
         '<meta property="product:price:amount" content="3">', ["json-ld"], 0.25),
        # Microdata with another product's name, and no way to pair it: not compared.
        ('<div itemscope itemtype="https://schema.org/Product"><b itemprop="name">Ink</b></div>'
         '<div itemscope itemtype="https://schema.org/Product"><b itemprop="name">Nib</b></div>',
         ["json-ld"], 0.5),
        # Paired by SKU despite the names.
        ('<div itemscope itemtype="https://schema.org/Product"><b itemprop="name">Ballpoint</b>'
         '<meta itemprop="sku" content="p-1"><i itemprop="offers" itemscope '
         'itemtype="https://schema.org/Offer"><meta itemprop="price" content="2"></i></div>'
         '<div itemscope itemtype="https://schema.org/Product"><b itemprop="name">Nib</b></div>',
         ["json-ld"], 0.5),
    ],
)  # fmt: skip
def test_agreement_with_the_other_forms(html: str, sources: list[str], confidence: float) -> None:
    ld = (
        '<script type="application/ld+json">{"@type": "Product", "name": "Pen", "sku": "P-1",'
        ' "offers": {"price": "2", "priceCurrency": "EUR"}}</script>'
    )
    [pen] = scan_products(ld + html, PAGE).products
    assert (pen.sources, pen.confidence) == (sources, confidence)


def test_every_schemaorg_availability_and_condition_has_its_own_stored_name() -> None:
    # https://schema.org/ItemAvailability and https://schema.org/OfferItemCondition members.
    members = [
        "BackOrder", "Discontinued", "InStock", "InStoreOnly", "LimitedAvailability",
        "MadeToOrder", "OnlineOnly", "OutOfStock", "PreOrder", "PreSale", "Reserved", "SoldOut",
    ]  # fmt: skip
    stored = [availability_of(f"https://schema.org/{member}") for member in members]
    assert sorted(stored) == sorted(AVAILABILITY_VALUES)  # one each, none left over
    conditions = ["NewCondition", "UsedCondition", "RefurbishedCondition", "DamagedCondition"]
    assert [condition_of(c) for c in conditions] == list(CONDITION_VALUES)
    assert max(len(value) for value in (*AVAILABILITY_VALUES, *CONDITION_VALUES)) <= 16


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4006381333931", ("4006381333931", None)),  # EAN-13
        ("0 12345 67890 5", ("012345678905", None)),  # UPC-A as printed
        ("96385074", ("96385074", None)),  # EAN-8
        ("https://id.gs1.org/01/09506000134352/10/ABC", ("09506000134352", None)),
        ("4006381333930", (None, "'4006381333930' skipped: check digit 0, expected 1")),
        ("40063813339", (None, "'40063813339' skipped: not 8, 12, 13 or 14 digits")),
        (WIDE, (None, f"{WIDE!r} skipped: not 8, 12, 13 or 14 digits")),  # not ASCII digits
    ],
)  # fmt: skip
def test_gtins_are_digits_with_a_valid_check_digit(
    text: str, expected: tuple[str | None, str | None]
) -> None:
    assert read_gtin(text) == expected


def test_the_gs1_check_digit() -> None:
    # GS1's example GTIN-14 (https://www.gs1.org/standards/gs1-digital-link) and the EAN-13 of
    # https://en.wikipedia.org/wiki/International_Article_Number's check digit calculation.
    assert (check_digit("0950600013435"), check_digit("400638133393")) == (2, 1)
