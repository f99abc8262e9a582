"""The product query: filters, an order and keyset pages over ``products``.

A page is ``WHERE <filters> AND (sort, id) > (:value, :id) ORDER BY sort, id LIMIT n`` (``<``
and DESC when descending): every order is an index ending in ``id`` (migration 0015), so page
10,000 costs what page 1 does. Products without the sorted value (no price, no rating) are not
in a list sorted by it: NULLs sort differently on SQLite and PostgreSQL, and a keyset over them
needs a second range. The cursor key is the last row's sort value and id as one string.

>>> key = ProductQuery(sort="price").key_of({"price": Decimal("12.5000"), "id": 7})
>>> key, ProductQuery(sort="price").parse_key(key)
('12.5|7', (Decimal('12.5'), 7))
>>> ProductQuery(sort="changed").parse_key("1800000000.25|3")
(1800000000.25, 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import ColumnElement, Select, literal_column, tuple_
from sqlalchemy import func as sql

from harvestman.store.schema import products

SORTS = ("price", "rating", "changed")
_SORT_COLUMNS = {
    "price": products.c.price,
    "rating": products.c.rating,
    "changed": products.c.updated_at,
}
# The length of brand and category the indexes hold (schema.py: ix_products_brand).
INDEXED_CHARS = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class ProductQuery:
    """Which products, in which order. Every filter is optional; ``availability`` is any of."""

    crawl_id: int | None = None
    min_price: Decimal | None = None
    max_price: Decimal | None = None
    currency: str | None = None
    availability: tuple[str, ...] = ()
    brand: str | None = None  # equal, ignoring case
    category: str | None = None  # equal, ignoring case
    min_rating: Decimal | None = None
    domain: str | None = None  # the page's host; example.com also www.example.com
    parser: str | None = None  # name@version, or a name: any of its versions
    since: float | None = None  # changed at or after (epoch seconds)
    sort: str = "changed"
    descending: bool = True

    def conditions(self) -> list[ColumnElement[bool]]:
        c = products.c
        where: list[ColumnElement[bool]] = []
        if self.crawl_id is not None:
            where.append(c.crawl_id == self.crawl_id)
        if self.min_price is not None:
            where.append(c.price >= self.min_price)
        if self.max_price is not None:
            where.append(c.price <= self.max_price)
        if self.currency:
            where.append(c.currency == self.currency.upper())
        if self.availability:
            where.append(c.availability.in_(self.availability))
        if self.brand:
            where.extend(_equal_ignoring_case(c.brand, self.brand))
        if self.category:
            where.extend(_equal_ignoring_case(c.category, self.category))
        if self.min_rating is not None:
            where.append(c.rating >= self.min_rating)
        if self.domain:
            where.append(c.domain == domain_of(self.domain))
        if self.parser:
            if "@" in self.parser:
                where.append(c.parser == self.parser)
            else:
                where.append(c.parser.startswith(f"{self.parser}@", autoescape=True))
        if self.since is not None:
            where.append(c.updated_at >= self.since)
        if self.sort != "changed":
            where.append(self.sort_column.is_not(None))
        return where

    @property
    def sort_column(self) -> Any:
        return _SORT_COLUMNS[self.sort]

    def paged(self, query: Select[Any], after: tuple[Any, int] | None, limit: int) -> Select[Any]:
        """``query`` filtered, cut past ``after`` (a parsed key) and ordered, one row more
        than ``limit``."""
        column, ident = self.sort_column, products.c.id
        query = query.where(*self.conditions())
        if after is not None:
            pair, past = tuple_(column, ident), tuple_(*after)
            query = query.where(pair < past if self.descending else pair > past)
        return query.order_by(*self.order(column, ident)).limit(limit + 1)

    def order(self, column: Any, ident: Any) -> tuple[Any, Any]:
        """The ORDER BY of ``column`` (the sort's, or a subquery's copy of it) and ``ident``."""
        if self.descending:
            return column.desc(), ident.desc()
        return column.asc(), ident.asc()

    def key_of(self, row: Any) -> str:
        """The cursor key after ``row`` (its sort value and id)."""
        value = row[self.sort_column.name]
        text = (
            format(Decimal(value).normalize(), "f") if isinstance(value, Decimal) else repr(value)
        )
        return f"{text}|{row['id']}"

    def parse_key(self, key: str) -> tuple[Any, int]:
        """The sort value and id a key of this query holds; ValueError for any other."""
        value, _, ident = key.rpartition("|")
        try:
            parsed: Any = float(value) if self.sort == "changed" else Decimal(value)
            number = int(ident)
        except (ValueError, InvalidOperation):
            raise ValueError(f"not a cursor key: {key!r}") from None
        if not math.isfinite(parsed) or number < 1:
            raise ValueError(f"not a cursor key: {key!r}")
        return parsed, number


def _equal_on_prefix(column: Any, value: str) -> ColumnElement[bool]:
    # Written as the index's expression with literal bounds: a bound parameter in its place
    # would not match the index on PostgreSQL.
    prefix = sql.lower(sql.substr(column, literal_column("1"), literal_column(str(INDEXED_CHARS))))
    return prefix == value.lower()[:INDEXED_CHARS]


def _equal_ignoring_case(column: Any, value: str) -> Sequence[ColumnElement[bool]]:
    """The indexed prefix; the whole value too only when the prefix cannot tell (a value of
    100 characters or more). A second condition on the column made PostgreSQL take the two
    as independent and expect 50 of a category's 25,000 rows, then sort them all (1.1 s)."""
    found = [_equal_on_prefix(column, value)]
    if len(value) >= INDEXED_CHARS:
        found.append(sql.lower(column) == value.lower())
    return found


def domain_of(host: str) -> str:
    """A host as the domain filter keys it: lower case, without a leading ``www.`` or a
    trailing dot (``www.Example.com`` and ``example.com`` are one domain).

    >>> domain_of("WWW.Shop.example."), domain_of("127.0.0.1:8089")
    ('shop.example', '127.0.0.1:8089')
    """
    return host.strip().lower().rstrip(".").removeprefix("www.")
