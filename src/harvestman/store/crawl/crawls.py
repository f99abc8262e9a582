"""Crawl namespaces: created on first use, their seeds accumulated."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from sqlalchemy import exists, select, update

from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import crawls, urls


class CrawlRepository(StoreConnection):
    """The ``crawls`` table: a name, its id and its seeds."""

    async def ensure_crawl(self, name: str, seeds: Sequence[str] = ()) -> int:
        """The id of crawl namespace ``name``, created on first use; seeds accumulate."""

        def _ensure() -> int:
            with self._begin() as conn:
                row = conn.execute(
                    select(crawls.c.id, crawls.c.seeds).where(crawls.c.name == name)
                ).first()
                if row is None:
                    stmt = dialect.insert_ignore(self.engine, crawls, "name").values(
                        name=name, created_at=time.time(), seeds=json.dumps(list(seeds))
                    )
                    conn.execute(stmt)
                    row = conn.execute(
                        select(crawls.c.id, crawls.c.seeds).where(crawls.c.name == name)
                    ).one()
                known = json.loads(row.seeds)
                seen = set(known)  # a set: a seeds file's digest may hold many origins
                merged = known + [seed for seed in dict.fromkeys(seeds) if seed not in seen]
                if merged != known:
                    conn.execute(
                        update(crawls).where(crawls.c.id == row.id).values(seeds=json.dumps(merged))
                    )
                return int(row.id)

        return await self._run(_ensure)

    async def crawl_seeds(self, crawl_id: int) -> list[str]:
        def _seeds() -> list[str]:
            with self.engine.connect() as conn:
                value = conn.execute(select(crawls.c.seeds).where(crawls.c.id == crawl_id)).scalar()
            seeds: list[str] = json.loads(value or "[]")
            return seeds

        return await self._run(_seeds)

    async def set_archive_location(self, crawl_id: int, location: str) -> None:
        """Record where the raw archive keeps the crawl's bodies (the latest start wins)."""

        def _set() -> None:
            with self._begin() as conn:
                conn.execute(
                    update(crawls).where(crawls.c.id == crawl_id).values(archive_location=location)
                )

        await self._run(_set)

    def archive_location(self, crawl_id: int) -> str | None:
        """Where the raw archive keeps the crawl's bodies; None when never recorded."""
        with self.engine.connect() as conn:
            location: str | None = conn.execute(
                select(crawls.c.archive_location).where(crawls.c.id == crawl_id)
            ).scalar()
        return location

    async def find_crawl(self, name: str) -> int | None:
        def _find() -> int | None:
            with self.engine.connect() as conn:
                return conn.execute(select(crawls.c.id).where(crawls.c.name == name)).scalar()

        return await self._run(_find)

    def crawl_ids(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return {
                name: int(cid) for cid, name in conn.execute(select(crawls.c.id, crawls.c.name))
            }

    def crawls_holding_urls(self) -> set[str]:
        """The names of the crawls with at least one frontier row: one indexed probe a crawl
        (``ix_urls_status`` leads with ``crawl_id``), however many rows each holds."""
        holds = exists().where(urls.c.crawl_id == crawls.c.id)
        with self.engine.connect() as conn:
            return set(conn.execute(select(crawls.c.name).where(holds)).scalars())
