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
import logging
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, ClassVar, Final, TypeVar, cast

from sqlalchemy import BigInteger, Column, Float, Integer, Numeric, SmallInteger, String, Table

from harvestman.records import DomainRecord, NewUrl, Outcome, PageRecord
from harvestman.store.schema import (
    crawled_pages,
    domains,
    error_logs,
    images,
    parsed_records,
    parser_stats,
    products,
    urls,
)

__all__ = ["CheckedBatch", "ColumnRule", "Note", "check_batch", "fit_domain", "rule_for"]

log = logging.getLogger(__name__)

T = TypeVar("T")

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

    This base accepts anything (a Boolean); a subclass per kind of type checks its values.
    """

    kind: ClassVar[str] = "other"
    column: str
    type_name: str
    nullable: bool

    def check(self, value: Any) -> tuple[Any, str | None]:
        return value, None

    def _refuse(self, value: Any, why: str) -> tuple[Any, str | None]:
        if not self.nullable:  # nothing to put in its place: the store decides (isolation)
            return value, None
        return None, f"cleared: {_shown(value)} {why}"


@dataclass(frozen=True, slots=True)
class TextRule(ColumnRule):
    """``String(length)``, or ``Text`` (``length`` None)."""

    kind: ClassVar[str] = "text"
    length: int | None = None

    def check(self, value: Any) -> tuple[Any, str | None]:
        if type(value) is not str:
            return value, None
        fits = self.length is None or len(value) <= self.length
        if fits and "\x00" not in value and value.isascii():  # the common case: two C scans
            return value, None
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


@dataclass(frozen=True, slots=True)
class IntegerRule(ColumnRule):
    """``SmallInteger``, ``Integer``, ``BigInteger``: signed ``low`` to ``high``."""

    kind: ClassVar[str] = "integer"
    low: int = 0
    high: int = 0

    def check(self, value: Any) -> tuple[Any, str | None]:
        if type(value) is not int or self.low <= value <= self.high:
            return value, None
        if self.nullable:
            return self._refuse(value, f"is outside {self.type_name}")
        clamped = min(max(value, self.low), self.high)
        return clamped, f"{_shown(value)} clamped to {clamped} ({self.type_name})"


@dataclass(frozen=True, slots=True)
class NumericRule(ColumnRule):
    """``Numeric(p, s)``: ``digits`` is 10**(p - s) (None: no precision), ``scale`` is s."""

    kind: ClassVar[str] = "numeric"
    digits: Decimal | None = None
    scale: int = 0

    def check(self, value: Any) -> tuple[Any, str | None]:
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            return value, None
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if not number.is_finite():
            return self._refuse(value, "is not a finite number")
        if self.digits is None or number.is_zero():
            return value, None
        # PostgreSQL rounds to the scale first, then checks the size (half away from zero).
        if (
            number.adjusted() >= self.digits.adjusted()
            or abs(number.quantize(Decimal(1).scaleb(-self.scale), ROUND_HALF_UP, _WIDE))
            >= self.digits
        ):
            return self._refuse(value, f"is outside {self.type_name}")
        return value, None


@dataclass(frozen=True, slots=True)
class FloatRule(ColumnRule):
    kind: ClassVar[str] = "float"

    def check(self, value: Any) -> tuple[Any, str | None]:
        if type(value) is float and not math.isfinite(value):
            return self._refuse(value, "is not a finite number")
        return value, None


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
    of = column.type
    name, type_name, nullable = f"{table.name}.{column.name}", str(of), bool(column.nullable)
    if isinstance(of, String):
        return TextRule(name, type_name, nullable, length=of.length)
    if isinstance(of, Integer):
        low, high = next((low, high) for kind, low, high in _INTEGER_RANGES if isinstance(of, kind))
        return IntegerRule(name, type_name, nullable, low=low, high=high)
    if isinstance(of, Float):  # a Numeric too: ask first
        return FloatRule(name, type_name, nullable)
    if isinstance(of, Numeric):
        precision, scale = of.precision, of.scale or 0
        digits = None if precision is None else Decimal(10) ** (precision - scale)
        return NumericRule(name, type_name, nullable, digits=digits, scale=scale)
    return ColumnRule(name, type_name, nullable)


# -- a batch ----------------------------------------------------------------------------------

Plan = tuple[tuple[str, ColumnRule], ...]  # (a record's field, the rule of its column)


def _plan(table: Table, fields: Mapping[str, str]) -> Plan:
    rules = _rules(table)
    return tuple((name, rules[column]) for name, column in fields.items())


# Which field of each record is written to which column. A page is its table's row by design.
_PAGE: Final = _plan(
    crawled_pages,
    {
        f.name: f.name
        for f in dataclasses.fields(PageRecord)
        if f.name in crawled_pages.c and f.name != "redirects"  # redirects: written as JSON
    },
)
_URL: Final = _plan(urls, {
    name: name
    for name in ("next_crawl_at", "attempts", "status_code", "error_class", "error",
                 "content_hash", "etag", "last_modified")
})  # fmt: skip
_NEW_URL: Final = _plan(urls, {
    name: name for name in ("url", "url_hash", "host", "depth", "priority", "kind", "lastmod")
})  # fmt: skip
_PRODUCT: Final = _plan(products, {
    **{name: name
       for name in ("name", "description", "price", "currency", "availability", "rating",
                    "review_count", "brand", "category", "sku", "gtin", "source", "mpn",
                    "condition", "low_price", "high_price", "offer_count", "best_rating",
                    "worst_rating", "rating_count", "confidence")},
    "url": "product_url",
})  # fmt: skip
_IMAGE: Final = _plan(images, {"url": "url", "alt": "alt", "width": "width", "height": "height"})
_RECORD: Final = _plan(parsed_records, {
    "kind": "kind", "parser": "parser", "parser_version": "parser_version", "key": "record_key",
})  # fmt: skip
_RUN: Final = _plan(parser_stats, {"parser": "parser", "version": "parser_version"})
_FAILURE: Final = _plan(
    error_logs, {"message": "message", "traceback": "stack_trace", "url": "task"}
)


_DOMAIN: Final = _plan(domains, {
    name: name
    for name in ("host", "robots_txt", "robots_status", "robots_fetched_at", "crawl_delay")
})  # fmt: skip


def fit_domain(record: DomainRecord) -> DomainRecord:
    """A host's robots.txt record with its values fitted (a robots.txt may hold NUL, which
    PostgreSQL refuses: the host would never be crawled); what changed is logged."""
    fitted, reasons = _checked(record, _DOMAIN)
    if reasons:
        log.warning("robots.txt of %s: %s", record.host, "; ".join(reasons))
    return fitted


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
    """Check every value the batch writes (see the module docstring).

    A whole column of the batch is checked first in a few C-level passes (``_all_fit``); only
    when one of its values may need a change are the records checked one by one.
    """
    checked = CheckedBatch([], [])
    if _all_fit(new_urls, _NEW_URL):
        checked.new_urls.extend(new_urls)
    else:
        for row in new_urls:
            cleaned, reasons = _checked(row, _NEW_URL)
            if reasons:
                message = "discovered URL dropped: " + "; ".join(reasons)
                checked.notes.append(Note(cleaned.url, message, dropped=True))
            else:
                checked.new_urls.append(row)
    plain = [o for o in outcomes if not _has_parts(o)]
    pages = [o.page for o in plain if o.page is not None]
    fit = set()
    if _all_fit(plain, _URL) and _all_fit(pages, _PAGE):
        fit = {id(o) for o in plain}
    for outcome in outcomes:
        if id(outcome) in fit:
            checked.outcomes.append(outcome)
            continue
        clean, reasons = _checked_outcome(outcome)
        checked.outcomes.append(clean)
        if reasons:
            message = "values changed to fit the store: " + "; ".join(reasons)
            checked.notes.append(Note(outcome.request.url, message))
    return checked


def _has_parts(outcome: Outcome) -> bool:
    """Whether the outcome carries products or site parsers' output (checked one by one)."""
    return bool(
        outcome.products or outcome.records or outcome.parser_runs or outcome.parse_failures
    )


def _all_fit(records: Sequence[Any], plan: Plan) -> bool:
    """True when no value of ``records`` needs a change; False: check them one by one.

    Column by column: the strings joined are ASCII (or encode to UTF-8) and hold no NUL, the
    longest fits; the integers' min and max are in range; the floats' sum is finite (an
    overflow only sends the batch to the exact check). A numeric column is not checked here.
    """
    if not records:
        return True
    for name, rule in plan:
        kind = type(rule)
        if kind is ColumnRule:
            continue
        values = list(map(operator.attrgetter(name), records))
        if kind is TextRule:
            strings = [v for v in values if type(v) is str]
            if not strings:
                continue
            joined = "".join(strings)
            if "\x00" in joined:
                return False
            if not joined.isascii():
                try:
                    joined.encode()
                except UnicodeEncodeError:
                    return False
            length = cast(TextRule, rule).length
            if length is not None and max(map(len, strings)) > length:
                return False
        elif kind is IntegerRule:
            integers = [v for v in values if type(v) is int]
            integer_rule = cast(IntegerRule, rule)
            if integers and (min(integers) < integer_rule.low or max(integers) > integer_rule.high):
                return False
        elif kind is FloatRule:
            if not math.isfinite(sum(v for v in values if type(v) is float)):
                return False
        elif any(v is not None for v in values):
            return False
    return True


def _checked(record: T, plan: Plan, label: str = "") -> tuple[T, list[str]]:
    changes: dict[str, Any] = {}
    reasons: list[str] = []
    for name, rule in plan:
        value = getattr(record, name)
        if value is None:
            continue
        new, reason = rule.check(value)
        if reason is not None:
            changes[name] = new
            reasons.append(f"{label}{name} {reason}")
    if not changes:
        return record, reasons
    return dataclasses.replace(record, **changes), reasons  # type: ignore[type-var]


def _checked_outcome(outcome: Outcome) -> tuple[Outcome, list[str]]:
    clean, reasons = _checked(outcome, _URL)
    changes: dict[str, Any] = {}
    if outcome.page is not None:
        page, found = _checked(outcome.page, _PAGE, "page ")
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
    for name, plan in (
        ("records", _RECORD),
        ("parser_runs", _RUN),
        ("parse_failures", _FAILURE),
    ):
        items = getattr(outcome, name)
        if not items:
            continue
        found_items = [_checked(item, plan, f"{name}[{i}] ") for i, item in enumerate(items)]
        if any(found for _, found in found_items):
            changes[name] = [item for item, _ in found_items]
            reasons.extend(reason for _, found in found_items for reason in found)
    if changes:
        clean = dataclasses.replace(clean, **changes)
    return clean, reasons


def _checked_product(product: Any, position: int) -> tuple[Any, list[str]]:
    """A product with its values fitted, each change also kept in its own ``errors``."""
    clean, own = _checked(product, _PRODUCT)
    pictures: list[Any] = []
    for i, image in enumerate(getattr(product, "image_details", None) or ()):
        picture, found = _checked(image, _IMAGE, f"image {i} ")
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
