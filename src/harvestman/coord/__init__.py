"""Coordination across crawl processes: who may hit a host now, which URLs are known, who is alive.

One small Protocol per concern (``harvestman.coord.interfaces``): the shared host gate
(``HostGate``), the seen filter (``SeenFilter``), robots sharing (``RobotsShare``), the worker
board (``WorkerBoard``), the breaker board (``BreakerBoard``) and the crawl's counters
(``CrawlCounters``); ``Coordinator`` is their union. ``LocalCoordinator`` is the embedded
default: one process, everything in memory, not shared. ``RedisCoordinator`` serves many
workers on many machines; when Redis is away it falls back to the store (PostgreSQL) for
politeness and to the store's unique index for de-duplication. ``StoreCoordinator`` is that
fallback alone: the store's host gate, and nothing else shared.
"""

from __future__ import annotations

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
from harvestman.coord.local import LocalCoordinator

__all__ = [
    "BreakerBoard",
    "Coordinator",
    "CrawlCounters",
    "HostGate",
    "LocalCoordinator",
    "RobotsShare",
    "SeenFilter",
    "WorkerBoard",
    "WorkerStatus",
]
