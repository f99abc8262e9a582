"""Coordination across crawl processes: who may hit a host now, which URLs are known, who is alive.

``Coordinator`` is the seam. ``LocalCoordinator`` is the embedded default: one process, whose
frontier already owns politeness, so the gates are open and nothing is shared.
``RedisCoordinator`` serves many workers on many machines; when Redis is away it falls back to
the store (PostgreSQL) for politeness and to the store's unique index for de-duplication.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harvestman.records import DomainRecord

__all__ = ["Coordinator", "LocalCoordinator", "WorkerStatus"]


@dataclass(slots=True)
class WorkerStatus:
    """What a worker reports in its heartbeat."""

    worker_id: str
    hostname: str
    pid: int
    crawl: str
    started_at: float
    heartbeat_at: float
    pages: int = 0
    rate: float = 0.0
    current_host: str | None = None
    health: str = "ok"  # the stall watchdog's state


class Coordinator(Protocol):
    """Contract: every method is safe to call from the event loop and never raises for an
    unreachable backend; a coordinator degrades (to the store, or to "not known") and says so
    in the log once. ``shared`` is False when the process is alone (no gates needed)."""

    shared: bool

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        """Take one of ``host``'s ``concurrency`` request slots for at most ``hold`` seconds.

        Returns ``(token, 0.0)`` when taken, ``(None, seconds to wait)`` when the host is busy or
        still inside its delay."""
        ...

    async def release_host(self, host: str, token: str, delay: float) -> None:
        """Give the slot back; the host stays closed to everyone for ``delay`` seconds."""
        ...

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        """For each URL hash, whether it is not yet known (True when unknown or unsure)."""
        ...

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        """Remember hashes after the store has them (never before: a crash would lose them)."""
        ...

    async def get_robots(self, host: str) -> DomainRecord | None: ...

    async def put_robots(self, record: DomainRecord, ttl: float) -> None: ...

    async def beat(self, status: WorkerStatus, ttl: float) -> None: ...

    async def workers(self) -> list[WorkerStatus]: ...

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        """Publish circuit-breaker records by host (None: the breaker closed)."""
        ...

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        """Add to the crawl's shared counters (pages, failures, new URLs, ...)."""
        ...

    async def counters(self, namespace: str) -> dict[str, int]: ...

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        """Every breaker record another worker published and has not closed."""
        ...

    async def close(self) -> None: ...


class LocalCoordinator:
    """One process alone: the frontier's own clock is the politeness gate."""

    shared = False

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        return "local", 0.0

    async def release_host(self, host: str, token: str, delay: float) -> None:
        return None

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        return [True] * len(hashes)

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        return None

    async def get_robots(self, host: str) -> DomainRecord | None:
        return None

    async def put_robots(self, record: DomainRecord, ttl: float) -> None:
        return None

    async def beat(self, status: WorkerStatus, ttl: float) -> None:
        return None

    async def workers(self) -> list[WorkerStatus]:
        return []

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        return None

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        return {}

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        return None

    async def counters(self, namespace: str) -> dict[str, int]:
        return {}

    async def close(self) -> None:
        return None
