"""Seeds in bulk: a seeds file's chunks into the frontier at the driver's own speed.

The same rows and rules as ``add_urls`` for URLs without a lastmod (``insert_links``: known
URLs looked up and left alone unless completed and due again, the others inserted by one
statement compiled once per chunk, PostgreSQL's rows in hash order).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from harvestman.records import NewUrl
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.crawl.frontier import insert_links


def insert_seeds(conn: Connection, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
    """Add seed rows (no lastmod) in the caller's transaction; known ones stay as they are
    unless due for re-crawl."""
    if not rows:
        return
    if not dialect.is_sqlite(conn.engine):  # the lock order of insert_urls
        rows = sorted(rows, key=lambda row: row.url_hash)
    insert_links(conn, crawl_id, rows, now)


class SeedRepository(StoreConnection):
    """Seeds added in bulk (``harvestman crawl/seed --seeds-file``)."""

    async def add_seeds(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        """Add seed rows to the frontier: ``add_urls`` for rows without a lastmod, faster."""

        def _add() -> None:
            with self._begin() as conn:
                insert_seeds(conn, crawl_id, rows, now)

        await self._run(_add)
