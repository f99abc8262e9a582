"""The network guard: every fetch (pages, redirects, robots.txt) passes it, hop by hop."""

from __future__ import annotations

import doctest
import ipaddress
import json
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from conftest import SettingsFactory, serve
from harvestman import addresses
from harvestman import guard as guard_module
from harvestman.crawl.crawler import Crawler
from harvestman.crawl.fetch import Fetcher
from harvestman.errors import AddressRefused, PatternError
from harvestman.guard import GuardedResolver, NetworkGuard
from harvestman.patterns import compile_pattern
from harvestman.render import Renderer
from harvestman.store import SqlStore
from harvestman.urls import Scope
from proxyservers import HttpProxy

UA = "Harvestman-test/1.0"
SECRET_BODY = "the secret of the other port"
PAGE = (
    "<html><head><title>Home</title></head><body><p>" + "words " * 200 + "</p>{links}</body></html>"
)


Answer = Callable[[], web.Response]


class Hits:
    """Requests counted by path, answered from a table of response factories (404 else)."""

    def __init__(self, answers: dict[str, Answer] | None = None) -> None:
        self.hits: Counter[str] = Counter()
        self.answers = answers or {}
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        make = self.answers.get(request.path)
        return make() if make is not None else web.Response(status=404, text="no")


def redirect(status: int, location: str) -> Answer:
    return lambda: web.Response(status=status, headers={"Location": location})


def html(links: str = "") -> Answer:
    return lambda: web.Response(text=PAGE.format(links=links), content_type="text/html")


@pytest.fixture
async def secret() -> AsyncIterator[Hits]:
    """A second local server holding a secret: the thing an attacker wants read."""
    hits = Hits()

    async def handler(request: web.Request) -> web.StreamResponse:
        hits.hits[request.path] += 1
        return web.Response(text=SECRET_BODY)

    async with serve(handler) as port:
        hits.port = port
        yield hits


def ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


# -- the guard's rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "port", "allowed"),
    [
        ("93.184.216.34", 80, True),
        ("2606:2800:220:1:248:1893:25c8:1946", 443, True),
        ("127.0.0.1", 8089, True),  # the admitted origin
        ("127.0.0.1", 8090, False),  # same address, another port
        ("127.0.0.2", 8089, False),
        ("::ffff:127.0.0.1", 8089, True),  # the mapped form of the admitted origin
        ("::ffff:127.0.0.1", 6379, False),
        ("::1", 8089, False),
        ("10.0.0.1", 80, False),
        ("10.9.8.7", 22, True),  # inside the allow-list network
        ("169.254.169.254", 80, False),
        ("0.0.0.0", 80, False),
        ("224.0.0.1", 80, False),
        ("192.168.1.1", 1234, True),  # an allow-list origin
        ("192.168.1.1", 1235, False),
    ],
)
def test_guard_admits_public_allow_list_and_admitted_origins_only(
    address: str, port: int, allowed: bool
) -> None:
    guard = NetworkGuard(["10.9.0.0/16", "192.168.1.1:1234", "intranet.example"])
    guard.admit(ip("127.0.0.1"), 8089)
    assert guard.is_allowed(ip(address), port) is allowed


# Every special-purpose block of IANA's IPv4 and IPv6 registries (and the deprecated IPv6 ones
# some stacks still route), one address each: refused unless the registry calls it globally
# reachable. An IPv6 form that carries an IPv4 address is judged by the address it carries.
SPECIAL_BLOCKS = [
    ("0.0.0.0/8 this network", "0.1.2.3", False),
    ("0.0.0.0/32 this host", "0.0.0.0", False),
    ("10.0.0.0/8 private-use", "10.1.2.3", False),
    ("100.64.0.0/10 shared address space", "100.64.0.1", False),
    ("127.0.0.0/8 loopback", "127.0.0.2", False),
    ("169.254.0.0/16 link-local", "169.254.169.254", False),
    ("172.16.0.0/12 private-use", "172.16.0.1", False),
    ("192.0.0.0/24 IETF protocol assignments", "192.0.0.100", False),
    ("192.0.0.0/29 DS-Lite", "192.0.0.1", False),
    ("192.0.0.8/32 IPv4 dummy", "192.0.0.8", False),
    ("192.0.0.9/32 PCP anycast", "192.0.0.9", True),
    ("192.0.0.10/32 TURN anycast", "192.0.0.10", True),
    ("192.0.0.170/32 NAT64 discovery", "192.0.0.170", False),
    ("192.0.0.171/32 NAT64 discovery", "192.0.0.171", False),
    ("192.0.2.0/24 TEST-NET-1", "192.0.2.1", False),
    ("192.31.196.0/24 AS112-v4", "192.31.196.1", True),
    ("192.52.193.0/24 AMT", "192.52.193.1", True),
    ("192.88.99.0/24 6to4 relay anycast", "192.88.99.1", False),
    ("192.88.99.2/32 6a44 relay anycast", "192.88.99.2", False),
    ("192.168.0.0/16 private-use", "192.168.1.1", False),
    ("192.175.48.0/24 AS112 direct delegation", "192.175.48.1", True),
    ("198.18.0.0/15 benchmarking", "198.19.0.1", False),
    ("198.51.100.0/24 TEST-NET-2", "198.51.100.1", False),
    ("203.0.113.0/24 TEST-NET-3", "203.0.113.1", False),
    ("224.0.0.0/4 multicast", "239.1.1.1", False),
    ("240.0.0.0/4 reserved", "240.0.0.1", False),
    ("255.255.255.255/32 limited broadcast", "255.255.255.255", False),
    ("public IPv4", "93.184.216.34", True),
    ("::/128 unspecified", "::", False),
    ("::1/128 loopback", "::1", False),
    ("::/96 IPv4-compatible of loopback", "::7f00:1", False),
    ("::/96 IPv4-compatible of a public address", "::5db8:d822", True),
    ("::ffff:0:0/96 IPv4-mapped of link-local", "::ffff:169.254.169.254", False),
    ("::ffff:0:0/96 IPv4-mapped of a public address", "::ffff:93.184.216.34", True),
    ("::ffff:0:0:0/96 SIIT of loopback", "::ffff:0:7f00:1", False),
    ("64:ff9b::/96 NAT64 of the metadata address", "64:ff9b::a9fe:a9fe", False),
    ("64:ff9b::/96 NAT64 of loopback", "64:ff9b::127.0.0.1", False),
    ("64:ff9b::/96 NAT64 of a public address", "64:ff9b::5db8:d822", True),
    ("64:ff9b:1::/48 local-use NAT64", "64:ff9b:1::5db8:d822", False),
    ("100::/64 discard-only", "100::1", False),
    ("100:0:0:1::/64 dummy prefix", "100:0:0:1::1", False),
    ("2001::/23 IETF protocol assignments", "2001:100::1", False),
    ("2001::/32 Teredo, private client", "2001:0:4136:e378:8000:63bf:80ff:fffe", False),
    ("2001::/32 Teredo, private server", "2001:0:a00:1:8000:63bf:a247:27dd", False),
    ("2001::/32 Teredo, both public", "2001:0:4136:e378:8000:63bf:a247:27dd", True),
    ("2001:1::1/128 PCP anycast", "2001:1::1", True),
    ("2001:1::2/128 TURN anycast", "2001:1::2", True),
    ("2001:1::3/128 DNS-SD SRP anycast", "2001:1::3", True),
    ("2001:2::/48 benchmarking", "2001:2::1", False),
    ("2001:3::/32 AMT", "2001:3::1", True),
    ("2001:4:112::/48 AS112-v6", "2001:4:112::1", True),
    ("2001:10::/28 ORCHID", "2001:10::1", False),
    ("2001:20::/28 ORCHIDv2", "2001:20::1", True),
    ("2001:30::/28 drone remote ID", "2001:30::1", True),
    ("2001:db8::/32 documentation", "2001:db8::1", False),
    ("2002::/16 6to4 of private-use", "2002:a00:1::1", False),
    ("2002::/16 6to4 of loopback", "2002:7f00:1::1", False),
    ("2002::/16 6to4 of a public address", "2002:5db8:d822::1", True),
    ("2620:4f:8000::/48 AS112 direct delegation", "2620:4f:8000::1", True),
    ("3fff::/20 documentation", "3fff::1", False),
    ("5f00::/16 SRv6 SIDs", "5f00::1", False),
    ("fc00::/7 unique-local", "fd00::1", False),
    ("fe80::/10 link-local", "fe80::1", False),
    ("fec0::/10 site-local", "fec0::1", False),
    ("ff00::/8 multicast", "ff02::1", False),
    ("outside 2000::/3, reserved by the IETF", "4000::1", False),
    ("public IPv6", "2606:2800:220:1:248:1893:25c8:1946", True),
]


@pytest.mark.parametrize(
    ("address", "allowed"),
    [pytest.param(a, allowed, id=name) for name, a, allowed in SPECIAL_BLOCKS],
)
def test_special_purpose_blocks_are_refused_unless_globally_reachable(
    address: str, allowed: bool
) -> None:
    assert NetworkGuard().is_allowed(ip(address), 80) is allowed


def test_an_ipv6_form_of_an_allowed_ipv4_address_is_allowed_with_it() -> None:
    guard = NetworkGuard(["10.9.0.0/16", "64:ff9b:1::/48"])
    guard.admit(ip("127.0.0.1"), 8089)
    assert guard.is_allowed(ip("64:ff9b::a09:1"), 80)  # NAT64 of 10.9.0.1, in the list
    assert guard.is_allowed(ip("2002:a09:1::1"), 80)  # 6to4 of it
    assert guard.is_allowed(ip("64:ff9b:1::1"), 80)  # the allow-list names the block itself
    assert guard.is_allowed(ip("::ffff:0:7f00:1"), 8089)  # SIIT of the admitted origin
    assert not guard.is_allowed(ip("::ffff:0:7f00:1"), 8090)


def test_the_address_tables_examples_hold() -> None:
    assert doctest.testmod(addresses).failed == 0
    assert doctest.testmod(guard_module).failed == 0


async def test_the_refusal_names_the_ipv4_address_an_ipv6_form_carries() -> None:
    guard = NetworkGuard()
    with pytest.raises(AddressRefused) as refused:
        await guard.check_url("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/")
    assert str(refused.value).startswith(
        "64:ff9b::a9fe:a9fe (IPv4/IPv6 translation (NAT64) of 169.254.169.254) port 80"
        " is a non-public address"
    )
    with pytest.raises(AddressRefused):
        guard.check_host("[2002:7f00:1::1]", 443)


def test_allow_list_host_names_and_literals() -> None:
    guard = NetworkGuard(["Intranet.Example.", " ", "[::1]:9000"])
    assert guard.hosts == {"intranet.example"}
    assert guard.origins == frozenset({(ip("::1"), 9000)})
    assert guard.is_allowed_host("INTRANET.example")
    guard.check_host("example.org", 80)  # names are the resolver's to check
    with pytest.raises(AddressRefused, match=r"127\.0\.0\.1 port 80"):
        guard.check_host("127.0.0.1", 80, "http://127.0.0.1/")


class FakeResolver(AbstractResolver):
    """A DNS that answers what the test says: a public-looking name re-pointed at 127.0.0.1."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.answers[host]
        ]

    async def close(self) -> None:
        pass


async def test_a_rebound_name_is_refused_at_resolution() -> None:
    dns = FakeResolver(
        {
            "rebind.example": ["127.0.0.1"],
            "mixed.example": ["10.0.0.5", "93.184.216.34"],
            "intranet.example": ["10.0.0.6"],
        }
    )
    resolver = GuardedResolver(NetworkGuard(["intranet.example"]), dns)
    with pytest.raises(AddressRefused, match=r"rebind.example \(127.0.0.1\) port 80"):
        await resolver.resolve("rebind.example", 80)
    # Only the allowed addresses are handed to the connector: it connects to what was checked.
    mixed = await resolver.resolve("mixed.example", 443)
    assert [r["host"] for r in mixed] == ["93.184.216.34"]
    allowed_name = await resolver.resolve("intranet.example", 80)
    assert [r["host"] for r in allowed_name] == ["10.0.0.6"]
    assert dns.asked == ["rebind.example", "mixed.example", "intranet.example"]


async def test_fetcher_refuses_private_hops_and_admits_the_origin(secret: Hits) -> None:
    answers = {"/go": redirect(302, f"http://127.0.0.1:{secret.port}/x")}
    home = Hits(answers)
    async with serve(home.handle) as port:
        guard = NetworkGuard()
        await guard.admit_url(f"http://127.0.0.1:{port}/")
        async with Fetcher(user_agent=UA, guard=guard) as fetcher:
            assert (await fetcher.fetch(f"http://127.0.0.1:{port}/none")).status == 404
            with pytest.raises(AddressRefused) as refused:
                await fetcher.fetch(f"http://127.0.0.1:{port}/go")
            with pytest.raises(AddressRefused):
                await fetcher.fetch(f"http://localhost:{secret.port}/direct")
    assert refused.value.url == f"http://127.0.0.1:{secret.port}/x"
    assert (dict(home.hits), dict(secret.hits)) == ({"/none": 1, "/go": 1}, {})


async def test_a_proxy_is_sent_the_normalized_url_the_guard_checked(secret: Hits) -> None:
    site = Hits({"/page": html()})
    async with serve(site.handle) as port, HttpProxy() as proxy:
        guard = NetworkGuard()
        await guard.admit_url(f"http://127.0.0.1:{port}/")
        async with Fetcher(user_agent=UA, guard=guard) as fetcher:
            # A proxy that decodes hosts would reach 127.0.0.1's other port with the first.
            for written in (
                f"http://%31%32%37.0.0.1:{secret.port}/x",
                f"http://127%2e0%2e0%2e1:{secret.port}/x",
                f"http://0x7f.1:{secret.port}/x",
                f"http://[64:ff9b::7f00:1]:{secret.port}/x",
            ):
                with pytest.raises(AddressRefused) as refused:
                    await fetcher.fetch(written, proxy=proxy.url)
                assert refused.value.url == written
            with pytest.raises(AddressRefused, match="does not resolve here"):
                await fetcher.fetch(f"http://nowhere.invalid:{port}/", proxy=proxy.url)
            sent = await fetcher.fetch(
                f"http://%31%32%37.0.0.1:{port}/page?utm_source=x#top", proxy=proxy.url
            )
    assert sent.status == 200
    assert proxy.targets == [f"http://127.0.0.1:{port}/page"]
    assert (dict(secret.hits), dict(site.hits)) == ({}, {"/page": 1})


# -- crawls -------------------------------------------------------------------------------------


async def crawl(settings: Any, seeds: list[str]) -> tuple[Crawler, list[dict], Any]:
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        crawler = Crawler(settings, store, seeds)
        await crawler.run()
        rows = list(store.iter_urls(crawler.crawl_id))
        domain = await store.get_domain(f"127.0.0.1:{seeds[0].split(':')[2].split('/')[0]}")
    return crawler, rows, domain


async def test_a_robots_redirect_to_another_port_reads_nothing(
    make_settings: SettingsFactory, secret: Hits
) -> None:
    target = f"http://127.0.0.1:{secret.port}/secret"
    site = Hits(
        {
            "/robots.txt": redirect(302, target),
            "/": html(),
        }
    )
    async with serve(site.handle) as port:
        # Even with the other port inside the scope, the guard alone keeps it out.
        settings = make_settings(
            crawl_allow_domains=[f"127.0.0.1:{secret.port}"], discovery_sitemaps=False
        )
        _, rows, domain = await crawl(settings, [f"http://127.0.0.1:{port}/"])
    assert dict(secret.hits) == {}
    assert dict(site.hits) == {"/robots.txt": 1, "/": 1}
    assert (domain.robots_txt, domain.robots_status, domain.allowed) == (None, None, True)
    assert [(r["url"], r["status"]) for r in rows] == [(f"http://127.0.0.1:{port}/", "completed")]


async def test_a_robots_redirect_out_of_scope_is_refused_before_the_guard(
    make_settings: SettingsFactory, secret: Hits
) -> None:
    target = f"http://127.0.0.1:{secret.port}/secret"
    site = Hits({"/robots.txt": redirect(302, target)})
    async with serve(site.handle) as port:
        # The allow-list admits the other port: only the scope check stands in the way.
        settings = make_settings(network_allow=["127.0.0.0/8"])
        await crawl(settings, [f"http://127.0.0.1:{port}/"])
    assert dict(secret.hits) == {}


async def test_a_seed_admits_its_origin_not_its_address(
    make_settings: SettingsFactory, secret: Hits
) -> None:
    other = f"http://127.0.0.1:{secret.port}"
    links = f'<a href="{other}/linked">l</a><a href="/away">r</a>'
    site = Hits(
        {
            "/": html(links),
            "/away": redirect(301, f"{other}/redirected"),
        }
    )
    async with serve(site.handle) as port:
        settings = make_settings(
            crawl_allow_domains=[f"127.0.0.1:{secret.port}"], discovery_sitemaps=False
        )
        _, rows, _ = await crawl(settings, [f"http://127.0.0.1:{port}/"])
    assert dict(secret.hits) == {}
    outcome = {r["url"].removeprefix(f"http://127.0.0.1:{port}"): r["status"] for r in rows}
    assert outcome[f"{other}/linked"] == "failed"
    assert outcome["/away"] == "failed"
    errors = {r["url"]: r["error_class"] for r in rows if r["status"] == "failed"}
    assert errors == {
        f"{other}/linked": "AddressRefused",
        f"http://127.0.0.1:{port}/away": "AddressRefused",
    }
    # What `harvestman errors` and the dead letters show: the setting that admits it, once.
    linked = next(r["error"] for r in rows if r["url"] == f"{other}/linked")
    assert linked.endswith(
        f"127.0.0.1 port {secret.port} is a non-public address outside the network allow-list"
        f" (network_allow: '127.0.0.1:{secret.port}' admits it)"
    )
    assert linked.count("network_allow") == 1


async def test_the_allow_list_admits_what_a_seed_links_to(
    make_settings: SettingsFactory, secret: Hits
) -> None:
    other = f"http://127.0.0.1:{secret.port}"
    site = Hits({"/": html(f'<a href="{other}/ok">l</a>')})
    async with serve(site.handle) as port:
        settings = make_settings(
            crawl_allow_domains=[f"127.0.0.1:{secret.port}"],
            network_allow=[f"127.0.0.1:{secret.port}"],
        )
        await crawl(settings, [f"http://127.0.0.1:{port}/"])
    assert secret.hits["/ok"] == 1


def product_page(image: str) -> Answer:
    data = {"@context": "https://schema.org", "@type": "Product", "name": "Mug", "image": [image]}
    body = (
        f'<html><head><title>Mug</title><script type="application/ld+json">{json.dumps(data)}'
        f"</script></head><body><p>{'words ' * 200}</p></body></html>"
    )
    return lambda: web.Response(text=body, content_type="text/html")


async def test_an_image_url_goes_to_the_proxy_only_as_the_guard_checked_it(
    make_settings: SettingsFactory, secret: Hits
) -> None:
    written = f"http://%31%32%37.0.0.1:{secret.port}/x.png"
    site = Hits({"/": product_page(written)})
    async with serve(site.handle) as port, HttpProxy() as proxy:
        settings = make_settings(
            discovery_sitemaps=False,
            crawl_images=True,
            proxy_urls=[proxy.url],
        )
        _, rows, _ = await crawl(settings, [f"http://127.0.0.1:{port}/"])
    image = next(r for r in rows if r["kind"] == "image")
    assert (image["url"], image["status"], image["error_class"]) == (
        written,
        "failed",
        "AddressRefused",
    )
    assert dict(secret.hits) == {}
    # The proxy carried the site's own requests, never the image in any form.
    assert all(f":{secret.port}/" not in target for target in proxy.targets)
    assert f"http://127.0.0.1:{port}/" in proxy.targets


# -- patterns -----------------------------------------------------------------------------------


def test_a_catastrophic_pattern_matches_in_linear_time() -> None:
    # With Python's re this search backtracks for longer than the test's timeout.
    scope = Scope(["http://example.org/"], include=["(.*.*)*X"])
    assert scope.check("http://example.org/" + "a" * 50_000) == "not_included"
    assert scope.check("http://example.org/" + "a" * 50_000 + "X") is None


@pytest.mark.parametrize(
    ("pattern", "limit", "reason"),
    [
        (r"(a)\1", 100, "invalid escape sequence: \\1"),
        (r"(?=x)", 100, "invalid perl operator: (?="),
        ("a" * 101, 100, "101 characters, longer than the limit (100)"),
    ],
)
def test_patterns_re2_cannot_take_are_refused(pattern: str, limit: int, reason: str) -> None:
    with pytest.raises(PatternError) as refused:
        compile_pattern(pattern, limit)
    assert refused.value.reason == reason


def test_settings_bound_pattern_length(make_settings: SettingsFactory) -> None:
    from harvestman.config import load_settings
    from harvestman.errors import ConfigError

    with pytest.raises(ConfigError, match="longer than pattern_max_length"):
        load_settings(crawl_include=["a" * 20], pattern_max_length=10)
    assert make_settings(api_allow_networks=["10.0.0.0/8"]).network_allow == ["10.0.0.0/8"]


# -- the renderer -------------------------------------------------------------------------------


async def test_seeds_admit_literal_and_localhost_origins_but_not_dns_answers() -> None:
    guard = NetworkGuard()
    await guard.admit_url("http://127.0.0.1:8089/")
    await guard.admit_url("http://localhost:8090/")
    await guard.admit_url("http://[::1]:8091/x")
    # A name's answer at crawl start could be a rebinding attacker's: it admits nothing.
    await guard.admit_url("http://rebind.invalid:8092/")
    assert {(str(a), p) for a, p in guard.origins} >= {
        ("127.0.0.1", 8089),
        ("127.0.0.1", 8090),
        ("::1", 8091),
    }
    assert {p for _, p in guard.origins} == {8089, 8090, 8091}


SCRIPTED = (
    "<html><head><title>App</title><script src='{other}/lib.js'></script></head><body>"
    "<p id=p>waiting</p><script>fetch('{other}/api').then(() => 0, () => 0);"
    "document.getElementById('p').textContent = 'drawn';</script></body></html>"
)


async def test_the_browser_reaches_only_what_the_guard_allows(secret: Hits) -> None:
    from harvestman.render import renderer_unavailable

    browser = "/usr/bin/chromium"
    if renderer_unavailable(browser) is not None:
        pytest.skip(f"rendering needs Chromium and Playwright: {renderer_unavailable(browser)}")
    other = f"http://127.0.0.1:{secret.port}"
    site = Hits(
        {"/": lambda: web.Response(text=SCRIPTED.format(other=other), content_type="text/html")}
    )
    async with serve(site.handle) as port:
        guarded = NetworkGuard()
        guarded.admit(ip("127.0.0.1"), port)
        open_to_both = NetworkGuard([f"127.0.0.1:{port}", f"127.0.0.1:{secret.port}"])
        for guard in (guarded, open_to_both):
            renderer = Renderer(browser=browser, user_agent=UA, settle=0.5, guard=guard)
            try:
                rendered = await renderer.render(f"http://127.0.0.1:{port}/")
            finally:
                await renderer.close()
            assert b"drawn" in rendered.html
            if guard is guarded:
                assert dict(secret.hits) == {}
    # The same page with the other port allowed does reach it: the refusal above was the guard's.
    assert set(secret.hits) == {"/lib.js", "/api"}
    assert site.hits["/"] == 2


def test_a_remembered_refusal_of_an_ip_literal_ends_when_its_origin_is_admitted() -> None:
    guard = NetworkGuard()
    with pytest.raises(AddressRefused):
        guard.check_host("127.0.0.1", 8089)
    guard.check_host("8.8.8.8", 80)  # public: allowed, and remembered too

    guard.admit(ipaddress.ip_address("127.0.0.1"), 8089)

    guard.check_host("127.0.0.1", 8089)
    with pytest.raises(AddressRefused):
        guard.check_host("127.0.0.1", 8090)
