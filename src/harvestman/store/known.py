"""Which of some URLs a crawl's frontier already holds (``POST /api/frontier/add`` reports the
new ones only)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, select

from harvestman.store.schema import urls

_CHUNK = 500  # hashes per IN list: well under SQLite's bound-parameter limit


def known_hashes(engine: Engine, crawl_id: int, hashes: Sequence[str]) -> set[str]:
    """The ``hashes`` already in the crawl's ``urls`` table."""
    found: set[str] = set()
    with engine.connect() as conn, conn.begin():
        for start in range(0, len(hashes), _CHUNK):
            chunk = list(hashes[start : start + _CHUNK])
            found.update(
                conn.execute(
                    select(urls.c.url_hash).where(
                        urls.c.crawl_id == crawl_id, urls.c.url_hash.in_(chunk)
                    )
                ).scalars()
            )
    return found
