"""How the crawl fetches: the plain fetcher or proxies behind the same ``fetch()``, and the
check every redirect hop passes (scope and robots.txt, in this one place)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from harvestman.crawl.fetch import Fetcher, FetchResult
from harvestman.crawl.robots_cache import RobotsCache
from harvestman.errors import NetworkError, RedirectRefused
from harvestman.proxies import DomainProxyLimiter, ProxyPool
from harvestman.stats import Stats
from harvestman.urls import Scope, host_key

HopCheck = Callable[[str], Awaitable[None]]


class PageFetcher(Protocol):
    """What the crawl fetches through: :meth:`harvestman.crawl.fetch.Fetcher.fetch`'s contract."""

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        max_bytes: int | None = None,
        truncate: bool = False,
        max_redirects: int | None = None,
    ) -> FetchResult: ...


class ProxiedFetcher:
    """Fetches through the proxies: a proxy that fails is recorded and the request goes
    through the next one (each proxy once); ``NetworkError`` when none is left."""

    def __init__(
        self,
        fetcher: Fetcher,
        pool: ProxyPool,
        limiter: DomainProxyLimiter,
        stats: Stats,
        clock: Callable[[], float],
    ) -> None:
        self.fetcher = fetcher
        self.pool = pool
        self.limiter = limiter
        self.stats = stats
        self.clock = clock

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        max_bytes: int | None = None,
        truncate: bool = False,
        max_redirects: int | None = None,
    ) -> FetchResult:
        tried: list[str] = []
        host = host_key(url)
        while True:
            proxy = self.pool.next(exclude=tried)
            if proxy is None:
                raise NetworkError("no proxy available (all are failing)", url)
            tried.append(proxy)
            await self.limiter.acquire(host, proxy)
            started = self.clock()
            try:
                result = await self.fetcher.fetch(
                    url,
                    headers=headers,
                    check_hop=check_hop,
                    max_bytes=max_bytes,
                    truncate=truncate,
                    max_redirects=max_redirects,
                    proxy=proxy,
                )
            except NetworkError:
                self.pool.record(proxy, success=False, elapsed=self.clock() - started)
                self.stats.inc("proxy/failure")
                if len(tried) >= len(self.pool):
                    raise
                continue
            self.pool.record(proxy, success=True, elapsed=self.clock() - started)
            self.stats.inc("proxy/success")
            return result


class RedirectCheck:
    """A redirect hop must stay in the crawl's scope and be allowed by its host's robots.txt.

    ``scope()`` is read on every hop: a worker's scope is reloaded as the crawl's seeds grow.
    """

    def __init__(self, scope: Callable[[], Scope], robots: RobotsCache, user_agent: str) -> None:
        self.scope = scope
        self.robots = robots
        self.user_agent = user_agent

    async def __call__(self, url: str) -> None:
        reason = self.scope().check(url)
        if reason is not None:
            raise RedirectRefused(f"redirect to {url} refused: {reason}", url, reason)
        hop_host = host_key(url)
        entry = self.robots.cached(hop_host) or (await self.robots.get(hop_host, url))[0]
        if entry.unavailable or not entry.rules.is_allowed(url, self.user_agent):
            raise RedirectRefused(f"redirect to {url} refused: robots.txt", url, "robots")
