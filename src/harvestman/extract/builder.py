"""One found product node (with its group and offer) read into a checked :class:`Product`.

Values are checked as they are read, and a value that fails is left out with its reason in
``Product.errors``: a negative price or one over ``max_price``, a currency not in ISO 4217, a
rating outside ``worstRating``..``bestRating`` (1..5 when the page gives neither), a GTIN with
a wrong check digit, an availability or item condition schema.org does not name.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from harvestman.extract.identifiers import GTIN_KEYS, read_gtin
from harvestman.extract.money import parse_count, parse_currency, parse_number, parse_price
from harvestman.extract.product import Product, ProductImage
from harvestman.extract.schemaorg import Found, Graph, as_list, first, types
from harvestman.extract.structured import resolve_url
from harvestman.extract.vocabulary import availability_of, condition_of

__all__ = ["DEFAULT_MAX_PRICE", "ProductBuilder"]

DEFAULT_MAX_PRICE: Final = Decimal(10) ** 9
# What a ProductGroup's variants take from the group when they do not say it themselves.
_INHERITED: Final = frozenset(
    {"name", "description", "brand", "category", "image", "aggregateRating", "url", "offers",
     "itemCondition"}
)  # fmt: skip
_BEST: Final = Decimal(5)  # schema.org's defaults for a rating scale the page does not give
_WORST: Final = Decimal(1)
_PIXELS: Final = re.compile(r"\s*(\d+)(?:\.0*)?\s*(?:px)?\s*", re.IGNORECASE)


@dataclass(slots=True)
class _Offer:
    price: Decimal | None = None
    currency: str | None = None
    availability: str | None = None
    condition: str | None = None
    low_price: Decimal | None = None
    high_price: Decimal | None = None
    offer_count: int | None = None


@dataclass(slots=True)
class _Rating:
    value: Decimal | None = None
    best: Decimal | None = None
    worst: Decimal | None = None
    reviews: int | None = None
    ratings: int | None = None


class ProductBuilder:
    """Reads one found product node into a :class:`Product` (``sources`` and ``confidence``
    are those of a product read from one form alone; the caller compares the forms)."""

    def __init__(
        self, found: Found, graph: Graph, base: str, page_url: str, max_price: Decimal
    ) -> None:
        self.found = found
        self.graph = graph
        self.base = base
        self.page_url = page_url
        self.max_price = max_price
        self.errors: list[str] = []

    def build(self, source: str, page_errors: list[str]) -> Product:
        text = self.graph.text
        offer = self._offer()
        rating = self._rating()
        url = text(self._get("url"))
        images = self._images(self._get("image"))
        return Product(
            name=text(self._get("name")),
            description=text(self._get("description")),
            price=offer.price,
            currency=offer.currency,
            availability=offer.availability,
            rating=rating.value,
            review_count=rating.reviews,
            brand=text(self._get("brand")),
            category=text(self._get("category")),
            sku=text(self._get("sku")),
            gtin=self._gtin(),
            url=(url and resolve_url(url, self.base)) or self.page_url,
            images=[image.url for image in images],
            image_details=images,
            source=source,
            errors=[*page_errors, *dict.fromkeys(self.errors)],  # an aggregate's reasons once
            mpn=text(self._get("mpn")),
            condition=offer.condition,
            low_price=offer.low_price,
            high_price=offer.high_price,
            offer_count=offer.offer_count,
            best_rating=rating.best,
            worst_rating=rating.worst,
            rating_count=rating.ratings,
            sources=[source],
            confidence=0.5,
        )

    def _get(self, key: str) -> Any:
        value = self.found.node.get(key)
        if value is None and self.found.group is not None and key in _INHERITED:
            value = self.found.group.get(key)
        return self.graph.deref(value)

    def _nodes(self, value: Any) -> list[dict[str, Any]]:
        return [node for node in map(self.graph.deref, as_list(value)) if isinstance(node, dict)]

    def _offer(self) -> _Offer:
        """The first offer that has a usable price, and the product's aggregate offer.

        An ``AggregateOffer`` is read before the offers it lists, its ``lowPrice`` before its
        ``price``; an offer without a price of its own is read through its
        ``priceSpecification``. Availability and item condition come from the chosen offer,
        else the first that states one (the condition: else the product).
        """
        offers = self.found.offer if self.found.offer is not None else self._get("offers")
        candidates: list[dict[str, Any]] = []
        parents: dict[int, dict[str, Any]] = {}  # id() of a listed offer -> its AggregateOffer
        read = _Offer()
        for offer in self._nodes(offers):
            candidates.append(offer)
            if "AggregateOffer" in types(offer):
                if read.offer_count is None and read.low_price is None:
                    self._aggregate(offer, read)
                listed = self._nodes(offer.get("offers"))
                parents.update((id(item), offer) for item in listed)
                candidates.extend(listed)
        availability = next((o["availability"] for o in candidates if o.get("availability")), None)
        condition = next((o["itemCondition"] for o in candidates if o.get("itemCondition")), None)
        for offer in candidates:
            found = self._priced(offer, parents.get(id(offer)))
            if found is None:
                continue
            read.price, read.currency = found
            availability = offer.get("availability") or availability
            condition = offer.get("itemCondition") or condition
            break
        read.availability = self._term(availability, "availability", availability_of)
        condition = condition or self._get("itemCondition")
        read.condition = self._term(condition, "itemCondition", condition_of)
        return read

    def _priced(
        self, offer: dict[str, Any], parent: dict[str, Any] | None
    ) -> tuple[Decimal, str | None] | None:
        """``(price, currency)`` of one offer, read through its price specifications; the
        currency may be declared by the AggregateOffer listing it."""
        for holder in [offer, *self._nodes(offer.get("priceSpecification"))]:
            key = "lowPrice" if first(holder.get("lowPrice")) is not None else "price"
            raw = first(holder.get(key))
            if raw is None:
                continue
            price, hint, reason = parse_price(raw)
            if price is not None:
                price = self._within_maximum(price, key)
            elif reason:
                self.errors.append(f"{key} skipped: {reason}")
            if price is None:
                continue
            currency = None
            declared = first(
                holder.get("priceCurrency")
                or offer.get("priceCurrency")
                or (parent or {}).get("priceCurrency")
            )
            if declared is not None:
                currency, reason = parse_currency(declared)
                if reason:
                    self.errors.append(reason)
            return price, currency or hint
        return None

    def _aggregate(self, offer: dict[str, Any], read: _Offer) -> None:
        low, high = (self._amount(offer.get(key), key) for key in ("lowPrice", "highPrice"))
        if low is not None and high is not None and high < low:
            self.errors.append(f"highPrice {high} skipped: below lowPrice {low}")
            high = None
        read.low_price, read.high_price = low, high
        read.offer_count = self._count(offer.get("offerCount"), "offerCount")

    def _amount(self, value: Any, what: str) -> Decimal | None:
        value = self.graph.deref(first(value))
        if value is None:
            return None
        price, _, reason = parse_price(value)
        if price is None:
            self.errors.append(f"{what} skipped: {reason}")
            return None
        return self._within_maximum(price, what)

    def _within_maximum(self, price: Decimal, what: str) -> Decimal | None:
        if price > self.max_price:
            self.errors.append(f"{what} {price} skipped: over the maximum {self.max_price}")
            return None
        return price

    def _rating(self) -> _Rating:
        aggregate = self._get("aggregateRating")
        if not isinstance(aggregate, dict):
            return _Rating()
        rating = _Rating(
            value=self._number(aggregate.get("ratingValue"), "ratingValue"),
            best=self._number(aggregate.get("bestRating"), "bestRating"),
            worst=self._number(aggregate.get("worstRating"), "worstRating"),
            reviews=self._count(aggregate.get("reviewCount"), "reviewCount"),
            ratings=self._count(aggregate.get("ratingCount"), "ratingCount"),
        )
        best = _BEST if rating.best is None else rating.best
        worst = _WORST if rating.worst is None else rating.worst
        if best <= worst:
            self.errors.append(
                f"rating skipped: bestRating {best} is not above worstRating {worst}"
            )
            rating.value = rating.best = rating.worst = None
        elif rating.value is not None and not worst <= rating.value <= best:
            self.errors.append(f"ratingValue {rating.value} skipped: outside {worst}..{best}")
            rating.value = None
        return rating

    def _term(self, value: Any, what: str, meaning: Any) -> str | None:
        """An enumeration member (availability, item condition) as the store keeps it."""
        value = self.graph.deref(first(value))
        if isinstance(value, dict):  # {"@id": "schema:InStock"}, JSON-LD's form of a URL
            value = value.get("@id")
        text = self.graph.text(value)
        if text is None:
            return None
        term: str | None = meaning(text)
        if term is None:
            self.errors.append(f"{what} {text[:80]!r} is not a known value")
        return term

    def _number(self, value: Any, what: str) -> Decimal | None:
        value = self.graph.deref(first(value))
        if value is None:
            return None
        number, reason = parse_number(value)
        if reason:
            self.errors.append(f"{what} skipped: {reason}")
        return number

    def _count(self, value: Any, what: str) -> int | None:
        value = self.graph.deref(first(value))
        if value is None:
            return None
        count, reason = parse_count(value)
        if reason:
            self.errors.append(f"{what} skipped: {reason}")
        return count

    def _gtin(self) -> str | None:
        for key in GTIN_KEYS:
            text = self.graph.text(self._get(key))
            if text is None:
                continue
            digits, reason = read_gtin(text)
            if digits is not None:
                return digits
            self.errors.append(f"{key} {reason}")
        return None

    def _images(self, value: Any) -> list[ProductImage]:
        images: dict[str, ProductImage] = {}
        for item in map(self.graph.deref, as_list(value)):
            alt = width = height = None
            if isinstance(item, dict):
                href = first(item.get("url")) or first(item.get("contentUrl"))
                alt = self.graph.text(item.get("caption") or item.get("name"))
                width = self._pixels(item.get("width"), "width")
                height = self._pixels(item.get("height"), "height")
            else:
                href = item
            if not isinstance(href, str):
                self.errors.append(f"image skipped: no URL in {str(item)[:80]!r}")
                continue
            url = resolve_url(html.unescape(href), self.base)
            if url is None:
                self.errors.append(f"image skipped: {href[:80]!r} is not an http(s) URL")
            elif url not in images:
                images[url] = ProductImage(url, alt, len(images), width, height)
        return list(images.values())

    def _pixels(self, value: Any, what: str) -> int | None:
        value = self.graph.deref(first(value))
        if isinstance(value, dict):
            value = first(value.get("value"))
        if value is None or value == "":
            return None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            if value == int(value):
                return int(value)
        elif isinstance(value, str) and (match := _PIXELS.fullmatch(value)):
            return int(match.group(1)) or None
        self.errors.append(f"image {what} {str(value)[:40]!r} skipped: not a pixel count")
        return None
