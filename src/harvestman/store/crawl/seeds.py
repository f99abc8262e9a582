"""Seeds in bulk: a seeds file's chunks into the frontier at the driver's own speed.

The same rows and rules as ``add_urls`` for URLs without a lastmod (ON CONFLICT DO NOTHING
on the URL hash, a known completed URL due again back to pending, PostgreSQL's rows in hash
order), but the INSERT is compiled once per chunk and its rows go to the driver's
``executemany`` as plain tuples: SQLAlchemy's per-row parameter processing cost about as
much as SQLite's insert itself (measured by bench/seeds_bench.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection

from harvestman.records import NewUrl
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.crawl.frontier import make_known_due, pending_row
from harvestman.store.schema import urls


def insert_seeds(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
    """Add seed rows (no lastmod) in the caller's transaction; known ones stay as they are
    unless due for re-crawl."""
    if not rows:
        return
    if not dialect.is_sqlite(conn.engine):  # the lock order of insert_urls
        rows = sorted(rows, key=lambda row: row.url_hash)
    statement = dialect.insert_ignore(conn.engine, urls, "crawl_id", "url_hash")
    columns = list(pending_row(crawl_id, rows[0], now, None))
    compiled = statement.compile(dialect=conn.dialect, column_keys=columns)
    params: list[Any]
    if compiled.positiontup is not None:  # SQLite's qmark: the values in the statement's order
        # Each row's dict is dropped as soon as its tuple is made: one chunk's dicts would
        # be ~6 MB more at the peak.
        in_order = itemgetter(*compiled.positiontup)
        params = [in_order(pending_row(crawl_id, row, now, None)) for row in rows]
    else:  # PostgreSQL's named parameters take the dicts as they are
        params = [pending_row(crawl_id, row, now, None) for row in rows]
    conn.exec_driver_sql(str(compiled), params)
    make_known_due(conn, crawl_id, [row.url_hash for row in rows], now)


class SeedRepository(StoreConnection):
    """Seeds added in bulk (``harvestman crawl/seed --seeds-file``)."""

    async def add_seeds(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        """Add seed rows to the frontier: ``add_urls`` for rows without a lastmod, faster."""

        def _add() -> None:
            with self._begin() as conn:
                insert_seeds(conn, crawl_id, rows, now)

        await self._run(_add)
