"""The store's async doors, one per purpose: what each part of a crawl needs from a store.

``SqlStore`` opens each as a door (``store.frontier``, ``store.outcomes``, …; ``store.doors``)
on SQLite and PostgreSQL; mypy checks that it implements every one. A part asks for the
smallest door it uses, so a twin for a test or another backend implements only that. ``Store``
is the crawler's: its doors by name.

Contract for every method here: it is a coroutine, safe on the event loop (it runs on the
store's own threads and never blocks the loop). What blocks is in ``store.blocking``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from harvestman.records import (
    CrawlCounts,
    CrawlRequest,
    DomainControl,
    DomainRecord,
    NewUrl,
    Outcome,
    ParserRollout,
)


class CrawlRecords(Protocol):
    """Crawl namespaces: the crawler's start and end."""

    async def ensure_crawl(self, name: str, seeds: Sequence[str] = ()) -> int:
        """The id of crawl ``name``, created on first use; seeds accumulate."""
        ...

    async def find_crawl(self, name: str) -> int | None: ...
    async def crawl_seeds(self, crawl_id: int) -> list[str]: ...
    async def set_archive_location(self, crawl_id: int, location: str) -> None: ...
    async def counts(self, crawl_id: int) -> CrawlCounts: ...


class FrontierStore(Protocol):
    """What the frontier leases from: rows leased by one worker are never leased by another
    until released, recovered or expired."""

    async def add_urls(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None: ...
    async def add_seeds(self, crawl_id: int, rows: Sequence[NewUrl], now: float) -> None:
        """``add_urls`` for seed rows without a lastmod, faster (the driver's executemany)."""
        ...

    async def make_expired_due(self, crawl_id: int, now: float, max_depth: int) -> int:
        """Completed rows past their visited TTL (pages within ``max_depth``) pending again."""
        ...

    async def make_known_due(self, crawl_id: int, now: float, max_depth: int) -> int:
        """Every completed or failed row (pages within ``max_depth``) pending again: a forced
        run."""
        ...

    async def give_up_host(
        self,
        crawl_id: int,
        host: str,
        error_class: str,
        error: str,
        now: float,
        next_crawl_at: float,
    ) -> int:
        """Every pending row of ``host`` failed with ``error_class`` (and logged), at once."""
        ...

    async def pending_hosts(self, crawl_id: int) -> dict[str, float]: ...
    async def lease(
        self, crawl_id: int, wanted: dict[str, int], now: float, lease_until: float, worker_id: str
    ) -> tuple[list[CrawlRequest], dict[str, float | None]]:
        """Up to ``wanted[host]`` due rows per host, and when each host that ran dry is due."""
        ...

    async def release(self, worker_id: str, now: float) -> int: ...
    async def recover(self, now: float, dead_workers: Iterable[str] = ()) -> int: ...


class OutcomeWriter(Protocol):
    """What the crawler writes: ``record`` is atomic (a batch is written whole or not at
    all) and answers the outcomes it dead-lettered instead (request id -> the store's
    message); stats are additive (any number of workers may add to the same minute)."""

    async def record(
        self, crawl_id: int, outcomes: Sequence[Outcome], new_urls: Sequence[NewUrl], now: float
    ) -> Mapping[int, str]: ...
    async def add_stats(
        self, crawl_id: int, buckets: Mapping[float, Mapping[str, int]]
    ) -> None: ...


class HostRecords(Protocol):
    """Per-host records: robots.txt, the politeness fallback when Redis is away (one request
    at a time per host across every process on the store), and discovery state."""

    async def get_domain(self, host: str) -> DomainRecord | None: ...
    async def save_robots(self, record: DomainRecord, now: float) -> None: ...
    async def acquire_host(self, host: str, now: float, hold: float) -> float:
        """0.0 when ``host`` is taken for at most ``hold`` seconds, else the seconds to wait."""
        ...

    async def release_host(self, host: str, now: float, delay: float) -> None: ...
    async def discovery_state(self, host: str) -> tuple[dict[str, Any] | None, float | None]: ...
    async def save_discovery_state(
        self,
        now: float,
        rules: dict[str, dict[str, Any]] | None = None,
        archives_run: Sequence[str] = (),
    ) -> None: ...
    async def sample_urls(self, crawl_id: int, host: str, limit: int = 1000) -> list[str]: ...


class SessionStore(Protocol):
    """A crawl's cookies and the proxies' health, saved and loaded whole."""

    async def load_cookies(self, crawl_id: int) -> list[dict[str, Any]]: ...
    async def save_cookies(self, crawl_id: int, rows: Sequence[dict[str, Any]]) -> None: ...
    async def load_proxies(self) -> list[dict[str, Any]]: ...
    async def save_proxies(self, health: Sequence[dict[str, Any]], now: float) -> None: ...


class ControlStore(Protocol):
    """The operators' per-domain settings, read whole (every worker, on a short TTL)."""

    async def domain_controls(self) -> dict[str, DomainControl]: ...


class WorkerRegistry(Protocol):
    """Live workers: a heartbeat extends the worker's leases and says whether it is still
    registered (False: others took it for dead)."""

    async def register_worker(
        self, worker_id: str, hostname: str, pid: int, now: float
    ) -> None: ...
    async def heartbeat(
        self, worker_id: str, now: float, lease_until: float, info: dict[str, Any] | None = None
    ) -> bool: ...
    async def workers(self) -> list[tuple[str, str, int, float]]: ...
    async def worker_rows(self) -> list[dict[str, Any]]: ...
    async def unregister_workers(self, worker_ids: Iterable[str]) -> None: ...


class StoreHealth(Protocol):
    """Whether the database answers, and starting over after it did not."""

    async def ping(self) -> None: ...
    async def check(self) -> None: ...
    async def reconnect(self) -> None: ...


class ParserRollouts(Protocol):
    """Which version of a site parser runs on which share of a domain's pages."""

    async def parser_rollouts(self, parser: str | None = None) -> list[ParserRollout]: ...
    async def set_parser_rollout(self, rollout: ParserRollout) -> None: ...


class Store(Protocol):
    """What the crawler needs from a store, door by door."""

    @property
    def crawls(self) -> CrawlRecords: ...
    @property
    def frontier(self) -> FrontierStore: ...
    @property
    def outcomes(self) -> OutcomeWriter: ...
    @property
    def hosts(self) -> HostRecords: ...
    @property
    def sessions(self) -> SessionStore: ...
    @property
    def registry(self) -> WorkerRegistry: ...
    @property
    def health(self) -> StoreHealth: ...
    @property
    def controls(self) -> ControlStore: ...
    @property
    def rollouts(self) -> ParserRollouts: ...
