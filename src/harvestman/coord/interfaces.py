"""What crawl processes share, as one small Protocol per concern, named for what it holds.

A caller asks for the concern it uses: the robots cache a ``RobotsShare``, the crawler's lease
loop a ``HostGate``. ``Coordinator`` is their union, for the caller that holds all of them.
Each concern has a local implementation (``harvestman.coord.local``: one process, in memory)
and a shared one (``RedisCoordinator``; ``StoreCoordinator`` for the host gate), and
``tests/test_coord.py`` runs one contract against each.

Every method is safe to call from the event loop and never raises for an unreachable backend:
a shared implementation degrades (to the store, or to "not known") and says so in the log once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harvestman.records import DomainRecord

__all__ = [
    "BreakerBoard",
    "Coordinator",
    "CrawlCounters",
    "HostGate",
    "RobotsShare",
    "SeenFilter",
    "WorkerBoard",
    "WorkerStatus",
]


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


class HostGate(Protocol):
    """Politeness across processes: at most ``concurrency`` requests to a host at once, and a
    pause of the host's delay after each.

    Contract: a slot taken is held until released or for ``hold`` seconds (a crashed holder
    cannot close a host for good); a release with ``delay`` closes the host to everyone for
    ``delay`` seconds. The store's gate allows one request at a time whatever ``concurrency``.
    """

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


class SeenFilter(Protocol):
    """URL hashes known to any process of a crawl (``namespace``), to skip what others queued.

    Contract: once ``mark_seen(ns, [h])`` has returned, ``unseen(ns, [h])`` is ``[False]``
    while the backend is reachable; a hash never marked, or any hash when the backend is away,
    is ``True`` (unsure means unseen: the store's unique index still de-duplicates)."""

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        """For each URL hash, whether it is not yet known (True when unknown or unsure)."""
        ...

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        """Remember hashes after the store has them (never before: a crash would lose them)."""
        ...


class RobotsShare(Protocol):
    """robots.txt records fetched by one process, offered to the others for ``ttl`` seconds.

    Contract: ``get_robots`` returns what the last ``put_robots`` for the host stored until its
    ``ttl`` runs out, then ``None``; a ``ttl`` of 0 or less stores nothing."""

    async def get_robots(self, host: str) -> DomainRecord | None: ...

    async def put_robots(self, record: DomainRecord, ttl: float) -> None: ...


class WorkerBoard(Protocol):
    """Who is alive: each worker's last heartbeat, kept for ``ttl`` seconds.

    Contract: ``workers`` lists the last status of every worker whose beat has not expired and
    that has not left, in no particular order."""

    async def beat(self, status: WorkerStatus, ttl: float) -> None: ...

    async def leave(self, worker_id: str) -> None:
        """The worker stopped: it is listed no more (a job's run that ended had stayed on the
        dashboard, with its host and pages/s, until its beat expired)."""
        ...

    async def workers(self) -> list[WorkerStatus]: ...


class BreakerBoard(Protocol):
    """Circuit breakers one worker opened, for the others to adopt.

    Contract: ``get_breakers`` returns the last record put for each host whose breaker has not
    been closed (put as ``None``)."""

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        """Publish circuit-breaker records by host (None: the breaker closed)."""
        ...

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        """Every breaker record another worker published and has not closed."""
        ...


class CrawlCounters(Protocol):
    """A crawl's running totals (pages, failures, new URLs, ...) summed over its workers.

    Contract: ``counters(ns)`` is the sum of every ``add_counters(ns, ...)``; a namespace never
    added to is ``{}``."""

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        """Add to the crawl's shared counters (pages, failures, new URLs, ...)."""
        ...

    async def counters(self, namespace: str) -> dict[str, int]: ...


class Coordinator(
    HostGate, SeenFilter, RobotsShare, WorkerBoard, BreakerBoard, CrawlCounters, Protocol
):
    """Every concern at once, for the crawler that uses them all. ``shared`` is False when the
    process is alone: its frontier is then the politeness gate and nothing needs sharing."""

    shared: bool

    async def close(self) -> None: ...
