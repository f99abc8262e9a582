"""Every value a batch writes, checked against its column before it reaches the store.

PostgreSQL refuses a value its column cannot hold and with it the whole batch: a price past
``NUMERIC(18, 4)``, a rating past ``NUMERIC(6, 2)``, a count past ``INTEGER``, a string past
``VARCHAR(n)``, a NUL in any text. SQLite stores most of them as they come (a 30-digit price as
a float). So each value is checked first, the same way for both stores, by a rule derived from
its column's type in ``schema.py`` (a changed column changes its rule):

=====================================  ========================================================
column type                            the value is...
=====================================  ========================================================
``String(n)``, ``Text``                cleaned of NUL and of lone surrogates (no UTF-8 for
                                       them); past n characters, cleared (cut when NOT NULL)
``SmallInteger``, ``Integer``,         within the signed 16-, 32- or 64-bit range, else cleared
``BigInteger``                         (clamped when NOT NULL)
``Numeric(p, s)``                      finite and, rounded to s places, under 10**(p - s);
                                       else cleared (left to the store when NOT NULL)
``Float``                              finite, else cleared (the same)
=====================================  ========================================================

What was changed is said in a note per record (an ``error_logs`` row, ``UnstorableValue``) and,
for a product, in its ``errors`` too. A discovered URL that needs a change is dropped instead:
its hash was computed from the URL as it is.

>>> from decimal import Decimal
>>> from harvestman.store.schema import products
>>> rule_for(products.c.rating).check(Decimal("98765"))
(None, 'cleared: 98765 is outside NUMERIC(6, 2)')
>>> rule_for(products.c.name).check("Ket\\x00tle")
('Kettle', 'NUL removed')
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Final, Literal, TypeVar

from sqlalchemy import BigInteger, Column, Float, Integer, Numeric, SmallInteger, String, Table

from harvestman.records import NewUrl, Outcome, PageRecord
from harvestman.store.schema import (
    crawled_pages,
    error_logs,
    images,
    parsed_records,
    parser_stats,
    products,
    urls,
)

__all__ = ["CheckedBatch", "ColumnRule", "Note", "check_batch", "rule_for"]

T = TypeVar("T")
Kind = Literal["text", "integer", "numeric", "float", "other"]

# Signed ranges by integer type, narrowest first (BigInteger and SmallInteger are Integers).
_INTEGER_RANGES: Final = (
    (SmallInteger, -(2**15), 2**15 - 1),
    (BigInteger, -(2**63), 2**63 - 1),
    (Integer, -(2**31), 2**31 - 1),
)
_WIDE: Final = Context(prec=200)  # enough digits to round any value that passed the size test
_SHOWN: Final = 40  # characters of a refused value quoted in a reason


@dataclass(frozen=True, slots=True)
class ColumnRule:
    """What one column accepts; ``check(value)`` answers ``(value to write, reason or None)``.

    ``high`` and ``low`` bound an integer column; ``digits`` (10**(p - s)) and ``scale`` a
    numeric one; ``length`` a string one.
    """

    column: str
    type_name: str
    kind: Kind
    nullable: bool
    length: int | None = None
    low: int = 0
    high: int = 0
    digits: Decimal | None = None
    scale: int = 0

    def check(self, value: Any) -> tuple[Any, str | None]:
        if value is None:
            return None, None
        if self.kind == "text":
            return self._text(value) if isinstance(value, str) else (value, None)
        if self.kind == "integer":
            if isinstance(value, int) and not isinstance(value, bool):
                return self._integer(value)
            return value, None
        if self.kind == "numeric":
            return self._numeric(value)
        if self.kind == "float" and isinstance(value, float) and not math.isfinite(value):
            return self._refuse(value, "is not a finite number")
        return value, None

    def _text(self, value: str) -> tuple[Any, str | None]:
        reasons = []
        if "\x00" in value:
            value = value.replace("\x00", "")
            reasons.append("NUL removed")
        if not value.isascii():
            try:
                value.encode()
            except UnicodeEncodeError:
                value = value.encode(errors="replace").decode()
                reasons.append("lone surrogates replaced")
        if self.length is not None and len(value) > self.length:
            if self.nullable:
                return None, f"cleared: {len(value)} characters, over {self.type_name}"
            value = value[: self.length]
            reasons.append(f"cut to {self.length} characters ({self.type_name})")
        return value, "; ".join(reasons) or None

    def _integer(self, value: int) -> tuple[Any, str | None]:
        if self.low <= value <= self.high:
            return value, None
        if self.nullable:
            return self._refuse(value, f"is outside {self.type_name}")
        clamped = min(max(value, self.low), self.high)
        return clamped, f"{_shown(value)} clamped to {clamped} ({self.type_name})"

    def _numeric(self, value: Any) -> tuple[Any, str | None]:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            return value, None
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if not number.is_finite():
            return self._refuse(value, "is not a finite number")
        if self.digits is None or number.is_zero():
            return value, None
        # PostgreSQL rounds to the scale first, then checks the size (half away from zero).
        limit = self.digits.adjusted()
        if (
            number.adjusted() >= limit
            or abs(number.quantize(Decimal(1).scaleb(-self.scale), ROUND_HALF_UP, _WIDE))
            >= self.digits
        ):
            return self._refuse(value, f"is outside {self.type_name}")
        return value, None

    def _refuse(self, value: Any, why: str) -> tuple[Any, str | None]:
        if not self.nullable:  # nothing to put in its place: the store decides (isolation)
            return value, None
        return None, f"cleared: {_shown(value)} {why}"


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def rule_for(column: Column[Any]) -> ColumnRule:
    """The rule of one table column, from its SQLAlchemy type."""
    table = column.table
    assert isinstance(table, Table)
    return _rules(table)[column.name]


@functools.cache
def _rules(table: Table) -> Mapping[str, ColumnRule]:
    return {column.name: _derive(table, column) for column in table.columns}


def _derive(table: Table, column: Column[Any]) -> ColumnRule:
    kind_of = column.type
    name = f"{table.name}.{column.name}"
    type_name = str(kind_of)
    nullable = bool(column.nullable)
    if isinstance(kind_of, String):
        return ColumnRule(name, type_name, "text", nullable, length=kind_of.length)
    if isinstance(kind_of, Integer):
        for integer, low, high in _INTEGER_RANGES:
            if isinstance(kind_of, integer):
                return ColumnRule(name, type_name, "integer", nullable, low=low, high=high)
    if isinstance(kind_of, Float):  # a Numeric too: ask first
        return ColumnRule(name, type_name, "float", nullable)
    if isinstance(kind_of, Numeric):
        precision, scale = kind_of.precision, kind_of.scale or 0
        digits = None if precision is None else Decimal(10) ** (precision - scale)
        return ColumnRule(name, type_name, "numeric", nullable, digits=digits, scale=scale)
    return ColumnRule(name, type_name, "other", nullable)


# -- a batch ----------------------------------------------------------------------------------

# Which field of each record is written to which column. A page is its table's row by design.
_PAGE_FIELDS: Final = {
    f.name: f.name
    for f in dataclasses.fields(PageRecord)
    if f.name in crawled_pages.c and f.name != "redirects"  # redirects: written as JSON
}
_URL_FIELDS: Final = {
    name: name
    for name in ("next_crawl_at", "attempts", "status_code", "error_class", "error",
                 "content_hash", "etag", "last_modified")
}  # fmt: skip
_NEW_URL_FIELDS: Final = {
    name: name for name in ("url", "url_hash", "host", "depth", "priority", "kind", "lastmod")
}
_PRODUCT_FIELDS: Final = {
    **{name: name
       for name in ("name", "description", "price", "currency", "availability", "rating",
                    "review_count", "brand", "category", "sku", "gtin", "source")},
    "url": "product_url",
}  # fmt: skip
_IMAGE_FIELDS: Final = {"url": "url", "alt": "alt", "width": "width", "height": "height"}
_RECORD_FIELDS: Final = {
    "kind": "kind", "parser": "parser", "parser_version": "parser_version", "key": "record_key",
}  # fmt: skip
_RUN_FIELDS: Final = {"parser": "parser", "version": "parser_version"}
_FAILURE_FIELDS: Final = {"message": "message", "traceback": "stack_trace", "url": "task"}


@dataclass(frozen=True, slots=True)
class Note:
    """What was changed in one record to fit the store: ``task`` is its URL."""

    task: str
    message: str
    dropped: bool = False


@dataclass(slots=True)
class CheckedBatch:
    """A batch whose every value fits its column, and the notes on what was changed.

    Records that needed no change are the caller's own objects; changed ones are copies."""

    outcomes: list[Outcome]
    new_urls: list[NewUrl]
    notes: list[Note] = field(default_factory=list)


def check_batch(outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl]) -> CheckedBatch:
    """Check every value the batch writes (see the module docstring)."""
    checked = CheckedBatch([], [])
    for row in new_urls:
        cleaned, reasons = _checked(row, urls, _NEW_URL_FIELDS)
        if reasons:
            message = "discovered URL dropped: " + "; ".join(reasons)
            checked.notes.append(Note(cleaned.url, message, dropped=True))
        else:
            checked.new_urls.append(row)
    for outcome in outcomes:
        clean, reasons = _checked_outcome(outcome)
        checked.outcomes.append(clean)
        if reasons:
            message = "values changed to fit the store: " + "; ".join(reasons)
            checked.notes.append(Note(outcome.request.url, message))
    return checked


def _checked(
    record: T, table: Table, fields: Mapping[str, str], label: str = ""
) -> tuple[T, list[str]]:
    rules = _rules(table)
    changes: dict[str, Any] = {}
    reasons: list[str] = []
    for name, column in fields.items():
        value = getattr(record, name)
        if value is None:
            continue
        new, reason = rules[column].check(value)
        if reason is not None:
            changes[name] = new
            reasons.append(f"{label}{name} {reason}")
    if not changes:
        return record, reasons
    return dataclasses.replace(record, **changes), reasons  # type: ignore[type-var]


def _checked_outcome(outcome: Outcome) -> tuple[Outcome, list[str]]:
    clean, reasons = _checked(outcome, urls, _URL_FIELDS)
    changes: dict[str, Any] = {}
    if outcome.page is not None:
        page, found = _checked(outcome.page, crawled_pages, _PAGE_FIELDS, "page ")
        if found:
            changes["page"] = page
            reasons.extend(found)
    if outcome.products:
        found_products = [
            _checked_product(product, i) for i, product in enumerate(outcome.products)
        ]
        if any(found for _, found in found_products):
            changes["products"] = [product for product, _ in found_products]
            reasons.extend(reason for _, found in found_products for reason in found)
    for name, table, fields in (
        ("records", parsed_records, _RECORD_FIELDS),
        ("parser_runs", parser_stats, _RUN_FIELDS),
        ("parse_failures", error_logs, _FAILURE_FIELDS),
    ):
        items = getattr(outcome, name)
        if not items:
            continue
        found_items = [
            _checked(item, table, fields, f"{name}[{i}] ") for i, item in enumerate(items)
        ]
        if any(found for _, found in found_items):
            changes[name] = [item for item, _ in found_items]
            reasons.extend(reason for _, found in found_items for reason in found)
    if changes:
        clean = dataclasses.replace(clean, **changes)
    return clean, reasons


def _checked_product(product: Any, position: int) -> tuple[Any, list[str]]:
    """A product with its values fitted, each change also kept in its own ``errors``."""
    clean, own = _checked(product, products, _PRODUCT_FIELDS)
    pictures: list[Any] = []
    for i, image in enumerate(getattr(product, "image_details", None) or ()):
        picture, found = _checked(image, images, _IMAGE_FIELDS, f"image {i} ")
        pictures.append(picture)
        own.extend(found)
    if not own:
        return product, []
    clean = dataclasses.replace(clean, errors=[*clean.errors, *own])
    if any(
        picture is not image for picture, image in zip(pictures, product.image_details, strict=True)
    ):
        clean = dataclasses.replace(clean, image_details=pictures)
    return clean, [f"product {position} {reason}" for reason in own]
