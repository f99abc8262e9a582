"""Host records: robots.txt, the politeness fallback (when Redis is away) and discovery state."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update

from harvestman.records import DomainRecord
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import domains, urls
from harvestman.store.values import fit_domain


class HostRepository(StoreConnection):
    """The ``domains`` table, one row per host."""

    async def get_domain(self, host: str) -> DomainRecord | None:
        def _get() -> DomainRecord | None:
            with self.engine.connect() as conn:
                row = conn.execute(select(domains).where(domains.c.host == host)).first()
            if row is None:
                return None
            return DomainRecord(
                host=row.host,
                robots_txt=row.robots_txt,
                robots_status=row.robots_status,
                robots_fetched_at=row.robots_fetched_at,
                crawl_delay=row.crawl_delay,
                allowed=bool(row.allowed),
                page_count=int(row.page_count),
            )

        return await self._run(_get)

    async def save_robots(self, record: DomainRecord, now: float) -> None:
        """Store a host's robots.txt (creating the domain row on first sight)."""
        record = fit_domain(record)

        def _save() -> None:
            values = {
                "robots_txt": record.robots_txt,
                "robots_status": record.robots_status,
                "robots_fetched_at": record.robots_fetched_at,
                "crawl_delay": record.crawl_delay,
                "allowed": record.allowed,
                "updated_at": now,
            }
            stmt = dialect.insert(self.engine, domains).values(
                host=record.host, page_count=0, **values
            )
            stmt = stmt.on_conflict_do_update(index_elements=["host"], set_=values)
            with self._begin() as conn:
                conn.execute(stmt)

        await self._run(_save)

    # -- politeness fallback (when Redis is away) --------------------------------------------

    async def acquire_host(self, host: str, now: float, hold: float) -> float:
        """Take ``host`` for one request of at most ``hold`` seconds: 0.0 when taken, else the
        seconds to wait. One request at a time per host, across every process on this store."""

        def _acquire() -> float:
            with self._begin() as conn:
                conn.execute(
                    dialect.insert_ignore(self.engine, domains, "host").values(
                        host=host, allowed=True, page_count=0, updated_at=now
                    )
                )
                taken = conn.execute(
                    update(domains)
                    .where(
                        domains.c.host == host,
                        func.coalesce(domains.c.busy_until, 0.0) <= now,
                        func.coalesce(domains.c.next_allowed_at, 0.0) <= now,
                    )
                    .values(busy_until=now + hold)
                ).rowcount
                if taken:
                    return 0.0
                busy, allowed = conn.execute(
                    select(domains.c.busy_until, domains.c.next_allowed_at).where(
                        domains.c.host == host
                    )
                ).one()
            if allowed is not None and allowed > now:
                return float(allowed) - now
            return min(0.25, max(0.01, float(busy or now) - now))

        return await self._run(_acquire)

    async def release_host(self, host: str, now: float, delay: float) -> None:
        def _release() -> None:
            with self._begin() as conn:
                conn.execute(
                    update(domains)
                    .where(domains.c.host == host)
                    .values(busy_until=None, next_allowed_at=now + delay)
                )

        await self._run(_release)

    # -- discovery state per host -----------------------------------------------------------

    async def discovery_state(self, host: str) -> tuple[dict[str, Any] | None, float | None]:
        """A host's learnt pagination rules and when archive discovery last ran there."""

        def _get() -> tuple[dict[str, Any] | None, float | None]:
            with self.engine.connect() as conn:
                row = conn.execute(
                    select(domains.c.pagination_rules, domains.c.archives_run_at).where(
                        domains.c.host == host
                    )
                ).first()
            if row is None:
                return None, None
            return (json.loads(row[0]) if row[0] else None), row[1]

        return await self._run(_get)

    async def save_discovery_state(
        self,
        now: float,
        rules: dict[str, dict[str, Any]] | None = None,
        archives_run: Sequence[str] = (),
    ) -> None:
        """Store pagination rules per host and mark archive discovery done for hosts."""

        def _save() -> None:
            with self._begin() as conn:
                for host in {*(rules or {}), *archives_run}:
                    conn.execute(
                        dialect.insert_ignore(self.engine, domains, "host").values(
                            host=host, allowed=True, page_count=0, updated_at=now
                        )
                    )
                for host, host_rules in (rules or {}).items():
                    conn.execute(
                        update(domains)
                        .where(domains.c.host == host)
                        .values(pagination_rules=json.dumps(host_rules), updated_at=now)
                    )
                for host in archives_run:
                    conn.execute(
                        update(domains).where(domains.c.host == host).values(archives_run_at=now)
                    )

        await self._run(_save)

    async def sample_urls(self, crawl_id: int, host: str, limit: int = 1000) -> list[str]:
        """Up to ``limit`` known URLs of a host, newest first (archive discovery learns dates)."""

        def _sample() -> list[str]:
            with self.engine.connect() as conn:
                return list(
                    conn.execute(
                        select(urls.c.url)
                        .where(urls.c.crawl_id == crawl_id, urls.c.host == host)
                        .order_by(urls.c.id.desc())
                        .limit(limit)
                    ).scalars()
                )

        return await self._run(_sample)

    def robots_records(self) -> list[DomainRecord]:
        """Every host whose robots.txt is stored."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(domains).where(domains.c.robots_fetched_at.is_not(None))
            ).mappings()
            return [
                DomainRecord(
                    host=r["host"],
                    robots_txt=r["robots_txt"],
                    robots_status=r["robots_status"],
                    robots_fetched_at=r["robots_fetched_at"],
                    crawl_delay=r["crawl_delay"],
                    allowed=bool(r["allowed"]),
                    page_count=int(r["page_count"]),
                )
                for r in rows
            ]
