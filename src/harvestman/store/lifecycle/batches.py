"""Bounded batches over a table: primary-key ranges and short write transactions.

Maintenance walks a table in ranges of ids, one short transaction (``store.transaction``) per
range, so a store of any size is never locked for longer than one range's work and a crawl keeps
writing in between::

    >>> list(id_ranges(1, 25, 10))
    [(1, 10), (11, 20), (21, 30)]
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Engine, Table, func, select


def id_ranges(low: int | None, high: int | None, size: int) -> Iterator[tuple[int, int]]:
    """Inclusive ``(first, last)`` id ranges of ``size`` ids covering ``low..high``."""
    if low is None or high is None:
        return
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    start = low
    while start <= high:
        yield start, start + size - 1
        start += size


def table_id_ranges(engine: Engine, table: Table, size: int) -> Iterator[tuple[int, int]]:
    """The id ranges covering every row of ``table`` that exists now.

    Rows inserted later have higher ids and are left out: maintenance concerns old rows only.
    """
    with engine.connect() as conn:
        low, high = conn.execute(select(func.min(table.c.id), func.max(table.c.id))).one()
    yield from id_ranges(low, high, size)
