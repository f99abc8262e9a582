"""Proxy rotation: the configured proxy list, per-proxy health, and a (domain, proxy) rate limit.

The pool decides *which* proxy a request goes through; :class:`harvestman.crawl.fetch.Fetcher` takes
that proxy per call (``fetch(url, proxy=...)``); the crawler reports back how it went::

    pool = ProxyPool(parse_proxy_urls("http://10.0.0.1:3128, socks5h://10.0.0.2:1080"))
    proxy = pool.next()
    try:
        result = await fetcher.fetch(url, proxy=proxy)
    except NetworkError:
        pool.record(proxy, success=False, elapsed=...)
        proxy = pool.next(exclude={proxy})  # a failed request is retried through the next one
    else:
        pool.record(proxy, success=True, elapsed=result.elapsed)

Everything here is single-threaded: call it from the event loop only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit, urlunsplit

from harvestman.errors import ConfigError

__all__ = [
    "PROXY_SCHEMES",
    "DomainProxyLimiter",
    "ProxyHealth",
    "ProxyPool",
    "parse_proxy_urls",
    "redact_proxy_url",
]

PROXY_SCHEMES = frozenset({"http", "https", "socks5", "socks5h"})


@dataclass(slots=True)
class ProxyHealth:
    """What the pool knows about one proxy; times are UNIX epoch seconds from the pool's clock.

    ``failures`` counts every failure, ``consecutive_failures`` those since the last success.
    ``avg_response_ms`` is the mean elapsed time of successful requests (None before the first).
    An inactive proxy (``active`` false) gets one probe request once ``retired_until`` passes.
    """

    url: str
    successes: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    avg_response_ms: float | None = None
    last_used_at: float | None = None
    last_success_at: float | None = None
    last_failure_at: float | None = None
    active: bool = True
    retired_until: float | None = None


class ProxyPool:
    """Round-robin over active proxies; a proxy with `max_consecutive_failures` (10) consecutive
    failures is taken out and probed back after `probe_after` seconds (a probe is simply letting
    it take one request again: success -> active). Thread-unsafe, event-loop only.

    A probe that fails takes the proxy out for another ``probe_after``; so does a probe whose
    outcome is never recorded (its request was cancelled), so a lost probe cannot keep the proxy
    out for good. A success recorded for an inactive proxy (a late answer to a request sent
    before it was taken out) brings it back too: it has just proved it works.

    >>> now = [0.0]
    >>> pool = ProxyPool(["http://a:1", "http://b:1"], max_consecutive_failures=1,
    ...                  probe_after=60, clock=lambda: now[0])
    >>> pool.next(), pool.next(), pool.next()
    ('http://a:1', 'http://b:1', 'http://a:1')
    >>> pool.record("http://a:1", success=False, elapsed=0.1)
    >>> pool.next(), pool.next()
    ('http://b:1', 'http://b:1')
    >>> now[0] = 60.0
    >>> pool.next(), pool.next()  # the probe, then b while the probe is out
    ('http://a:1', 'http://b:1')
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        max_consecutive_failures: int = 10,
        probe_after: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_consecutive_failures < 1:
            raise ValueError("max_consecutive_failures must be at least 1")
        if probe_after < 0:
            raise ValueError("probe_after must not be negative")
        self.max_consecutive_failures = max_consecutive_failures
        self.probe_after = probe_after
        self._clock = clock
        # dict.fromkeys keeps the configured order and drops repeats.
        self._order = list(dict.fromkeys(urls))
        self._health = {url: ProxyHealth(url) for url in self._order}
        self._cursor = 0

    def __len__(self) -> int:
        return len(self._order)

    def next(self, exclude: Collection[str] = ()) -> str | None:
        """The next proxy in round-robin order that is active or due for a probe.

        Proxies in ``exclude`` (those a request already failed through) are skipped. None when
        no proxy is configured or every one is excluded or taken out and not yet due.
        """
        now = self._clock()
        count = len(self._order)
        for step in range(count):
            index = (self._cursor + step) % count
            url = self._order[index]
            if url in exclude:
                continue
            health = self._health[url]
            if not health.active:
                if health.retired_until is not None and health.retired_until > now:
                    continue
                # Hand out one probe; no second request until it answers or probe_after passes.
                health.retired_until = now + self.probe_after
            self._cursor = index + 1
            health.last_used_at = now
            return url
        return None

    def record(self, url: str, *, success: bool, elapsed: float) -> None:
        """Account one request through ``url`` that got an HTTP response (``success``) or not.

        ``elapsed`` is in seconds. Raises KeyError for a proxy the pool does not hold.
        """
        health = self._health[url]
        now = self._clock()
        if success:
            health.successes += 1
            health.consecutive_failures = 0
            health.last_success_at = now
            ms = elapsed * 1000.0
            avg = health.avg_response_ms
            health.avg_response_ms = ms if avg is None else avg + (ms - avg) / health.successes
            health.active = True
            health.retired_until = None
            return
        health.failures += 1
        health.consecutive_failures += 1
        health.last_failure_at = now
        if not health.active or health.consecutive_failures >= self.max_consecutive_failures:
            health.active = False
            health.retired_until = now + self.probe_after

    def health(self) -> list[ProxyHealth]:
        """A copy of every proxy's health, in configured order."""
        return [replace(self._health[url]) for url in self._order]

    def restore(self, saved: Iterable[ProxyHealth]) -> None:
        """Take over health saved earlier (the store's ``proxies`` rows) for proxies in the pool.

        Entries for proxies no longer configured are ignored.
        """
        for entry in saved:
            if entry.url in self._health:
                self._health[entry.url] = replace(entry)


class DomainProxyLimiter:
    """a rate limit per (domain, proxy) pair: `rate` requests/s (default 1.0) on top of host
    politeness; `async acquire(domain, proxy)` waits as needed.

    Each call reserves the pair's next slot before it sleeps, so concurrent callers are spaced
    ``1 / rate`` seconds apart in call order. ``clock`` (monotonic seconds) and ``sleep`` are
    injectable together; pairs idle for longer than one interval are forgotten.
    """

    def __init__(
        self,
        rate: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if not rate > 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next_slot: dict[tuple[str, str], float] = {}
        self._calls = 0

    async def acquire(self, domain: str, proxy: str) -> None:
        """Return once a request to ``domain`` through ``proxy`` may be sent."""
        now = self._clock()
        self._calls += 1
        if self._calls % 1024 == 0:
            self._forget_idle(now)
        key = (domain, proxy)
        slot = max(now, self._next_slot.get(key, now))
        self._next_slot[key] = slot + self.interval
        if slot > now:
            await self._sleep(slot - now)

    def _forget_idle(self, now: float) -> None:
        idle = [key for key, slot in self._next_slot.items() if slot <= now]
        for key in idle:
            del self._next_slot[key]


def parse_proxy_urls(value: str | Sequence[str]) -> list[str]:
    """Proxy URLs from a comma-separated string (``HARVESTMAN_PROXY_URLS``) or a list.

    Blank entries are skipped, repeats dropped, the scheme lower-cased; anything else is kept
    as written. Schemes: http, https, socks5 (the crawler resolves names) and socks5h (the proxy
    does). Raises ConfigError naming the bad entry, with any password hidden.

    >>> parse_proxy_urls(" HTTP://p1:3128 ,, socks5h://u:pw@p2:1080,http://p1:3128")
    ['http://p1:3128', 'socks5h://u:pw@p2:1080']
    >>> parse_proxy_urls("socks5://u:pw@p3")
    Traceback (most recent call last):
    ...
    harvestman.errors.ConfigError: proxy URL 'socks5://u:***@p3': a SOCKS proxy needs a port
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    urls: list[str] = []
    for item in items:
        text = item.strip()
        if not text:
            continue
        url = _check_proxy_url(text)
        if url not in urls:
            urls.append(url)
    return urls


def _check_proxy_url(text: str) -> str:
    def bad(why: str) -> ConfigError:
        return ConfigError(f"proxy URL {redact_proxy_url(text)!r}: {why}")

    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in PROXY_SCHEMES:
        raise bad("scheme must be one of " + ", ".join(sorted(PROXY_SCHEMES)))
    try:
        port = parts.port
    except ValueError:
        raise bad("invalid port") from None
    if not parts.hostname:
        raise bad("no host")
    if port is None and scheme.startswith("socks"):
        raise bad("a SOCKS proxy needs a port")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise bad("a proxy URL has no path, query or fragment")
    return urlunsplit((scheme, parts.netloc, parts.path, "", ""))


def redact_proxy_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for logs and error messages.

    >>> redact_proxy_url("http://user:secret@proxy:3128"), redact_proxy_url("socks5://p:1080")
    ('http://user:***@proxy:3128', 'socks5://p:1080')
    """
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))
