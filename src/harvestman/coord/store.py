"""Coordination through the store alone: many workers on one database and no Redis.

The politeness gate is the ``domains`` row of each host (``busy_until``/``next_allowed_at``,
one request at a time per host): the only concern it shares. The others are "not known" here,
as the ``Coordinator`` contract allows: de-duplication is the store's unique index, liveness
the ``workers`` table, counts the store's rows, and each worker keeps its own breakers. It is
also what ``RedisCoordinator`` falls back to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from harvestman.coord.interfaces import Coordinator, WorkerStatus
from harvestman.records import DomainRecord
from harvestman.store import HostRecords


class StoreCoordinator(Coordinator):
    """The store's host gate; every other concern answers "not known"."""

    shared = True

    def __init__(self, store: HostRecords, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        wait = await self.store.acquire_host(host, self.clock(), hold)
        return ("store" if wait == 0 else None), wait

    async def release_host(self, host: str, token: str, delay: float) -> None:
        await self.store.release_host(host, self.clock(), delay)

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        return [True] * len(hashes)

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        return None

    async def get_robots(self, host: str) -> DomainRecord | None:
        return None  # the robots cache reads the store itself

    async def put_robots(self, record: DomainRecord, ttl: float) -> None:
        return None

    async def beat(self, status: WorkerStatus, ttl: float) -> None:
        return None  # the crawler's heartbeat writes the workers table

    async def leave(self, worker_id: str) -> None:
        return None  # the crawler's own leaving removes its row

    async def workers(self) -> list[WorkerStatus]:
        return []

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        return None  # without Redis each worker keeps its own breakers

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        return {}

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        return None  # the store's own rows are the counts

    async def counters(self, namespace: str) -> dict[str, int]:
        return {}

    async def close(self) -> None:
        return None
