"""Products on a page: schema.org ``Product`` from JSON-LD, else microdata, else OpenGraph.

This runs for every fetched page, so it first looks for the words structured product data
cannot do without, in the lowered bytes: "product", then "application/ld+json", "itemtype",
"og:type" or "product:". It returns at once when they are missing (on a 20 KB page: ~14 µs
without the word "product", ~33 µs with it); only then does it decode and parse the page
(~150-300 µs for a 20 KB product page, a third of it Lexbor's parse). The three forms are read
into the same JSON-like nodes (:mod:`harvestman.extract.structured`), and one builder turns a
node into a :class:`Product` (:mod:`harvestman.extract.builder`, which checks each value).
Malformed parts never raise: each one is skipped or repaired and its reason kept in
``Product.errors``. The forms a product was not read from are still read when the page has
them, and compared with it (:mod:`harvestman.extract.agreement`).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final

from selectolax.lexbor import LexborHTMLParser

from harvestman.charset import decode_html
from harvestman.extract.agreement import corroborate
from harvestman.extract.builder import DEFAULT_MAX_PRICE, ProductBuilder
from harvestman.extract.product import Product, ProductImage
from harvestman.extract.schemaorg import Found, Graph
from harvestman.extract.structured import (
    JsonLdBlock,
    json_ld_blocks,
    microdata_products,
    opengraph_product,
    resolve_url,
)
from harvestman.extract.vocabulary import AVAILABILITY

__all__ = [
    "AVAILABILITY",
    "DEFAULT_MAX_PRICE",
    "Product",
    "ProductImage",
    "ProductScan",
    "extract_products",
    "scan_products",
]

_UTF16_BOMS: Final = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(slots=True)
class ProductScan:
    """What :func:`scan_products` found: the products, and the notes on the page's skipped and
    repaired JSON-LD blocks, kept here even when no product was found (to log them)."""

    products: list[Product] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rejected: int = 0  # products left out for want of a name (each has a note in errors)


def extract_products(
    body: bytes | str,
    url: str,
    *,
    charset: str | None = None,
    max_price: Decimal = DEFAULT_MAX_PRICE,
) -> list[Product]:
    """The products described on the page ``body`` fetched from ``url``, in page order.

    JSON-LD blocks come first; microdata is read only when they hold no product, OpenGraph only
    when neither does; the forms not read from are compared with it (``sources``,
    ``confidence``). ``charset`` is the label of the HTTP ``Content-Type`` header, used to
    decode a bytes ``body`` (see :func:`harvestman.charset.decode_html`). A product without a
    name is rejected (:attr:`ProductScan.errors` says so); a price over ``max_price`` is left
    out. Identical products (the same :meth:`Product.content_hash`) are returned once. Never
    raises on the content.

    >>> extract_products(b'<meta property="og:type" content="product">'
    ...     b'<meta property="og:title" content="Pen">'
    ...     b'<meta property="product:price:amount" content="9,50">', "https://a.example/p")[0].price
    Decimal('9.50')
    """
    return scan_products(body, url, charset=charset, max_price=max_price).products


def scan_products(
    body: bytes | str,
    url: str,
    *,
    charset: str | None = None,
    max_price: Decimal = DEFAULT_MAX_PRICE,
) -> ProductScan:
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
    blocks: list[JsonLdBlock] = []
    graph = Graph([])
    forms: dict[str, list[Found]] = {}
    if has_json_ld:
        blocks = json_ld_blocks(tree)
        scan.errors = [block.note for block in blocks if block.note]
        graph = Graph([block.value for block in blocks])
        forms["json-ld"] = graph.products()
    if has_microdata:
        forms["microdata"] = [Found(node) for node in microdata_products(tree, base)]
    if has_opengraph:
        node = opengraph_product(tree)
        forms["opengraph"] = [Found(node)] if node is not None else []
    read = {form: found for form, found in forms.items() if found}
    if not read:
        return scan

    def build(form: str, entry: Found) -> Product:
        # Any product may have been in a skipped block; a repair concerns its own block's.
        notes = [
            block.note
            for index, block in enumerate(blocks)
            if block.note and (block.value is None or index == entry.block)
        ]
        return ProductBuilder(entry, graph, base, url, max_price).build(form, notes)

    built = {form: [build(form, entry) for entry in found] for form, found in read.items()}
    own, *_ = built  # the first form that has products is read from
    others = {form: [p for p in found if p.name] for form, found in built.items() if form != own}
    hashes: set[str] = set()
    for position, product in enumerate(built[own]):
        if product.name is None:
            scan.errors.append(f"{own} product {position + 1} rejected: no name")
            scan.rejected += 1
            continue
        alone = len(built[own]) == 1
        product.sources, product.confidence, notes = corroborate(product, alone, others)
        product.errors.extend(notes)
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
