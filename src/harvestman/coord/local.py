"""Coordination inside one process: every concern kept in memory, on an injected clock.

``LocalCoordinator`` is the embedded default. It is not ``shared``, so the crawler leaves its
gate, seen filter, boards and counters alone (the frontier already owns politeness); the robots
cache still offers it what it fetched. Each concern keeps the contract of its Protocol, the
same as Redis's, so a test or a tool can use one in place of the other.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from harvestman.coord.interfaces import (
    BreakerBoard,
    Coordinator,
    CrawlCounters,
    HostGate,
    RobotsShare,
    SeenFilter,
    WorkerBoard,
    WorkerStatus,
)
from harvestman.records import DomainRecord

__all__ = [
    "LocalBreakerBoard",
    "LocalCoordinator",
    "LocalCrawlCounters",
    "LocalHostGate",
    "LocalRobotsShare",
    "LocalSeenFilter",
    "LocalWorkerBoard",
]

Clock = Callable[[], float]


class LocalHostGate(HostGate):
    """Redis's slot rules in a dict: a slot expires after its hold, a release closes the host."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._slots: dict[str, dict[str, float]] = {}  # host -> token -> held until
        self._closed_until: dict[str, float] = {}
        self._tokens = itertools.count()

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        now = self.clock()
        opens = self._closed_until.get(host, 0.0)
        if opens > now:
            return None, opens - now
        self._closed_until.pop(host, None)
        slots = self._slots.setdefault(host, {})
        for token in [token for token, until in slots.items() if until <= now]:
            del slots[token]
        if len(slots) < max(1, concurrency):
            token = f"local:{next(self._tokens)}"
            slots[token] = now + hold
            return token, 0.0
        return None, min(slots.values()) - now

    async def release_host(self, host: str, token: str, delay: float) -> None:
        slots = self._slots.get(host)
        if slots is not None:
            slots.pop(token, None)
            if not slots:
                del self._slots[host]
        if delay > 0:
            self._closed_until[host] = self.clock() + delay


class LocalSeenFilter(SeenFilter):
    """Every hash marked, by namespace, for the life of the process."""

    def __init__(self) -> None:
        self._seen: dict[str, set[str]] = {}

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        seen = self._seen.get(namespace, set())
        return [digest not in seen for digest in hashes]

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        self._seen.setdefault(namespace, set()).update(hashes)


class LocalRobotsShare(RobotsShare):
    """The last ``capacity`` records put, each until its ttl runs out.

    Bounded: the robots cache already keeps every host's rules itself, so this only serves
    another reader in the same process, and the oldest records go first."""

    def __init__(self, clock: Clock = time.monotonic, capacity: int = 1024) -> None:
        self.clock = clock
        self.capacity = capacity
        self._records: dict[str, tuple[DomainRecord, float]] = {}

    async def get_robots(self, host: str) -> DomainRecord | None:
        entry = self._records.get(host)
        if entry is None:
            return None
        record, expires_at = entry
        if expires_at <= self.clock():
            del self._records[host]
            return None
        return replace(record)  # a copy: the caller may change its own

    async def put_robots(self, record: DomainRecord, ttl: float) -> None:
        if ttl <= 0:
            return
        self._records.pop(record.host, None)  # re-inserted last: the newest
        self._records[record.host] = (replace(record), self.clock() + ttl)
        while len(self._records) > self.capacity:
            del self._records[next(iter(self._records))]


class LocalWorkerBoard(WorkerBoard):
    """Each worker's last status until its beat's ttl runs out."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._beats: dict[str, tuple[WorkerStatus, float]] = {}

    async def beat(self, status: WorkerStatus, ttl: float) -> None:
        self._beats[status.worker_id] = (replace(status), self.clock() + ttl)

    async def leave(self, worker_id: str) -> None:
        self._beats.pop(worker_id, None)

    async def workers(self) -> list[WorkerStatus]:
        now = self.clock()
        for worker_id in [w for w, (_, until) in self._beats.items() if until <= now]:
            del self._beats[worker_id]
        return [replace(status) for status, _ in self._beats.values()]


class LocalBreakerBoard(BreakerBoard):
    """Open breakers by host; a closed one (``None``) is forgotten."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        for host, record in changes.items():
            if record is None:
                self._records.pop(host, None)
            else:
                self._records[host] = dict(record)

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        return {host: dict(record) for host, record in self._records.items()}


class LocalCrawlCounters(CrawlCounters):
    """Running totals by namespace."""

    def __init__(self) -> None:
        self._totals: dict[str, Counter[str]] = {}

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        if counters:
            self._totals.setdefault(namespace, Counter()).update(counters)

    async def counters(self, namespace: str) -> dict[str, int]:
        return dict(self._totals.get(namespace, {}))


class LocalCoordinator(Coordinator):
    """One process alone: every concern in memory; the frontier's own clock is the politeness
    gate, so the crawler does not consult this one's (``shared`` is False)."""

    shared = False

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.gate = LocalHostGate(clock)
        self.seen = LocalSeenFilter()
        self.robots = LocalRobotsShare(clock)
        self.board = LocalWorkerBoard(clock)
        self.breakers = LocalBreakerBoard()
        self.totals = LocalCrawlCounters()

    async def acquire_host(
        self, host: str, concurrency: int, hold: float
    ) -> tuple[str | None, float]:
        return await self.gate.acquire_host(host, concurrency, hold)

    async def release_host(self, host: str, token: str, delay: float) -> None:
        await self.gate.release_host(host, token, delay)

    async def unseen(self, namespace: str, hashes: Sequence[str]) -> list[bool]:
        return await self.seen.unseen(namespace, hashes)

    async def mark_seen(self, namespace: str, hashes: Sequence[str]) -> None:
        await self.seen.mark_seen(namespace, hashes)

    async def get_robots(self, host: str) -> DomainRecord | None:
        return await self.robots.get_robots(host)

    async def put_robots(self, record: DomainRecord, ttl: float) -> None:
        await self.robots.put_robots(record, ttl)

    async def beat(self, status: WorkerStatus, ttl: float) -> None:
        await self.board.beat(status, ttl)

    async def leave(self, worker_id: str) -> None:
        await self.board.leave(worker_id)

    async def workers(self) -> list[WorkerStatus]:
        return await self.board.workers()

    async def put_breakers(self, changes: dict[str, dict[str, Any] | None]) -> None:
        await self.breakers.put_breakers(changes)

    async def get_breakers(self) -> dict[str, dict[str, Any]]:
        return await self.breakers.get_breakers()

    async def add_counters(self, namespace: str, counters: dict[str, int]) -> None:
        await self.totals.add_counters(namespace, counters)

    async def counters(self, namespace: str) -> dict[str, int]:
        return await self.totals.counters(namespace)

    async def close(self) -> None:
        return None
