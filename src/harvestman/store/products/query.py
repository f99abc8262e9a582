"""The product query: filters, an order and keyset pages over ``products``.

A page is ``WHERE <filters> AND (sort, id) > (:value, :id) ORDER BY sort, id LIMIT n`` (``<``
and DESC when descending): every order is an index ending in ``id`` (migration 0015), so page
10,000 costs what page 1 does. Products without the sorted value (no price, no rating) are not
in a list sorted by it: NULLs sort differently on SQLite and PostgreSQL, and a keyset over them
needs a second range. The cursor key is the last row's sort value and id as one string.

The statement's text depends only on the query's ``Shape`` (which filters, in which form, the
order, a cursor or not): the store builds it once per shape, with named parameters that
``ProductQuery.values`` fills for each query.

>>> key = ProductQuery(sort="price").key_of(Decimal("12.5000"), 7)
>>> key, ProductQuery(sort="price").parse_key(key)
('12.5|7', (Decimal('12.5'), 7))
>>> ProductQuery(sort="changed").parse_key("1800000000.25|3")
(1800000000.25, 3)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, bindparam, literal_column, tuple_
from sqlalchemy import func as sql

from harvestman.store.schema import Id, products

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

    def shape(self, *, paged: bool) -> Shape:
        """What the statement's text depends on: which filters (and their forms), the order,
        and whether a cursor cuts it (``paged``). Queries of one shape share one statement;
        ``values`` fills its parameters."""
        return Shape(tuple(term for term, _ in self._terms()), self.sort, self.descending, paged)

    def values(self, after: tuple[Any, int] | None, limit: int) -> dict[str, Any]:
        """The parameters of this query's statement: its filters', the cursor's (a parsed
        key) and the row count (one more than ``limit``)."""
        found: dict[str, Any] = {"rows": limit + 1}
        for _, term_values in self._terms():
            found.update(term_values)
        if after is not None:
            found["after_value"], found["after_id"] = after
        return found

    def _terms(self) -> Iterator[tuple[Term, dict[str, Any]]]:
        """Each filter given, as its term (see ``_condition``) and its parameters."""
        if self.crawl_id is not None:
            yield ("crawl_id",), {"crawl_id": self.crawl_id}
        if self.min_price is not None:
            yield ("min_price",), {"min_price": self.min_price}
        if self.max_price is not None:
            yield ("max_price",), {"max_price": self.max_price}
        if self.currency:
            yield ("currency",), {"currency": self.currency.upper()}
        if self.availability:
            yield (
                ("availability", len(self.availability)),
                {f"availability_{i}": value for i, value in enumerate(self.availability)},
            )
        for name, value in (("brand", self.brand), ("category", self.category)):
            if value:
                whole = value.lower()
                if len(value) < INDEXED_CHARS:
                    yield (name, False), {name: whole[:INDEXED_CHARS]}
                else:  # the indexed prefix cannot tell: the whole value too
                    yield (name, True), {name: whole[:INDEXED_CHARS], f"{name}_whole": whole}
        if self.min_rating is not None:
            yield ("min_rating",), {"min_rating": self.min_rating}
        if self.domain:
            yield ("domain",), {"domain": domain_of(self.domain)}
        if self.parser:
            if "@" in self.parser:
                yield ("parser",), {"parser": self.parser}
            else:
                yield ("parser_name",), {"parser_name": f"{_escape_like(self.parser)}@%"}
        if self.since is not None:
            yield ("since",), {"since": self.since}

    @property
    def sort_column(self) -> Any:
        return _SORT_COLUMNS[self.sort]

    def key_of(self, value: Any, ident: int) -> str:
        """The cursor key after a row of sort value ``value`` and id ``ident``."""
        text = (
            format(Decimal(value).normalize(), "f") if isinstance(value, Decimal) else repr(value)
        )
        return f"{text}|{ident}"

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


Term = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Shape:
    """A product query's statement text, told apart from others (``ProductQuery.shape``)."""

    terms: tuple[Term, ...]
    sort: str
    descending: bool
    paged: bool

    @property
    def sort_column(self) -> Any:
        return _SORT_COLUMNS[self.sort]

    def page(self, query: Select[Any]) -> Select[Any]:
        """``query`` (over ``products``) filtered, cut past the cursor when ``paged`` and
        ordered, with bound parameters that ``ProductQuery.values`` fills."""
        column, ident = self.sort_column, products.c.id
        query = query.where(*(c for term in self.terms for c in _condition(*term)))
        if self.sort != "changed":
            query = query.where(column.is_not(None))
        if self.paged:
            pair = tuple_(column, ident)
            past = tuple_(
                bindparam("after_value", type_=column.type), bindparam("after_id", type_=Id)
            )
            query = query.where(pair < past if self.descending else pair > past)
        # The row count is written into the statement's text when it runs: psycopg prepares a
        # statement run five times, and PostgreSQL's generic plan of a LIMIT it cannot see
        # expected a tenth of a million rows and hashed the whole frontier table (980 ms).
        rows = bindparam("rows", type_=Integer, literal_execute=True)
        return query.order_by(*self.order(column, ident)).limit(rows)

    def order(self, column: Any, ident: Any) -> tuple[Any, Any]:
        """The ORDER BY of ``column`` (the sort's, or a subquery's copy of it) and ``ident``."""
        if self.descending:
            return column.desc(), ident.desc()
        return column.asc(), ident.asc()


def _condition(name: str, *form: Any) -> list[ColumnElement[bool]]:
    """The conditions of one term of ``ProductQuery._terms``, over its named parameters."""
    c = products.c
    if name in ("brand", "category"):
        (long,) = form
        return _equal_ignoring_case(c[name], name, long=long)
    if name == "availability":
        (count,) = form
        return [c.availability.in_([bindparam(f"availability_{i}") for i in range(count)])]
    simple: dict[str, ColumnElement[bool]] = {
        "crawl_id": c.crawl_id == bindparam("crawl_id"),
        "min_price": c.price >= bindparam("min_price"),
        "max_price": c.price <= bindparam("max_price"),
        "currency": c.currency == bindparam("currency"),
        "min_rating": c.rating >= bindparam("min_rating"),
        "domain": c.domain == bindparam("domain"),
        "parser": c.parser == bindparam("parser"),
        "parser_name": c.parser.like(bindparam("parser_name"), escape="/"),
        "since": c.updated_at >= bindparam("since"),
    }
    return [simple[name]]


def _equal_ignoring_case(column: Any, name: str, *, long: bool) -> list[ColumnElement[bool]]:
    """The indexed prefix; the whole value too only when the prefix cannot tell (a value of
    100 characters or more). A second condition on the column made PostgreSQL take the two
    as independent and expect 50 of a category's 25,000 rows, then sort them all (1.1 s)."""
    # The index's expression with literal bounds: a bound parameter in their place would not
    # match the index on PostgreSQL.
    prefix = sql.lower(sql.substr(column, literal_column("1"), literal_column(str(INDEXED_CHARS))))
    found = [prefix == bindparam(name)]
    if long:
        found.append(sql.lower(column) == bindparam(f"{name}_whole"))
    return found


def _escape_like(text: str) -> str:
    """``text`` matched literally by LIKE ... ESCAPE '/'.

    >>> _escape_like("50%_off/x")
    '50/%/_off//x'
    """
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


def domain_of(host: str) -> str:
    """A host as the domain filter keys it: lower case, without a leading ``www.`` or a
    trailing dot (``www.Example.com`` and ``example.com`` are one domain).

    >>> domain_of("WWW.Shop.example."), domain_of("127.0.0.1:8089")
    ('shop.example', '127.0.0.1:8089')
    """
    return host.strip().lower().rstrip(".").removeprefix("www.")
