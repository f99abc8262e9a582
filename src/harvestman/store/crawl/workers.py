"""Workers: registration, heartbeats (which extend their leases) and their removal."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select, update

from harvestman.records import UrlStatus
from harvestman.store import dialect
from harvestman.store.connection import StoreConnection
from harvestman.store.schema import urls, workers
from harvestman.store.transaction import locked_ids


class WorkerRepository(StoreConnection):
    """The ``workers`` table; a heartbeat also extends the worker's leases."""

    async def register_worker(self, worker_id: str, hostname: str, pid: int, now: float) -> None:
        def _register() -> None:
            with self._begin() as conn:
                conn.execute(
                    dialect.insert_ignore(self.engine, workers, "id").values(
                        id=worker_id, hostname=hostname, pid=pid, started_at=now, heartbeat_at=now
                    )
                )

        await self._run(_register)

    async def heartbeat(
        self, worker_id: str, now: float, lease_until: float, info: dict[str, Any] | None = None
    ) -> bool:
        """Mark the worker alive, note its status and extend the leases it holds.

        Returns False when the worker was no longer registered (others took it for dead).
        """

        def _beat() -> bool:
            with self._begin() as conn:
                known = conn.execute(
                    update(workers)
                    .where(workers.c.id == worker_id)
                    .values(heartbeat_at=now, info=json.dumps(info) if info else None)
                ).rowcount
                conn.execute(
                    update(urls)
                    .where(
                        locked_ids(
                            urls.c.status == UrlStatus.IN_PROGRESS.value,
                            urls.c.leased_by == worker_id,
                        )
                    )
                    .values(lease_until=lease_until)
                )
                return bool(known)

        return await self._run(_beat)

    async def workers(self) -> list[tuple[str, str, int, float]]:
        """Registered workers: (id, hostname, pid, heartbeat_at)."""
        return [
            (w["id"], w["hostname"], w["pid"], w["heartbeat_at"]) for w in await self.worker_rows()
        ]

    async def worker_rows(self) -> list[dict[str, Any]]:
        """Registered workers with their last reported status (``info``, a dict or None)."""

        def _rows() -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                rows = conn.execute(select(workers).order_by(workers.c.started_at)).mappings()
                return [
                    {**row, "info": json.loads(row["info"]) if row["info"] else None}
                    for row in rows
                ]

        return await self._run(_rows)

    async def unregister_workers(self, worker_ids: Iterable[str]) -> None:
        ids = list(worker_ids)

        def _unregister() -> None:
            with self._begin() as conn:
                conn.execute(workers.delete().where(workers.c.id.in_(ids)))

        if ids:
            await self._run(_unregister)
