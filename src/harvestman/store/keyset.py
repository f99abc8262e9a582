"""Keyset pagination: pages of a query ordered by one unique column.

A page after a key reads ``WHERE key > :after ORDER BY key LIMIT n`` (``<`` when descending):
with an index whose trailing column is the key, that costs the same on page 1 and page 10,000,
where ``OFFSET`` reads and throws away every skipped row. ``offset`` stays for small skips.
One more row than asked is read, so a page knows whether another follows without a count.

``prefix`` names the columns the query holds equal (``crawl_id = :c AND host = :h``) and
leads the ORDER BY with them: the order is the same, but only the index that starts with them
and ends in the key can serve it. Without that, PostgreSQL may walk the primary key and filter
when it guesses matching rows are common; if they are all old, that walk reads the whole table.

>>> keys = Keyset(crawled_pages.c.id, descending=True)  # doctest: +SKIP
>>> rows, after = keys.page(conn, select(crawled_pages), after=None, limit=50)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, ColumnElement, Connection, Select, func, select
from sqlalchemy.engine import RowMapping

Key = int | str


@dataclass(frozen=True, slots=True)
class Keyset:
    """Pages ordered by ``key`` (a unique, non-null column of the selected table)."""

    key: Column[Any]
    descending: bool = False

    def paged(
        self,
        query: Select[Any],
        *,
        after: Key | None = None,
        limit: int = 50,
        offset: int = 0,
        prefix: Sequence[Column[Any]] = (),
    ) -> Select[Any]:
        """``query`` cut to the page past ``after``, with one row more than ``limit``."""
        if after is not None:
            query = query.where(self.key < after if self.descending else self.key > after)
        order = [c.desc() if self.descending else c.asc() for c in (*prefix, self.key)]
        return query.order_by(*order).limit(limit + 1).offset(offset)

    def page(
        self,
        conn: Connection,
        query: Select[Any],
        *,
        after: Key | None = None,
        limit: int = 50,
        offset: int = 0,
        prefix: Sequence[Column[Any]] = (),
    ) -> tuple[list[RowMapping], Key | None]:
        """Up to ``limit`` rows past ``after`` (then ``offset`` skipped), and the key to pass
        as ``after`` for the next page (None at the end)."""
        paged = self.paged(query, after=after, limit=limit, offset=offset, prefix=prefix)
        found = list(conn.execute(paged).mappings())
        if len(found) <= limit:
            return found, None
        found = found[:limit]
        return found, found[-1][self.key.name]


def count(conn: Connection, table: Any, conditions: list[ColumnElement[bool]]) -> int:
    """Rows of ``table`` matching ``conditions`` (exact; the API caches it)."""
    return int(
        conn.execute(select(func.count()).select_from(table).where(*conditions)).scalar_one()
    )
