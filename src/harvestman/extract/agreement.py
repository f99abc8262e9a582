"""How far a page's structured data forms agree on a product: ``sources`` and ``confidence``.

A page may describe one product in JSON-LD, in microdata and in OpenGraph at once. The
product is read from the first form that has it; the others are compared with it:

- another form's product *describes the same product* when it has the same GTIN, else the
  same SKU, else a name that agrees; failing those, when both forms hold exactly one
  product (OpenGraph always does: it describes the page);
- names *agree* when they are equal ignoring case and white space, or one is the other plus a
  suffix after a non-letter ("Kettle" and "Kettle | Shop"); prices agree when equal
  (``19.9`` and ``19.90``), in the same currency when both say one.

``confidence`` is 0.5 for one form alone, plus 0.125 for each agreement and minus 0.125 for
each disagreement on the name and the price of each other form describing the product,
within 0..1: two forms agreeing on both make 0.75, all three 1.0. ``sources`` lists the
product's own form and those that agreed with it without a disagreement; a disagreement is
noted in the product's ``errors``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from harvestman.extract.product import Product

__all__ = ["FORMS", "corroborate", "names_agree"]

FORMS: Final = ("json-ld", "microdata", "opengraph")  # in the order they are read
_ALONE: Final = 0.5
_STEP: Final = 0.125


def names_agree(first: str, second: str) -> bool:
    """Whether two product names are the same name (see the module docstring).

    >>> names_agree("Trail  Runner 2", "trail runner 2 | Stridewell")
    True
    >>> names_agree("Kettle", "Kettles")
    False
    """
    a, b = " ".join(first.casefold().split()), " ".join(second.casefold().split())
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not long.startswith(short):
        return False
    return len(long) == len(short) or not long[len(short)].isalnum()


def corroborate(
    product: Product, alone: bool, others: Mapping[str, Sequence[Product]]
) -> tuple[list[str], float, list[str]]:
    """``(sources, confidence, notes)`` for ``product`` given the other forms' products.

    ``alone``: whether ``product`` is the only product its own form found on the page.
    """
    sources = [product.source]
    notes: list[str] = []
    score = _ALONE
    for form, candidates in others.items():
        twin = _twin(product, alone, candidates)
        if twin is None:
            continue
        verdicts = []
        if product.name is not None and twin.name is not None:
            agreed = names_agree(product.name, twin.name)
            verdicts.append(agreed)
            if not agreed:
                notes.append(f"{form} names it {twin.name[:80]!r}")
        if product.price is not None and twin.price is not None:
            agreed = _prices_agree(product, twin)
            verdicts.append(agreed)
            if not agreed:
                notes.append(f"{form} prices it {_price_text(twin)}")
        score += _STEP * (verdicts.count(True) - verdicts.count(False))
        if verdicts and all(verdicts):
            sources.append(form)
    return sources, min(max(score, 0.0), 1.0), notes


def _twin(product: Product, alone: bool, candidates: Sequence[Product]) -> Product | None:
    if product.gtin is not None:
        found = next((c for c in candidates if c.gtin == product.gtin), None)
        if found is not None:
            return found
    if product.sku is not None:
        sku = product.sku.casefold()
        found = next((c for c in candidates if c.sku is not None and c.sku.casefold() == sku), None)
        if found is not None:
            return found
    if product.name is not None:
        name = product.name
        found = next((c for c in candidates if c.name and names_agree(name, c.name)), None)
        if found is not None:
            return found
    return candidates[0] if alone and len(candidates) == 1 else None


def _prices_agree(product: Product, twin: Product) -> bool:
    if product.currency and twin.currency and product.currency != twin.currency:
        return False
    return product.price == twin.price


def _price_text(product: Product) -> str:
    price: Decimal | None = product.price
    amount = "?" if price is None else format(price.normalize(), "f")
    return f"{amount} {product.currency}" if product.currency else amount
