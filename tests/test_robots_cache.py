"""robots.txt fetching and caching against a real server and a real SQLite store."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from harvestman.crawl.fetch import Fetcher, RetryPolicy
from harvestman.crawl.robots_cache import RobotsCache
from harvestman.store import SqlStore

UA = "Harvestman/0.1 (+https://example.test/bot)"


class RobotsServer:
    """Serves /robots.txt with a configurable status and body; counts requests."""

    def __init__(self) -> None:
        self.status = 200
        self.body = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2.5\n"
        self.hits: Counter[str] = Counter()
        self.redirects = 0
        self.loop = False
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        if self.redirects and (request.path == "/robots.txt" or request.path.startswith("/hop/")):
            # A chain of ``redirects`` hops: /robots.txt -> /hop/1 -> ... -> /hop/N (the file).
            hop = 0 if request.path == "/robots.txt" else int(request.path.rsplit("/", 1)[1])
            if hop < self.redirects:
                target = "/robots.txt" if self.loop and hop == 1 else f"/hop/{hop + 1}"
                raise web.HTTPFound(target)
            return web.Response(body=self.body)
        if request.path == "/moved/robots.txt":
            return web.Response(body=self.body)
        if request.path == "/robots.txt" and self.status == 301:
            raise web.HTTPMovedPermanently("/moved/robots.txt")
        return web.Response(status=self.status, body=self.body)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def server() -> AsyncIterator[RobotsServer]:
    robots = RobotsServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", robots.handle)
    robots.runner = web.AppRunner(app)
    await robots.runner.setup()
    site = web.TCPSite(robots.runner, "127.0.0.1", 0)
    await site.start()
    robots.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield robots
    await robots.runner.cleanup()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    async with SqlStore(f"sqlite:///{tmp_path / 'r.db'}") as opened:
        await opened.upgrade()
        yield opened


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def make_cache(store: SqlStore, clock: Clock, fetcher: Fetcher) -> RobotsCache:
    return RobotsCache(
        store.hosts, fetcher, user_agent=UA, ttl=3600, retry=RetryPolicy(3, 1.0), clock=clock
    )


async def test_rules_and_crawl_delay_are_fetched_once_and_kept_in_the_store(
    server: RobotsServer, store: SqlStore
) -> None:
    clock = Clock()
    async with Fetcher(user_agent=UA) as fetcher:
        cache = await make_cache(store, clock, fetcher)
        entries = await asyncio.gather(*(cache.get(server.host, server.origin) for _ in range(5)))
        assert server.hits["/robots.txt"] == 1  # concurrent callers share one request
        entry, asked = entries[0]
        assert asked is True
        assert [asked for _, asked in entries[1:]] == [False] * 4
        assert entry.crawl_delay == 2.5
        assert not entry.rules.is_allowed(server.origin + "private/x", UA)
        assert entry.rules.is_allowed(server.origin + "public", UA)

        # A new process (a new cache) reads the store instead of the host, within the TTL.
        fresh = await make_cache(store, clock, fetcher)
        entry, asked = await fresh.get(server.host, server.origin)
        assert (asked, server.hits["/robots.txt"]) == (False, 1)
        assert entry.crawl_delay == 2.5
        assert not entry.rules.is_allowed(server.origin + "private/x", UA)

        # After the TTL the file is asked for again.
        clock.now += 3601
        _, asked = await fresh.get(server.host, server.origin)
        assert (asked, server.hits["/robots.txt"]) == (True, 2)

    domain = await store.get_domain(server.host)
    assert domain is not None
    assert (domain.robots_status, domain.crawl_delay) == (200, 2.5)
    assert domain.robots_txt is not None
    assert "Disallow: /private/" in domain.robots_txt


@pytest.mark.parametrize("status", [401, 403, 404, 410])
async def test_a_4xx_robots_txt_allows_everything(
    server: RobotsServer, store: SqlStore, status: int
) -> None:
    server.status = status
    async with Fetcher(user_agent=UA) as fetcher:
        entry, _ = await (await make_cache(store, Clock(), fetcher)).get(server.host, server.origin)
    assert not entry.unavailable
    assert entry.rules.is_allowed(server.origin + "private/x", UA)


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_a_5xx_or_429_disallows_everything_for_now_and_retries_with_backoff(
    server: RobotsServer, store: SqlStore, status: int
) -> None:
    server.status = status
    clock = Clock()
    async with Fetcher(user_agent=UA) as fetcher:
        cache = await make_cache(store, clock, fetcher)
        entry, _ = await cache.get(server.host, server.origin)
        assert entry.unavailable
        assert not entry.exhausted
        assert not entry.rules.is_allowed(server.origin + "anything", UA)
        assert 0.8 <= entry.expires_at - clock.now <= 1.2  # first backoff: 1 s with jitter

        # Within the backoff nothing is asked; after it, the file is asked for again.
        await cache.get(server.host, server.origin)
        assert server.hits["/robots.txt"] == 1
        for _ in range(3):
            clock.now = entry.expires_at + 0.01
            entry, _ = await cache.get(server.host, server.origin)
        assert server.hits["/robots.txt"] == 4
        assert entry.exhausted  # three retries spent: its URLs are blocked with the reason
        assert entry.error == f"HTTP {status}"

        server.status = 200  # the cache does not remember a failure in the store
    assert (await store.get_domain(server.host)) is None


async def test_a_network_error_disallows_everything_for_now(store: SqlStore) -> None:
    async with Fetcher(user_agent=UA, timeout=2) as fetcher:
        cache = await make_cache(store, Clock(), fetcher)
        entry, asked = await cache.get("127.0.0.1:9", "http://127.0.0.1:9/")
    assert asked
    assert entry.unavailable
    assert entry.error is not None
    assert entry.error.startswith("NetworkError")


async def test_redirects_are_followed_and_a_bom_is_stripped(
    server: RobotsServer, store: SqlStore
) -> None:
    server.status = 301
    server.body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /bom-checked/\n"
    async with Fetcher(user_agent=UA) as fetcher:
        entry, _ = await (await make_cache(store, Clock(), fetcher)).get(server.host, server.origin)
    assert server.hits["/moved/robots.txt"] == 1
    assert not entry.rules.is_allowed(server.origin + "bom-checked/x", UA)
    assert entry.text is not None
    assert not entry.text.startswith("\ufeff")


async def test_only_the_first_500_kib_are_read(server: RobotsServer, store: SqlStore) -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    server.body = b"User-agent: *\n" + filler * 600 + b"Disallow: /past-the-cap/\n"
    async with Fetcher(user_agent=UA) as fetcher:
        entry, _ = await (await make_cache(store, Clock(), fetcher)).get(server.host, server.origin)
    assert entry.rules.is_allowed(server.origin + "past-the-cap/x", UA)
    assert entry.text is not None
    assert len(entry.text.encode()) <= 500 * 1024


@pytest.mark.parametrize("fetch_max_redirects", [0, 5, 20])
async def test_five_redirects_are_followed_whatever_the_fetch_setting(
    server: RobotsServer, store: SqlStore, fetch_max_redirects: int
) -> None:
    server.redirects = 5
    async with Fetcher(user_agent=UA, max_redirects=fetch_max_redirects) as fetcher:
        entry, _ = await (await make_cache(store, Clock(), fetcher)).get(server.host, server.origin)

    assert server.hits == Counter(["/robots.txt", *(f"/hop/{n}" for n in range(1, 6))])
    assert (entry.status, entry.error, entry.unavailable) == (200, None, False)
    assert not entry.rules.is_allowed(server.origin + "private/x", UA)


@pytest.mark.parametrize("fetch_max_redirects", [0, 5, 20])
async def test_more_than_five_redirects_mean_no_robots_txt(
    server: RobotsServer, store: SqlStore, fetch_max_redirects: int
) -> None:
    # Google: "Google follows at least five redirect hops [...] and then stops and treats it as
    # a 404 for the robots.txt" (developers.google.com/search/docs/crawling-indexing/robots/
    # robots_txt, "Handling of errors and HTTP status codes"); RFC 9309 §2.3.1.2.
    server.redirects = 6
    async with Fetcher(user_agent=UA, max_redirects=fetch_max_redirects) as fetcher:
        entry, asked = await (await make_cache(store, Clock(), fetcher)).get(
            server.host, server.origin
        )

    # Six responses, all redirects; the sixth hop's target, the file, is never asked for.
    assert server.hits == Counter(["/robots.txt", *(f"/hop/{n}" for n in range(1, 6))])
    assert asked is True
    assert (entry.status, entry.text, entry.unavailable) == (None, None, False)
    assert entry.error == "TooManyRedirects: more than 5 redirects"
    assert entry.rules.is_allowed(server.origin + "private/x", UA)
    domain = await store.get_domain(server.host)
    assert domain is not None
    assert (domain.robots_status, domain.robots_txt, domain.allowed) == (None, None, True)


async def test_a_redirect_loop_means_no_robots_txt(server: RobotsServer, store: SqlStore) -> None:
    server.redirects, server.loop = 6, True  # /robots.txt -> /hop/1 -> /robots.txt
    async with Fetcher(user_agent=UA) as fetcher:
        entry, _ = await (await make_cache(store, Clock(), fetcher)).get(server.host, server.origin)

    assert server.hits == Counter({"/robots.txt": 1, "/hop/1": 1})
    assert entry.error is not None
    assert entry.error.startswith("RedirectLoop: ")
    assert (entry.status, entry.unavailable) == (None, False)
    assert entry.rules.is_allowed(server.origin + "private/x", UA)
