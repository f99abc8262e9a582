"""Per-domain settings an operator sets (``domain_settings``): read whole by every worker on a
short TTL, read and written one host at a time by the API."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import select

from harvestman.records import DomainControl
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import domain_settings

_FIELDS = ("paused", "crawl_delay", "concurrency", "recrawl_interval", "priority")


def _control(row: Any) -> DomainControl:
    return DomainControl(
        host=row.host,
        paused=bool(row.paused),
        crawl_delay=row.crawl_delay,
        concurrency=row.concurrency,
        recrawl_interval=row.recrawl_interval,
        priority=int(row.priority),
    )


class ControlRepository(StoreConnection):
    """The ``domain_settings`` table."""

    async def domain_controls(self) -> dict[str, DomainControl]:
        """Every host's settings (a few rows: only hosts an operator touched)."""

        def _read() -> dict[str, DomainControl]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(domain_settings))
                return {row.host: _control(row) for row in rows}

        return await self._run(_read)

    def domain_control(self, host: str) -> DomainControl | None:
        """One host's settings (synchronous: the API runs it off the event loop)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(domain_settings).where(domain_settings.c.host == host)
            ).first()
            return None if row is None else _control(row)

    def put_domain_control(self, control: DomainControl, now: float) -> DomainControl:
        """Create or replace one host's settings; returns them as stored."""
        values = {name: value for name, value in asdict(control).items() if name in _FIELDS}
        stmt = dialect.insert(self.engine, domain_settings)
        stmt = stmt.on_conflict_do_update(
            index_elements=["host"],
            set_={**{name: stmt.excluded[name] for name in _FIELDS}, "updated_at": now},
        )
        with self._begin() as conn:
            conn.execute(stmt, [{"host": control.host, "updated_at": now, **values}])
        found = self.domain_control(control.host)
        assert found is not None
        return found
