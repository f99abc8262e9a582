"""Products on a page: schema.org ``Product`` from JSON-LD, else microdata, else OpenGraph.

This runs for every fetched page, so it first looks for the words structured product data
cannot do without, in the lowered bytes: "product", then "application/ld+json", "itemtype",
"og:type" or "product:". It returns at once when they are missing (on a 20 KB page: ~14 µs
without the word "product", ~33 µs with it); only then does it decode and parse the page
(~150-300 µs for a 20 KB product page, a third of it Lexbor's parse). The three forms are read
into the same JSON-like nodes (:mod:`harvestman.extract.structured`), and one builder turns a
node into a :class:`Product`. Malformed parts never raise: each one is skipped or repaired and
its reason kept in ``Product.errors``.
"""

from __future__ import annotations

import codecs
import hashlib
import html
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import orjson
from selectolax.lexbor import LexborHTMLParser

from harvestman.charset import decode_html
from harvestman.extract.money import parse_count, parse_currency, parse_number, parse_price
from harvestman.extract.schemaorg import Found, Graph, as_list, first, local_name, types
from harvestman.extract.structured import (
    JsonLdBlock,
    json_ld_blocks,
    microdata_products,
    opengraph_product,
    resolve_url,
)

__all__ = [
    "AVAILABILITY",
    "Product",
    "ProductImage",
    "ProductScan",
    "extract_products",
    "scan_products",
]

# The local name of an availability value, lower-cased, letters only
# ("https://schema.org/InStock", "in stock", "in_stock" -> "instock") -> the normalized value.
AVAILABILITY: Final = {
    "instock": "in_stock",
    "available": "in_stock",
    "outofstock": "out_of_stock",
    "oos": "out_of_stock",
    "unavailable": "out_of_stock",
    "preorder": "preorder",
    "presale": "preorder",
    "backorder": "backorder",
    "madetoorder": "backorder",
    "availablefororder": "backorder",
    "discontinued": "discontinued",
    "limitedavailability": "limited",
    "limited": "limited",
    "onlineonly": "online_only",
    "instoreonly": "in_store_only",
    "soldout": "sold_out",
}
_UTF16_BOMS: Final = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# What a ProductGroup's variants take from the group when they do not say it themselves.
_INHERITED: Final = frozenset(
    {"name", "description", "brand", "category", "image", "aggregateRating", "url", "offers"}
)
_GTIN_KEYS: Final = ("gtin", "gtin13", "gtin14", "gtin12", "gtin8")
_GTIN_LENGTHS: Final = frozenset({8, 12, 13, 14})
_GS1_LINK: Final = re.compile(r"/01/(\d{14})")
_PIXELS: Final = re.compile(r"\s*(\d+)(?:\.0*)?\s*(?:px)?\s*", re.IGNORECASE)
_NOT_LETTERS: Final = re.compile(r"[^a-z]")


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
    text ("19,99 €"); ``availability`` one of the values of :data:`AVAILABILITY`.
    ``url`` is the product's own URL made absolute, or the page's URL when it gives none.
    ``images`` are the absolute URLs of ``image_details``, in page order, without duplicates.
    ``source`` is ``"json-ld"``, ``"microdata"`` or ``"opengraph"``. ``errors`` are the reasons
    for the malformed parts that were skipped or repaired: the page's skipped JSON-LD blocks
    (any of them may have held this product), the repair of its own block, then its fields.
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

    def content_hash(self) -> str:
        """SHA-256 hex digest of every field as canonical JSON (``19.90`` and ``19.9`` agree).

        Two extractions of an unchanged product have the same hash, so its row need not be
        rewritten.
        """
        fields = {
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
        }
        return hashlib.sha256(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(slots=True)
class ProductScan:
    """What :func:`scan_products` found: the products, and the notes on the page's skipped and
    repaired JSON-LD blocks, kept here even when no product was found (to log them)."""

    products: list[Product] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def extract_products(body: bytes | str, url: str, *, charset: str | None = None) -> list[Product]:
    """The products described on the page ``body`` fetched from ``url``, in page order.

    JSON-LD blocks come first; microdata is read only when they hold no product, OpenGraph only
    when neither does. ``charset`` is the label of the HTTP ``Content-Type`` header, used to
    decode a bytes ``body`` (see :func:`harvestman.charset.decode_html`). Identical products
    (the same :meth:`Product.content_hash`) are returned once. Never raises on the content.

    >>> extract_products(b'<meta property="og:type" content="product">'
    ...     b'<meta property="product:price:amount" content="9,50">', "https://a.example/p")[0].price
    Decimal('9.50')
    """
    return scan_products(body, url, charset=charset).products


def scan_products(body: bytes | str, url: str, *, charset: str | None = None) -> ProductScan:
    """:func:`extract_products`, with the page-level reasons kept apart as well."""
    recoded = True  # raw is UTF-8 made from text, not the page's own bytes
    if isinstance(body, str):
        raw = body.encode("utf-8", "replace")
    else:
        raw = bytes(body)
        if raw.startswith(_UTF16_BOMS):
            raw = decode_html(raw, charset)[0].encode("utf-8", "replace")
        else:
            recoded = False
    lowered = raw.lower()
    if b"product" not in lowered:
        return ProductScan()
    # Long needles: bytes.find skips ahead by up to their length.
    has_json_ld = b"application/ld+json" in lowered
    has_microdata = b"itemtype" in lowered
    has_opengraph = b"og:type" in lowered or b"product:" in lowered
    if not (has_json_ld or has_microdata or has_opengraph):
        return ProductScan()

    tree = LexborHTMLParser(raw if recoded else _lexbor_source(raw, charset))
    base = url
    base_element = tree.css_first("base[href]")
    if base_element is not None:
        base = resolve_url(base_element.attributes.get("href") or "", url) or url
    scan = ProductScan()
    graph = Graph([])
    found: list[Found] = []
    source = "json-ld"
    blocks: list[JsonLdBlock] = []
    if has_json_ld:
        blocks = json_ld_blocks(tree)
        scan.errors = [block.note for block in blocks if block.note]
        graph = Graph([block.value for block in blocks])
        found = graph.products()
    if not found and has_microdata:
        source = "microdata"
        found = [Found(node) for node in microdata_products(tree, base)]
    if not found and has_opengraph:
        source = "opengraph"
        node = opengraph_product(tree)
        found = [Found(node)] if node is not None else []
    hashes: set[str] = set()
    for entry in found:
        # Any product may have been in a skipped block; a repair concerns its own block's.
        notes = [
            block.note
            for index, block in enumerate(blocks)
            if block.note and (block.value is None or index == entry.block)
        ]
        product = _Builder(entry, graph, base, url).build(source, notes)
        digest = product.content_hash()
        if digest not in hashes:
            hashes.add(digest)
            scan.products.append(product)
    return scan


def _lexbor_source(raw: bytes, charset: str | None) -> bytes | str:
    """What to hand Lexbor: UTF-8 bytes as they are, any other encoding decoded to text."""
    text, encoding = decode_html(raw, charset)
    lossless = encoding == "utf-8" and "\ufffd" not in text and not raw.startswith(codecs.BOM_UTF8)
    return raw if lossless else text


class _Builder:
    """Reads one found product node (with its group and offer) into a :class:`Product`."""

    def __init__(self, found: Found, graph: Graph, base: str, page_url: str) -> None:
        self.found = found
        self.graph = graph
        self.base = base
        self.page_url = page_url
        self.errors: list[str] = []

    def build(self, source: str, page_errors: list[str]) -> Product:
        text = self.graph.text
        price, currency, availability = self._offer()
        rating = review_count = None
        aggregate = self._get("aggregateRating")
        if isinstance(aggregate, dict):
            rating = self._number(aggregate.get("ratingValue"), "rating")
            for key in ("reviewCount", "ratingCount"):
                review_count = self._count(aggregate.get(key), key)
                if review_count is not None:
                    break
        url = text(self._get("url"))
        images = self._images(self._get("image"))
        return Product(
            name=text(self._get("name")),
            description=text(self._get("description")),
            price=price,
            currency=currency,
            availability=availability,
            rating=rating,
            review_count=review_count,
            brand=text(self._get("brand")),
            category=text(self._get("category")),
            sku=text(self._get("sku")),
            gtin=self._gtin(),
            url=(url and resolve_url(url, self.base)) or self.page_url,
            images=[image.url for image in images],
            image_details=images,
            source=source,
            errors=[*page_errors, *self.errors],
        )

    def _get(self, key: str) -> Any:
        value = self.found.node.get(key)
        if value is None and self.found.group is not None and key in _INHERITED:
            value = self.found.group.get(key)
        return self.graph.deref(value)

    def _nodes(self, value: Any) -> list[dict[str, Any]]:
        return [node for node in map(self.graph.deref, as_list(value)) if isinstance(node, dict)]

    def _offer(self) -> tuple[Decimal | None, str | None, str | None]:
        """``(price, currency, availability)`` of the first offer that has a usable price.

        An ``AggregateOffer`` is read before the offers it lists, its ``lowPrice`` before its
        ``price``; an offer without a price of its own is read through its
        ``priceSpecification``. Availability comes from the chosen offer, else the first that
        states one.
        """
        offers = self.found.offer if self.found.offer is not None else self._get("offers")
        candidates: list[dict[str, Any]] = []
        for offer in self._nodes(offers):
            candidates.append(offer)
            if "AggregateOffer" in types(offer):
                candidates.extend(self._nodes(offer.get("offers")))
        availability = next((o["availability"] for o in candidates if o.get("availability")), None)
        for offer in candidates:
            for holder in [offer, *self._nodes(offer.get("priceSpecification"))]:
                raw = first(holder.get("lowPrice"))
                if raw is None:
                    raw = first(holder.get("price"))
                if raw is None:
                    continue
                price, hint, reason = parse_price(raw)
                if price is None:
                    self.errors.append(f"price skipped: {reason}")
                    continue
                currency = None
                declared = first(holder.get("priceCurrency") or offer.get("priceCurrency"))
                if declared is not None:
                    currency, reason = parse_currency(declared)
                    if reason:
                        self.errors.append(reason)
                if offer.get("availability"):
                    availability = offer["availability"]
                return price, currency or hint, self._availability(availability)
        return None, None, self._availability(availability)

    def _availability(self, value: Any) -> str | None:
        value = self.graph.deref(first(value))
        if isinstance(value, dict):  # {"@id": "schema:InStock"}, JSON-LD's form of a URL
            value = value.get("@id")
        text = self.graph.text(value)
        if text is None:
            return None
        normalized = AVAILABILITY.get(_NOT_LETTERS.sub("", local_name(text).lower()))
        if normalized is None:
            self.errors.append(f"availability {text[:80]!r} is not a known value")
        return normalized

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
        for key in _GTIN_KEYS:
            text = self.graph.text(self._get(key))
            if text is None:
                continue
            link = _GS1_LINK.search(text)
            digits = link.group(1) if link else text.replace(" ", "").replace("-", "")
            if digits.isdigit() and len(digits) in _GTIN_LENGTHS:
                return digits
            self.errors.append(f"{key} {text[:40]!r} skipped: not 8, 12, 13 or 14 digits")
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


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")
