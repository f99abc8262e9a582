"""Proxy rotation, the (domain, proxy) rate limit, User-Agent rotation and cookies, against a
real target site, a real HTTP forward proxy and a real SOCKS5 server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from harvestman.cookies import dump_cookies, load_cookies
from harvestman.crawl.fetch import Fetcher, FetchResult
from harvestman.errors import ConfigError, NetworkError
from harvestman.proxies import (
    DomainProxyLimiter,
    ProxyHealth,
    ProxyPool,
    parse_proxy_urls,
    redact_proxy_url,
)
from proxyservers import HttpProxy, Socks5Server

UA = "Harvestman-test/1.0 (+http://127.0.0.1/bot)"


@dataclass
class Target:
    """The site the proxies lead to; ``seen`` holds (path, User-Agent, Cookie) per request."""

    base: str = ""
    port: int = 0
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    state = Target()

    @web.middleware
    async def record(request: web.Request, handler: web.Handler) -> web.StreamResponse:
        headers = request.headers
        state.seen.append((request.path, headers.get("User-Agent", ""), headers.get("Cookie")))
        return await handler(request)

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def echo(request: web.Request) -> web.Response:
        return web.json_response(dict(request.headers))

    async def hop(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/page"})

    async def set_cookies(request: web.Request) -> web.Response:
        response = web.Response(text="cookies set")
        response.set_cookie("sid", "abc")
        response.set_cookie("pref", "dark", max_age=3600, httponly=True)
        return response

    app = web.Application(middlewares=[record])
    app.router.add_get("/page", page)
    app.router.add_get("/echo", echo)
    app.router.add_get("/hop", hop)
    app.router.add_get("/set", set_cookies)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    state.port = runner.addresses[0][1]
    state.base = f"http://127.0.0.1:{state.port}"
    yield state
    await runner.cleanup()


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def fetch_through_pool(
    fetcher: Fetcher, pool: ProxyPool, url: str, errors: list[str]
) -> FetchResult:
    """What the engine does: a request that fails through a proxy is retried through the next."""
    tried: set[str] = set()
    while (proxy := pool.next(exclude=tried)) is not None:
        try:
            result = await fetcher.fetch(url, proxy=proxy)
        except NetworkError as exc:
            pool.record(proxy, success=False, elapsed=0.0)
            errors.append(str(exc))
            tried.add(proxy)
            continue
        pool.record(proxy, success=True, elapsed=result.elapsed)
        return result
    raise AssertionError(f"no proxy left for {url}; errors: {errors}")


# --- the fetcher through proxies ---------------------------------------------------------------


async def test_http_proxy_carries_the_request(target: Target) -> None:
    async with HttpProxy() as proxy, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        proxied = await fetcher.fetch(f"{target.base}/page", proxy=proxy.url)
        direct = await fetcher.fetch(f"{target.base}/page")

    assert (proxied.status, proxied.body, proxied.proxy) == (200, b"hello", proxy.url)
    assert (direct.status, direct.body, direct.proxy) == (200, b"hello", None)
    assert proxy.requests == 1
    assert proxy.targets == [f"{target.base}/page"]
    assert [path for path, _, _ in target.seen] == ["/page", "/page"]


async def test_http_proxy_credentials_go_to_the_proxy_only(target: Target) -> None:
    async with HttpProxy() as proxy, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        with_auth = proxy.url.replace("http://", "http://user:pw@")
        result = await fetcher.fetch(f"{target.base}/echo", proxy=with_auth)

    assert proxy.proxy_auth == ["Basic dXNlcjpwdw=="]
    assert "Proxy-Authorization" not in result.body.decode()
    assert result.proxy == with_auth


@pytest.mark.parametrize("resolved_by_proxy", [False, True])
async def test_socks5_proxy_carries_the_requests(target: Target, resolved_by_proxy: bool) -> None:
    async with Socks5Server() as socks, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        if resolved_by_proxy:
            proxy, host = socks.url_h, "localhost"
        else:
            proxy, host = socks.url, "127.0.0.1"
        first = await fetcher.fetch(f"http://{host}:{target.port}/page", proxy=proxy)
        second = await fetcher.fetch(f"http://{host}:{target.port}/hop", proxy=proxy)

    assert (first.status, first.body, first.proxy) == (200, b"hello", proxy)
    assert (second.status, second.body, second.redirects) == (
        200,
        b"hello",
        [f"http://{host}:{target.port}/hop"],
    )
    # socks5h sends the name for the proxy to resolve; socks5 sends the address.
    assert socks.targets == [(host, target.port)]
    assert socks.connections == 1  # one kept-alive connection through the proxy's own pool
    assert [path for path, _, _ in target.seen] == ["/page", "/hop", "/page"]


async def test_round_robin_across_two_proxies(target: Target) -> None:
    async with (
        HttpProxy() as http_proxy,
        Socks5Server() as socks,
        Fetcher(user_agent=UA, timeout=5.0) as fetcher,
    ):
        pool = ProxyPool([http_proxy.url, socks.url])
        errors: list[str] = []
        used = [
            (await fetch_through_pool(fetcher, pool, f"{target.base}/page", errors)).proxy
            for _ in range(5)
        ]

    assert used == [http_proxy.url, socks.url, http_proxy.url, socks.url, http_proxy.url]
    assert errors == []
    assert http_proxy.requests == 3
    assert socks.targets == [("127.0.0.1", target.port)]
    assert len(target.seen) == 5
    assert [(h.url, h.successes, h.failures) for h in pool.health()] == [
        (http_proxy.url, 3, 0),
        (socks.url, 2, 0),
    ]


async def test_dead_proxy_is_taken_out_and_probed_back(target: Target) -> None:
    dead_port = unused_port()
    dead = f"http://127.0.0.1:{dead_port}"
    clock = FakeClock(1000.0)
    url = f"{target.base}/page"
    errors: list[str] = []
    async with HttpProxy() as live, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        pool = ProxyPool([dead, live.url], max_consecutive_failures=2, probe_after=60, clock=clock)

        # Two requests try the dead proxy first, fail and are retried through the live one;
        # after two failures in a row it is out, and the next requests go straight to live.
        for _ in range(4):
            assert (await fetch_through_pool(fetcher, pool, url, errors)).proxy == live.url
        assert live.requests == 4
        assert len(errors) == 2
        assert all(error.startswith(f"proxy {dead} failed: ") for error in errors)
        dead_health, live_health = pool.health()
        assert dead_health == ProxyHealth(
            url=dead,
            failures=2,
            consecutive_failures=2,
            last_used_at=1000.0,
            last_failure_at=1000.0,
            active=False,
            retired_until=1060.0,
        )
        assert (live_health.successes, live_health.active) == (4, True)

        # Due for a probe, still dead: the probe fails and the proxy stays out 60 s more.
        clock.now = 1060.0
        assert (await fetch_through_pool(fetcher, pool, url, errors)).proxy == live.url
        assert len(errors) == 3
        assert pool.health()[0].retired_until == 1120.0
        assert pool.next() == live.url

        # Back up: the next probe succeeds and the proxy rejoins the rotation.
        clock.now = 1120.0
        async with HttpProxy(port=dead_port) as revived:
            results = [await fetch_through_pool(fetcher, pool, url, errors) for _ in range(3)]
        assert [result.proxy for result in results] == [dead, live.url, dead]
        assert revived.requests == 2

    dead_health = pool.health()[0]
    assert (dead_health.active, dead_health.retired_until) == (True, None)
    assert (dead_health.successes, dead_health.failures, dead_health.consecutive_failures) == (
        2,
        3,
        0,
    )
    assert len(errors) == 3


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "http"])
async def test_unreachable_proxy_is_a_retryable_network_error(target: Target, scheme: str) -> None:
    proxy = f"{scheme}://user:secret@127.0.0.1:{unused_port()}"
    async with Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        with pytest.raises(NetworkError) as caught:
            await fetcher.fetch(f"{target.base}/page", proxy=proxy)

    assert caught.value.retryable
    assert str(caught.value).startswith(f"proxy {redact_proxy_url(proxy)} failed: ")
    assert "secret" not in str(caught.value)
    assert caught.value.url == f"{target.base}/page"


async def test_target_refused_behind_socks_names_the_proxy(target: Target) -> None:
    url = f"http://127.0.0.1:{unused_port()}/page"
    async with Socks5Server() as socks, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        with pytest.raises(NetworkError, match=f"proxy {socks.url} failed: .*refused"):
            await fetcher.fetch(url, proxy=socks.url)


async def test_proxy_refusing_connect_is_a_network_error_naming_it() -> None:
    # An https target needs CONNECT, which this proxy does not offer.
    async with HttpProxy() as proxy, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        with pytest.raises(NetworkError) as caught:
            await fetcher.fetch(f"https://127.0.0.1:{unused_port()}/", proxy=proxy.url)
    assert str(caught.value).startswith(f"proxy {proxy.url} failed: ClientHttpProxyError")
    assert proxy.requests == 0


async def test_unknown_proxy_scheme_is_refused(target: Target) -> None:
    async with Fetcher(user_agent=UA) as fetcher:
        with pytest.raises(ValueError, match="unsupported proxy scheme"):
            await fetcher.fetch(f"{target.base}/page", proxy="ftp://127.0.0.1:21")


# --- the pool ----------------------------------------------------------------------------------


def test_pool_skips_excluded_and_answers_none_when_nothing_is_left() -> None:
    pool = ProxyPool(["http://a:1", "http://b:1", "http://a:1"])
    assert len(pool) == 2
    assert pool.next(exclude={"http://a:1"}) == "http://b:1"
    assert pool.next(exclude={"http://a:1", "http://b:1"}) is None
    assert ProxyPool([]).next() is None


def test_pool_health_counts_and_averages() -> None:
    clock = FakeClock(50.0)
    pool = ProxyPool(["http://a:1"], clock=clock)
    assert pool.next() == "http://a:1"
    pool.record("http://a:1", success=True, elapsed=0.1)
    pool.record("http://a:1", success=False, elapsed=30.0)
    clock.now = 51.0
    pool.record("http://a:1", success=True, elapsed=0.3)
    assert pool.health() == [
        ProxyHealth(
            url="http://a:1",
            successes=2,
            failures=1,
            consecutive_failures=0,
            avg_response_ms=pytest.approx(200.0),
            last_used_at=50.0,
            last_success_at=51.0,
            last_failure_at=50.0,
        )
    ]
    with pytest.raises(KeyError):
        pool.record("http://unknown:1", success=True, elapsed=0.1)


def test_lost_probe_does_not_keep_a_proxy_out() -> None:
    clock = FakeClock(0.0)
    pool = ProxyPool(["http://a:1"], max_consecutive_failures=1, probe_after=10, clock=clock)
    pool.record("http://a:1", success=False, elapsed=0.0)
    assert pool.next() is None
    clock.now = 10.0
    assert pool.next() == "http://a:1"  # the probe, whose answer never comes
    assert pool.next() is None
    clock.now = 20.0
    assert pool.next() == "http://a:1"


def test_late_success_brings_a_proxy_back() -> None:
    pool = ProxyPool(["http://a:1"], max_consecutive_failures=1, clock=FakeClock(0.0))
    pool.record("http://a:1", success=False, elapsed=0.0)
    assert pool.next() is None
    pool.record("http://a:1", success=True, elapsed=0.2)
    assert pool.next() == "http://a:1"


def test_restore_takes_saved_health_for_configured_proxies() -> None:
    pool = ProxyPool(["http://a:1", "http://b:1"], clock=FakeClock(0.0))
    saved = ProxyHealth("http://b:1", failures=10, active=False, retired_until=300.0)
    pool.restore([saved, ProxyHealth("http://gone:1", successes=5)])
    assert pool.health() == [ProxyHealth("http://a:1"), saved]
    assert pool.next() == "http://a:1"
    assert pool.next() == "http://a:1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        (" http://p1:3128 , ,HTTPS://p2:443/", ["http://p1:3128", "https://p2:443/"]),
        (
            "socks5://u:p%40ss@p3:1080,socks5h://p4:9050",
            ["socks5://u:p%40ss@p3:1080", "socks5h://p4:9050"],
        ),
        (["http://p1:3128", "http://p1:3128"], ["http://p1:3128"]),
        ("http://[::1]:3128", ["http://[::1]:3128"]),
    ],
)
def test_parse_proxy_urls(value: str | list[str], expected: list[str]) -> None:
    assert parse_proxy_urls(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ftp://p1:21", "proxy URL 'ftp://p1:21': scheme must be one of"),
        ("socks4://p1:1080", "scheme must be one of"),
        ("p1:3128", "scheme must be one of"),
        ("http://:3128", "'http://:3128': no host"),
        ("http://p1:99999", "invalid port"),
        ("socks5://u:hunter2@p1", "'socks5://u:***@p1': a SOCKS proxy needs a port"),
        ("http://p1:3128/path", "no path, query or fragment"),
    ],
)
def test_parse_proxy_urls_refuses(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("*", r"\*").replace("?", r"\?")) as err:
        parse_proxy_urls(f"http://ok:1,{value}")
    assert "hunter2" not in str(err.value)


# --- the (domain, proxy) rate limit ------------------------------------------------------------


async def test_rate_limit_spaces_each_domain_proxy_pair() -> None:
    clock = FakeClock(0.0)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.now += seconds

    limiter = DomainProxyLimiter(rate=2.0, clock=clock, sleep=sleep)
    await limiter.acquire("a.test", "http://p1:1")
    await limiter.acquire("a.test", "http://p1:1")  # half a second after the first
    await limiter.acquire("a.test", "http://p2:1")  # another proxy: no wait
    await limiter.acquire("b.test", "http://p1:1")  # another domain: no wait
    clock.now = 0.7
    await limiter.acquire("a.test", "http://p1:1")  # its slot is at 1.0
    clock.now = 5.0
    await limiter.acquire("a.test", "http://p1:1")  # idle long enough: no wait
    assert sleeps == [0.5, pytest.approx(0.3)]


async def test_rate_limit_spaces_concurrent_callers() -> None:
    clock = FakeClock(0.0)
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:  # concurrent sleepers: each records its own wait
        sleeps.append(seconds)
        await asyncio.sleep(0)

    limiter = DomainProxyLimiter(rate=20.0, clock=clock, sleep=sleep)
    done: list[str] = []

    async def take(proxy: str) -> None:
        await limiter.acquire("a.test", proxy)
        done.append(proxy)

    await asyncio.gather(*(take("p1") for _ in range(4)), take("p2"))

    # Four callers at one instant through p1 are given slots 0, 50, 100 and 150 ms ahead; the
    # caller through p2 waits for nobody.
    assert sleeps == [pytest.approx(0.05), pytest.approx(0.1), pytest.approx(0.15)]
    assert sorted(done) == ["p1", "p1", "p1", "p1", "p2"]


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        DomainProxyLimiter(rate=0)


# --- User-Agent rotation -----------------------------------------------------------------------


async def test_user_agent_rotation(target: Target) -> None:
    agents = ["UA-A", "UA-B", "UA-C"]
    expected_rng = random.Random(7)
    expected = [expected_rng.choice(agents) for _ in range(8)]
    async with Fetcher(
        user_agent=UA, user_agents=agents, rng=random.Random(7), timeout=5.0
    ) as fetcher:
        for _ in range(8):
            await fetcher.fetch(f"{target.base}/hop")  # a redirect: two requests per fetch
        await fetcher.fetch(f"{target.base}/page", headers={"User-Agent": "Mine"})

    assert len(set(expected)) == 3
    sent = [agent for _, agent, _ in target.seen]
    assert sent[:16:2] == expected
    assert sent[1:16:2] == expected  # every hop of one fetch carries the same agent
    assert sent[16] == "Mine"


async def test_contact_user_agent_is_the_default(target: Target) -> None:
    async with Fetcher(user_agent=UA, user_agents=[], timeout=5.0) as fetcher:
        await fetcher.fetch(f"{target.base}/page")
        await fetcher.fetch(f"{target.base}/page")
    assert [agent for _, agent, _ in target.seen] == [UA, UA]


# --- cookies -----------------------------------------------------------------------------------


def _cookie(result: FetchResult) -> str | None:
    """The Cookie header the target received, its cookies sorted."""
    value = json.loads(result.body).get("Cookie")
    return None if value is None else "; ".join(sorted(value.split("; ")))


async def test_cookies_are_sent_back_and_survive_a_restart(target: Target) -> None:
    jar = aiohttp.CookieJar(unsafe=True)  # the default jar ignores IP-address hosts
    other_host = f"http://localhost:{target.port}"
    async with Socks5Server() as socks, Fetcher(user_agent=UA, cookie_jar=jar) as fetcher:
        # Set through a SOCKS proxy's session, sent back on the direct one: one jar for all.
        await fetcher.fetch(f"{target.base}/set", proxy=socks.url)
        same_host = await fetcher.fetch(f"{target.base}/echo")
        elsewhere = await fetcher.fetch(f"{other_host}/echo")
    assert _cookie(same_host) == "pref=dark; sid=abc"
    assert _cookie(elsewhere) is None

    rows = dump_cookies(jar)
    now = time.time()
    assert rows == [
        {
            "domain": "127.0.0.1",
            "path": "/",
            "name": "pref",
            "value": "dark",
            "coded_value": "dark",
            "expires": pytest.approx(now + 3600, abs=5),
            "secure": False,
            "http_only": True,
            "same_site": None,
            "host_only": True,
        },
        {
            "domain": "127.0.0.1",
            "path": "/",
            "name": "sid",
            "value": "abc",
            "coded_value": "abc",
            "expires": None,
            "secure": False,
            "http_only": False,
            "same_site": None,
            "host_only": True,
        },
    ]

    restarted = aiohttp.CookieJar(unsafe=True)
    assert load_cookies(restarted, rows) == 2
    # The expiry travels as an HTTP date inside the jar: whole seconds.
    assert dump_cookies(restarted) == [
        {**row, "expires": pytest.approx(row["expires"], abs=1) if row["expires"] else None}
        for row in rows
    ]
    async with Fetcher(user_agent=UA, cookie_jar=restarted) as fetcher:
        again = await fetcher.fetch(f"{target.base}/echo")
        elsewhere = await fetcher.fetch(f"{other_host}/echo")
    assert _cookie(again) == "pref=dark; sid=abc"
    assert _cookie(elsewhere) is None


async def test_load_cookies_skips_expired_and_malformed_rows() -> None:
    now = time.time()
    base = {"domain": "example.org", "path": "/", "value": "v", "host_only": False}
    rows = [
        {**base, "name": "kept", "expires": now + 600, "secure": True, "same_site": "Lax"},
        {**base, "name": "expired", "expires": now - 1},
        {**base, "name": "bad name;"},
        {"domain": "example.org", "value": "no name"},
        {**base, "name": "session"},
    ]
    jar = aiohttp.CookieJar()
    assert load_cookies(jar, rows, now=now) == 2
    names = sorted(morsel.key for morsel in jar)
    assert names == ["kept", "session"]
    sent = jar.filter_cookies(URL("https://sub.example.org/"))
    assert sorted(sent) == ["kept", "session"]  # a Domain cookie reaches subdomains


async def test_ip_host_cookies_need_an_unsafe_jar() -> None:
    row = {"domain": "127.0.0.1", "path": "/", "name": "a", "value": "1", "host_only": True}
    assert load_cookies(aiohttp.CookieJar(), [row]) == 0
    assert load_cookies(aiohttp.CookieJar(unsafe=True), [row]) == 1
