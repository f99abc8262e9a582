"""Structured data of a parsed page read into plain JSON-like values: JSON-LD, microdata, OpenGraph.

Each reader returns what the markup says, in one shape, so that one builder can read products
from all three: a node is a ``dict`` with ``"@type"`` and schema.org property names, whose
values are strings, numbers, nested nodes or lists of them.

- :func:`json_ld_blocks`: every ``<script type="application/ld+json">``, parsed; a block that is
  not JSON is repaired when the fault is a common one (HTML comment or CDATA wrappers, JS
  comments, trailing commas, raw control characters in strings, several values in one block)
  and skipped otherwise, with a reason either way.
- :func:`microdata_products`: ``itemscope`` elements typed as a schema.org product, outermost
  ones only, as nodes (nested items become nested nodes).
- :func:`opengraph_product`: the ``og:``/``product:`` meta tags of a page whose ``og:type`` is a
  product, as one node.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, NamedTuple
from urllib.parse import urljoin

import orjson
from selectolax.lexbor import LexborHTMLParser, LexborNode

from harvestman.extract.schemaorg import PRODUCT_TYPES, local_name

__all__ = [
    "JsonLdBlock",
    "json_ld_blocks",
    "microdata_products",
    "opengraph_product",
    "resolve_url",
]

_MAX_DEPTH: Final = 32  # of nested microdata items
_REPAIRABLE: Final = re.compile(
    r'"(?:[^"\\]|\\.)*"|<!--|-->|<!\[CDATA\[|\]\]>|//[^\n]*|/\*.*?\*/|,(?=\s*[\]}])', re.DOTALL
)
_REPAIRS: Final = {
    "<": "HTML comment",
    "-": "HTML comment",
    "]": "CDATA marker",
    "/": "JS comment",
    ",": "trailing comma",
}
_CONTROL: Final = re.compile(r"[\x00-\x1f]")
_SEPARATORS: Final = " \t\n\r;,"
_DECODER: Final = json.JSONDecoder(strict=False)
_URL_TAGS: Final = {
    "a": "href",
    "area": "href",
    "link": "href",
    "audio": "src",
    "embed": "src",
    "iframe": "src",
    "img": "src",
    "source": "src",
    "track": "src",
    "video": "src",
    "object": "data",
}
_VALUE_TAGS: Final = frozenset({"data", "meter"})


def resolve_url(href: str, base: str) -> str | None:
    """``href`` made absolute against ``base``; ``None`` unless it is an http(s) URL."""
    href = href.strip()
    if href.startswith(("https://", "http://")):
        return href  # most are absolute already, and urljoin costs ~10 µs a call
    if not href:
        return None
    url = urljoin(base, href)
    return url if url.startswith(("http://", "https://")) else None


class JsonLdBlock(NamedTuple):
    """One ``<script type="application/ld+json">``: its 1-based number among the page's JSON-LD
    scripts, its parsed JSON (``None`` when skipped), and how it was repaired or why skipped."""

    number: int
    value: Any
    note: str | None = None


def json_ld_blocks(tree: LexborHTMLParser) -> list[JsonLdBlock]:
    """Every JSON-LD block of the page, parsed, in page order (skipped ones included)."""
    blocks: list[JsonLdBlock] = []
    for script in tree.css("script[type]"):
        kind = (script.attributes.get("type") or "").partition(";")[0].strip().lower()
        if kind != "application/ld+json":
            continue
        number = len(blocks) + 1
        text = script.text().strip()
        if not text:
            blocks.append(JsonLdBlock(number, None, f"json-ld block {number}: skipped, empty"))
            continue
        try:
            blocks.append(JsonLdBlock(number, orjson.loads(text)))
            continue
        except orjson.JSONDecodeError:
            pass
        try:
            value, repairs = _loads_repaired(text)
        except (ValueError, RecursionError) as exc:
            note = f"json-ld block {number}: skipped, invalid JSON ({exc})"
            blocks.append(JsonLdBlock(number, None, note))
            continue
        note = f"json-ld block {number}: repaired ({', '.join(repairs)})"
        blocks.append(JsonLdBlock(number, value, note))
    return blocks


def _loads_repaired(text: str) -> tuple[Any, list[str]]:
    """Parse ``text`` after removing the common faults; raise ``ValueError`` if still invalid."""
    repairs: dict[str, None] = {}

    def repair(match: re.Match[str]) -> str:
        token = match.group()
        if token[0] == '"':
            if _CONTROL.search(token):
                repairs["control characters in strings"] = None
            return token
        repairs[_REPAIRS[token[0]]] = None
        return ""

    text = _REPAIRABLE.sub(repair, text)
    values = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position] in _SEPARATORS:
            position += 1
        if position == end:
            break
        value, position = _DECODER.raw_decode(text, position)
        values.append(value)
    if not values:
        raise ValueError("nothing left after removing comments")
    if len(values) > 1:
        repairs["several JSON values in one block"] = None
    return (values[0] if len(values) == 1 else values), list(repairs)


def microdata_products(tree: LexborHTMLParser, base: str) -> list[dict[str, Any]]:
    """The outermost microdata items typed as products, as nodes, in page order.

    A product inside another product (``isRelatedTo``, ``isSimilarTo``) belongs to it and is
    not returned on its own; a product inside any other item (a list, an offer, a page) is.
    """
    products = []
    for element in tree.css("[itemscope][itemtype]"):
        if not _is_product_item(element):
            continue
        parent = element.parent
        while parent is not None and not _is_product_item(parent):
            parent = parent.parent
        if parent is None:
            products.append(_item(element, base, 0))
    return products


def _is_product_item(element: LexborNode) -> bool:
    attributes = element.attributes
    if "itemscope" not in attributes:
        return False
    types = (attributes.get("itemtype") or "").split()
    return any(local_name(kind) in PRODUCT_TYPES for kind in types)


def _item(element: LexborNode, base: str, depth: int) -> dict[str, Any]:
    """The node of the microdata item ``element``: its type and its properties' values."""
    node: dict[str, Any] = {
        "@type": [local_name(kind) for kind in (element.attributes.get("itemtype") or "").split()]
    }
    # Depth-first in document order, not entering nested items: their properties are theirs.
    stack = list(element.iter())[::-1]
    while stack:
        child = stack.pop()
        attributes = child.attributes
        names = (attributes.get("itemprop") or "").split()
        if names:
            value = _property_value(child, base, depth)
            for name in names:
                node.setdefault(local_name(name), []).append(value)
        if "itemscope" not in attributes:
            stack.extend(list(child.iter())[::-1])
    for name, values in node.items():
        if name != "@type" and len(values) == 1:
            node[name] = values[0]
    return node


def _property_value(element: LexborNode, base: str, depth: int) -> Any:
    """A microdata property's value (HTML's rules, plus the ``content`` attribute on any tag)."""
    attributes = element.attributes
    tag = element.tag
    if "itemscope" in attributes:
        return _item(element, base, depth + 1) if depth < _MAX_DEPTH else None
    if tag == "img":
        src = attributes.get("src") or ""
        if not src.strip() or src.lstrip().startswith("data:"):
            # A lazy-loading placeholder; the script that swaps it in reads one of these.
            src = attributes.get("data-src") or attributes.get("data-lazy-src") or src
        # Kept as an ImageObject so that alt text and size survive.
        return {
            "@type": "ImageObject",
            "contentUrl": src.strip() or None,  # resolved by the reader of the node
            "caption": attributes.get("alt"),
            "width": attributes.get("width"),
            "height": attributes.get("height"),
        }
    content = attributes.get("content")
    if content is not None:
        return content
    if tag in _URL_TAGS:
        return resolve_url(attributes.get(_URL_TAGS[tag]) or "", base)
    if tag in _VALUE_TAGS:
        return attributes.get("value") or ""
    if tag == "time" and attributes.get("datetime"):
        return attributes["datetime"]
    return element.text(deep=True)


def opengraph_product(tree: LexborHTMLParser) -> dict[str, Any] | None:
    """The page's OpenGraph product as a node, or ``None`` when ``og:type`` is not a product.

    Tags are read from ``property`` or, as some sites write them, ``name``; the first value of a
    property wins, except ``og:image``, which may repeat: each one starts an image and the
    ``og:image:*`` tags after it describe that image. ``product:price:*`` win over the
    ``og:price:*`` variants. A page without ``og:type`` counts when it has a price tag.
    """
    tags: dict[str, str] = {}
    images: list[dict[str, Any]] = []
    for meta in tree.css("meta[property], meta[name]"):
        attributes = meta.attributes
        key = (attributes.get("property") or attributes.get("name") or "").strip().lower()
        content = attributes.get("content")
        if content is None or not key.startswith(("og:", "product:")):
            continue
        if key in ("og:image", "og:image:url", "og:image:secure_url"):
            url = content.strip() or None  # resolved by the reader of the node
            if key == "og:image:secure_url" and images and images[-1]["contentUrl"] is not None:
                continue  # the same image over https
            if key != "og:image:secure_url" or not images:
                images.append({"@type": "ImageObject", "contentUrl": None})
            images[-1]["contentUrl"] = url
        elif key in ("og:image:width", "og:image:height", "og:image:alt"):
            if images:
                images[-1].setdefault({"og:image:alt": "caption"}.get(key, key[9:]), content)
        else:
            tags.setdefault(key, content)
    kind = tags.get("og:type", "").strip().lower()
    has_price = any(f"{prefix}:price:amount" in tags for prefix in ("product", "og"))
    if not (kind.startswith("product") or (not kind and has_price)):
        return None

    def tag(*keys: str) -> str | None:
        return next((tags[key] for key in keys if key in tags), None)

    return {
        "@type": "Product",
        "name": tag("og:title", "product:title"),
        "description": tag("og:description", "product:description"),
        "url": tag("og:url"),
        "image": images,
        "brand": tag("product:brand", "og:brand"),
        "category": tag("product:category", "og:category"),
        "sku": tag("product:retailer_item_id", "product:sku", "og:sku"),
        "gtin": tag("product:gtin", "product:ean", "product:upc", "product:isbn"),
        "mpn": tag("product:mfr_part_no", "product:mpn"),
        "offers": {
            "@type": "Offer",
            "price": tag("product:price:amount", "og:price:amount"),
            "priceCurrency": tag("product:price:currency", "og:price:currency"),
            "availability": tag("product:availability", "og:availability"),
            "itemCondition": tag("product:condition", "og:condition"),
        },
    }
