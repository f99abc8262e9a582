"""The product record: what one product on a page says, checked (see docs/DESIGN.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

__all__ = ["Product", "ProductImage"]


@dataclass(slots=True)
class ProductImage:
    """One image of a product: absolute http(s) URL, alt text, 0-based order, size if given."""

    url: str
    alt: str | None = None
    position: int = 0
    width: int | None = None
    height: int | None = None


@dataclass(slots=True)
class Product:
    """A product as the page's structured data describes it.

    ``price`` is that of the first offer with a usable price (an ``AggregateOffer``'s
    ``lowPrice``); ``currency`` an upper-case ISO 4217 code, declared or else named by the price
    text ("19,99 €"); ``availability`` one of
    :data:`harvestman.extract.vocabulary.AVAILABILITY_VALUES`, ``condition`` one of
    :data:`~harvestman.extract.vocabulary.CONDITION_VALUES`. ``low_price``, ``high_price`` and
    ``offer_count`` are those of its ``AggregateOffer``; ``rating`` is the ``AggregateRating``'s
    ``ratingValue``, within ``worst_rating``..``best_rating`` (1..5 when the page gives
    neither); ``review_count`` and ``rating_count`` are set only when the page gives them.
    ``gtin`` holds the digits of a GTIN whose check digit is right. A price over the maximum,
    a rating out of its range, an unknown currency or a wrong check digit is left out, with
    its reason in ``errors``.

    ``url`` is the product's own URL made absolute, or the page's URL when it gives none.
    ``images`` are the absolute URLs of ``image_details``, in page order, without duplicates.
    ``source`` is ``"json-ld"``, ``"microdata"`` or ``"opengraph"``: the form it was read from;
    ``sources`` the forms that agree with it, and ``confidence`` (0..1) how far they agree (see
    :mod:`harvestman.extract.agreement`). ``errors`` are the reasons for the malformed parts
    that were skipped or repaired: the page's skipped JSON-LD blocks (any of them may have held
    this product), the repair of its own block, then its fields.
    """

    name: str | None
    description: str | None
    price: Decimal | None
    currency: str | None
    availability: str | None
    rating: Decimal | None
    review_count: int | None
    brand: str | None
    category: str | None
    sku: str | None
    gtin: str | None
    url: str | None
    images: list[str]
    image_details: list[ProductImage]
    source: str
    errors: list[str]
    mpn: str | None = None
    condition: str | None = None
    low_price: Decimal | None = None
    high_price: Decimal | None = None
    offer_count: int | None = None
    best_rating: Decimal | None = None
    worst_rating: Decimal | None = None
    rating_count: int | None = None
    sources: list[str] = field(default_factory=list)
    confidence: float | None = None

    def content_hash(self) -> str:
        """SHA-256 hex digest of every field as canonical JSON (``19.90`` and ``19.9`` agree).

        Two extractions of an unchanged product have the same hash, so its row need not be
        rewritten.
        """
        fields: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "price": _decimal_text(self.price),
            "currency": self.currency,
            "availability": self.availability,
            "rating": _decimal_text(self.rating),
            "review_count": self.review_count,
            "brand": self.brand,
            "category": self.category,
            "sku": self.sku,
            "gtin": self.gtin,
            "url": self.url,
            "images": self.images,
            "image_details": [
                [image.url, image.alt, image.position, image.width, image.height]
                for image in self.image_details
            ],
            "source": self.source,
            "errors": self.errors,
            "mpn": self.mpn,
            "condition": self.condition,
            "low_price": _decimal_text(self.low_price),
            "high_price": _decimal_text(self.high_price),
            "offer_count": self.offer_count,
            "best_rating": _decimal_text(self.best_rating),
            "worst_rating": _decimal_text(self.worst_rating),
            "rating_count": self.rating_count,
            "sources": self.sources,
            "confidence": self.confidence,
        }
        return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")
