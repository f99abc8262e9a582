"""robots.txt per host: fetched once, cached in memory and in the store with a TTL.

RFC 9309 §2.3.1: a 2xx body is parsed; 4xx (but 429) means no restrictions; 5xx, 429 or a
network error means "disallow everything for now" — the host's URLs wait and the file is asked
for again with backoff; when the retries are spent the host's URLs are blocked with that reason.
At most ``max_bytes`` (500 KiB) are read; redirects are followed by the fetcher, each hop
checked by ``check_hop`` (the crawl's scope) and by the fetcher's network guard. The fetcher is
the one the crawl's pages go through (``wiring.page_fetcher``): through the proxies when there
are any, so a host sees robots.txt asked for by the same way out as its pages.

Five redirect hops are followed, whatever the crawl's ``fetch_max_redirects``: RFC 9309 §2.3.1.2
asks for at least five, and Google follows five and then treats robots.txt as unavailable in the
4xx sense. A sixth hop (``TooManyRedirects``), or a loop (``RedirectLoop``, a chain that would go
on forever), therefore means no restrictions; the entry's ``error`` names it.

A redirect that is refused (out of scope, or to an address the guard refuses) is treated as
RFC 9309 §2.3.1.2 treats a redirect chain that cannot be followed: robots.txt is unavailable
in the 4xx sense, so the host has no restrictions, and nothing of the refused target is read
or stored (the record keeps no text and no status; ``error`` names the refusal). It is not the
5xx sense: a site that redirects its robots.txt elsewhere does so every time, and retrying
would only block its pages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from harvestman.coord import Coordinator, LocalCoordinator
from harvestman.crawl.fetch import FetchResult, RetryPolicy, parse_retry_after
from harvestman.errors import (
    AddressRefused,
    FetchError,
    RedirectLoop,
    RedirectRefused,
    TooManyRedirects,
)
from harvestman.records import DomainRecord
from harvestman.robots import RobotsRules, parse_robots
from harvestman.store import HostRecords
from harvestman.urls import robots_url

ROBOTS_MAX_REDIRECTS = 5
"""Redirect hops followed for robots.txt (RFC 9309 §2.3.1.2; Google follows five)."""


class RobotsFetcher(Protocol):
    """What robots.txt is fetched through: the crawl's ``PageFetcher`` (crawl/fetching.py), or
    the plain ``Fetcher``. Declared here: fetching.py's redirect check reads this cache."""

    async def fetch(
        self,
        url: str,
        *,
        check_hop: Callable[[str], Awaitable[None]] | None = None,
        max_bytes: int | None = None,
        truncate: bool = False,
        max_redirects: int | None = None,
    ) -> FetchResult: ...


@dataclass(slots=True)
class RobotsEntry:
    """What is known of one host's robots.txt."""

    rules: RobotsRules
    expires_at: float
    status: int | None  # HTTP status of the robots.txt response; None for a network error
    text: str | None = None  # the file as read (None: no file, e.g. a 404)
    crawl_delay: float | None = None
    unavailable: bool = False  # 5xx/429/network: everything is disallowed for now
    failures: int = 0  # consecutive unavailable answers
    error: str | None = None

    @property
    def exhausted(self) -> bool:
        """Unavailable and out of retries: the host's URLs are blocked."""
        return self.unavailable and self.expires_at == float("inf")


class RobotsCache:
    """robots.txt rules per host for one user agent."""

    def __init__(
        self,
        store: HostRecords,
        fetcher: RobotsFetcher,
        *,
        user_agent: str,
        ttl: float = 3600.0,
        max_bytes: int = 500 * 1024,
        retry: RetryPolicy | None = None,
        coordinator: Coordinator | None = None,
        clock: Callable[[], float] = time.time,
        check_hop: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.store = store
        self.check_hop = check_hop
        self.coordinator = coordinator or LocalCoordinator()
        self.fetcher = fetcher
        self.user_agent = user_agent
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.fetches = 0
        self._entries: dict[str, RobotsEntry] = {}
        self._inflight: dict[str, asyncio.Future[RobotsEntry]] = {}

    def cached(self, host: str) -> RobotsEntry | None:
        """The entry for ``host`` if it is known and fresh (no I/O)."""
        entry = self._entries.get(host)
        if entry is not None and entry.expires_at > self.clock():
            return entry
        return None

    async def get(self, host: str, origin_url: str) -> tuple[RobotsEntry, bool]:
        """The rules for ``host`` and whether this call requested robots.txt from the host.

        ``origin_url`` is any URL of the host (its scheme and port locate robots.txt).
        Concurrent callers for one host share one fetch.
        """
        entry = self.cached(host)
        if entry is not None:
            return entry, False
        pending = self._inflight.get(host)
        if pending is not None:
            return await asyncio.shield(pending), False
        future: asyncio.Future[RobotsEntry] = asyncio.get_running_loop().create_future()
        self._inflight[host] = future
        try:
            entry, fetched = await self._load(host, origin_url)
            self._entries[host] = entry
            future.set_result(entry)
            return entry, fetched
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody logs "never retrieved"
            raise
        finally:
            del self._inflight[host]

    async def _load(self, host: str, origin_url: str) -> tuple[RobotsEntry, bool]:
        now = self.clock()
        previous = self._entries.get(host)
        if previous is None:  # a fresh shared copy (Redis, then the store) spares the host
            record = await self.coordinator.get_robots(host) or await self.store.get_domain(host)
            if (
                record is not None
                and record.robots_fetched_at is not None
                and record.robots_fetched_at + self.ttl > now
            ):
                return self._entry_from_record(record, origin_url), False
        entry = await self._fetch(origin_url, now, previous)
        if not entry.unavailable:
            record = DomainRecord(
                host=host,
                robots_txt=entry.text,
                robots_status=entry.status,
                robots_fetched_at=now,
                crawl_delay=entry.crawl_delay,
                allowed=entry.rules.is_allowed(robots_root(origin_url), self.user_agent),
            )
            await self.store.save_robots(record, now)  # the durable copy
            await self.coordinator.put_robots(record, self.ttl)
        return entry, True

    async def _fetch(
        self, origin_url: str, now: float, previous: RobotsEntry | None
    ) -> RobotsEntry:
        url = robots_url(origin_url)
        self.fetches += 1
        retry_after: float | None = None
        try:
            result = await self.fetcher.fetch(
                url,
                max_bytes=self.max_bytes,
                truncate=True,
                check_hop=self.check_hop,
                max_redirects=ROBOTS_MAX_REDIRECTS,
            )
        except (RedirectRefused, AddressRefused, TooManyRedirects, RedirectLoop) as exc:
            error = f"{type(exc).__name__}: {exc}"
            return RobotsEntry(RobotsRules.allow_all(), now + self.ttl, None, error=error)
        except FetchError as exc:
            status, error = None, f"{type(exc).__name__}: {exc}"
        else:
            status, error = result.status, f"HTTP {result.status}"
            if 200 <= result.status < 300:
                text = result.body.decode("utf-8", errors="replace").removeprefix("\ufeff")
                rules = parse_robots(text, url)
                return RobotsEntry(
                    rules,
                    now + self.ttl,
                    status,
                    text=text,
                    crawl_delay=rules.crawl_delay(self.user_agent),
                )
            if 400 <= result.status < 500 and result.status != 429:
                return RobotsEntry(RobotsRules.allow_all(), now + self.ttl, status)
            retry_after = parse_retry_after(result.headers.get("Retry-After"))
        failures = (previous.failures if previous and previous.unavailable else 0) + 1
        wait = self.retry.delay(failures, retry_after)
        expires = float("inf") if wait is None else now + wait
        return RobotsEntry(
            RobotsRules.disallow_all(),
            expires,
            status,
            unavailable=True,
            failures=failures,
            error=error,
        )

    def _entry_from_record(self, record: DomainRecord, origin_url: str) -> RobotsEntry:
        assert record.robots_fetched_at is not None
        if record.robots_txt is None:
            rules = RobotsRules.allow_all()
        else:
            rules = parse_robots(record.robots_txt, robots_url(origin_url))
        return RobotsEntry(
            rules,
            record.robots_fetched_at + self.ttl,
            record.robots_status,
            text=record.robots_txt,
            crawl_delay=record.crawl_delay,
        )


def robots_root(url: str) -> str:
    """The root URL ("scheme://host/") of ``url``'s site."""
    return robots_url(url).removesuffix("robots.txt")
