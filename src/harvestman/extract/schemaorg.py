"""schema.org data as JSON-like nodes: types, ``@id`` references, where the products are.

A node is a ``dict`` with ``"@type"`` and schema.org property names, as JSON-LD writes it and as
:mod:`harvestman.extract.structured` reads microdata and OpenGraph into. Types and enumeration
values are compared by local name, so ``"Product"``, ``"schema:Product"`` and
``"https://schema.org/Product"`` are one type.
"""

from __future__ import annotations

import html
from typing import Any, Final, NamedTuple

__all__ = ["OFFER_TYPES", "PRODUCT_TYPES", "Found", "Graph", "as_list", "first", "local_name"]

# schema.org Product and its subtypes whose names say so.
PRODUCT_TYPES: Final = frozenset(
    {"Product", "ProductGroup", "ProductModel", "IndividualProduct", "SomeProducts"}
)
OFFER_TYPES: Final = frozenset({"Offer", "AggregateOffer"})
_MAX_DEPTH: Final = 64


def local_name(value: str) -> str:
    """``"InStock"`` from ``"https://schema.org/InStock"``, ``"schema:InStock"`` or itself."""
    value = value.strip()
    cut = max(value.rfind("/"), value.rfind("#"), value.rfind(":"))
    return value[cut + 1 :] if cut >= 0 else value


def as_list(value: Any) -> list[Any]:
    """``value`` as a list: itself if it is one, ``[]`` for ``None``."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def first(value: Any) -> Any:
    """The first present (not ``None``, not ``""``) item of a list, or the value itself."""
    if isinstance(value, list):
        return next((item for item in value if item is not None and item != ""), None)
    return value


def types(node: dict[str, Any]) -> set[str]:
    """The local names of a node's ``@type`` (a string or a list)."""
    return {local_name(kind) for kind in as_list(node.get("@type")) if isinstance(kind, str)}


class Found(NamedTuple):
    """A product node, the ``Offer`` that wraps it and its ``ProductGroup`` (if any), and the
    index of the value (JSON-LD block) it was found in."""

    node: dict[str, Any]
    offer: dict[str, Any] | None = None
    group: dict[str, Any] | None = None
    block: int | None = None


class Graph:
    """The nodes of one page's JSON-LD: resolves ``{"@id": ...}`` references, finds products.

    A reference resolves to the first node with that ``@id`` that says more than its id and
    type; an unknown reference stays as it is.
    """

    def __init__(self, values: list[Any]) -> None:
        """``values``: the parsed JSON of each block of the page, in page order."""
        self.values = values
        self._refs: dict[str, dict[str, Any]] | None = None  # built at the first reference

    def deref(self, value: Any) -> Any:
        """The node a bare ``{"@id": ...}`` reference names, when the page defines it."""
        if isinstance(value, dict) and "@id" in value and value.keys() <= {"@id", "@type"}:
            node_id = value["@id"]
            if not isinstance(node_id, str):
                return value
            if self._refs is None:
                self._refs = self._index()
            return self._refs.get(node_id, value)
        return value

    def _index(self) -> dict[str, dict[str, Any]]:
        refs: dict[str, dict[str, Any]] = {}
        stack: list[Any] = [self.values]
        while stack:
            value = stack.pop()
            if isinstance(value, list):
                stack.extend(reversed(value))
            elif isinstance(value, dict):
                node_id = value.get("@id")
                if isinstance(node_id, str) and not value.keys() <= {"@id", "@type"}:
                    refs.setdefault(node_id, value)
                stack.extend(reversed(list(value.values())))
        return refs

    def text(self, value: Any) -> str | None:
        """A property's text: its first value, or a node's ``name``/``@value``/``codeValue``;
        HTML entities decoded, white space collapsed, ``None`` when empty or not text."""
        value = self.deref(first(value))
        if isinstance(value, dict):
            value = first(value.get("name") or value.get("@value") or value.get("codeValue"))
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return None
        if "&" in value:
            value = html.unescape(value)
        return " ".join(value.split()) or None

    def products(self) -> list[Found]:
        """Every product of the page, in document order, each once.

        A product's own subtree is not searched (related products are not this page's); a
        ``ProductGroup`` stands for its variants when it lists them; an ``Offer`` whose
        ``itemOffered`` is a product gives that product its price.
        """
        found: list[Found] = []
        places: dict[int, int] = {}  # id() of a listed node -> its index in found
        for block, value in enumerate(self.values):
            self._find(value, found, places, block, 0)
        return found

    def _find(
        self, value: Any, found: list[Found], places: dict[int, int], block: int, depth: int
    ) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(value, list):
            for item in value:
                self._find(item, found, places, block, depth + 1)
            return
        if not isinstance(value, dict):
            return
        kinds = types(value)
        if kinds & PRODUCT_TYPES:
            variants = [self.deref(item) for item in as_list(value.get("hasVariant"))]
            variants = [item for item in variants if isinstance(item, dict) and types(item)]
            if "ProductGroup" in kinds and variants:
                for variant in variants:
                    _add(Found(variant, None, value, block), found, places)
            else:
                _add(Found(value, block=block), found, places)
            return
        if kinds & OFFER_TYPES:
            item = self.deref(first(value.get("itemOffered")))
            if isinstance(item, dict) and types(item) & PRODUCT_TYPES:
                _add(Found(item, value, block=block), found, places)
                return
        for key, item in value.items():
            if key != "@context":
                self._find(item, found, places, block, depth + 1)


def _add(entry: Found, found: list[Found], places: dict[int, int]) -> None:
    place = places.get(id(entry.node))
    if place is None:
        places[id(entry.node)] = len(found)
        found.append(entry)
    elif entry.offer is not None and found[place].offer is None:
        found[place] = found[place]._replace(offer=entry.offer)
