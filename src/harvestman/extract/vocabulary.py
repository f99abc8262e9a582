"""schema.org's enumerations a product takes values from, as the store keeps them.

Each member of ``ItemAvailability`` and ``OfferItemCondition`` has one stored value of its
own, its name in lower snake case (``LimitedAvailability`` is ``limited``, the one shortened
name, kept from before). Pages also write these as text ("in stock", "out_of_stock", "used"):
a value is looked up by its local name, lower-cased, letters only.

>>> availability_of("https://schema.org/PreSale"), availability_of("in stock")
('presale', 'in_stock')
>>> condition_of("schema:RefurbishedCondition"), condition_of("Used")
('refurbished', 'used')
"""

from __future__ import annotations

import re
from typing import Final

from harvestman.extract.schemaorg import local_name

__all__ = [
    "AVAILABILITY",
    "AVAILABILITY_VALUES",
    "CONDITION",
    "CONDITION_VALUES",
    "availability_of",
    "condition_of",
]

# https://schema.org/ItemAvailability: the twelve members, then the words pages use instead.
AVAILABILITY: Final = {
    "instock": "in_stock",
    "outofstock": "out_of_stock",
    "preorder": "preorder",
    "presale": "presale",
    "backorder": "backorder",
    "madetoorder": "made_to_order",
    "discontinued": "discontinued",
    "limitedavailability": "limited",
    "onlineonly": "online_only",
    "instoreonly": "in_store_only",
    "soldout": "sold_out",
    "reserved": "reserved",
    "available": "in_stock",
    "oos": "out_of_stock",
    "unavailable": "out_of_stock",
    "availablefororder": "backorder",
    "limited": "limited",
}
# The stored values, in schema.org's order (API filters accept exactly these).
AVAILABILITY_VALUES: Final = tuple(dict.fromkeys(AVAILABILITY.values()))

# https://schema.org/OfferItemCondition, and the bare words (OpenGraph's product:condition).
CONDITION: Final = {
    "newcondition": "new",
    "usedcondition": "used",
    "refurbishedcondition": "refurbished",
    "damagedcondition": "damaged",
    "new": "new",
    "used": "used",
    "refurbished": "refurbished",
    "damaged": "damaged",
}
CONDITION_VALUES: Final = tuple(dict.fromkeys(CONDITION.values()))

_NOT_LETTERS: Final = re.compile(r"[^a-z]")


def _key(text: str) -> str:
    return _NOT_LETTERS.sub("", local_name(text).lower())


def availability_of(text: str) -> str | None:
    """The stored availability a page's value means, or ``None`` when it is not one."""
    return AVAILABILITY.get(_key(text))


def condition_of(text: str) -> str | None:
    """The stored item condition a page's value means, or ``None`` when it is not one."""
    return CONDITION.get(_key(text))
