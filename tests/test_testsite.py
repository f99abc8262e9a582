"""The test site serves what its manifest (``testsite.EXPECTED``) says; no crawler involved."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from multidict import CIMultiDictProxy
from protego import Protego
from selectolax.lexbor import LexborHTMLParser
from yarl import URL

from harvestman.errors import HttpStatusError
from testsite import (
    BOMB_INFLATED_BYTES,
    EXPECTED,
    EXPECTED_DEPTHS,
    EXPECTED_HITS,
    EXPECTED_STATUS,
    EXPECTED_TITLES,
    MiB,
    TestSite,
)

SLOW = 0.3


@pytest.fixture
async def site() -> AsyncIterator[TestSite]:
    async with TestSite(slow_seconds=SLOW) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        yield session


async def fetch(http: aiohttp.ClientSession, url: str) -> tuple[int, CIMultiDictProxy[str], bytes]:
    async with http.get(url, allow_redirects=False) as response:
        return response.status, response.headers, await response.read()


async def test_site_serves_on_an_ephemeral_loopback_port(site: TestSite) -> None:
    assert site.port > 0
    assert site.host == f"127.0.0.1:{site.port}"
    assert site.base == f"http://127.0.0.1:{site.port}"
    assert site.url("/about.html") == f"http://127.0.0.1:{site.port}/about.html"
    assert site.offsite_base == f"http://localhost:{site.port}"


async def test_robots_txt_is_exactly_the_documented_rules(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    status, _, body = await fetch(http, site.url("/robots.txt"))

    assert status == 200
    assert body.decode() == (
        "# Harvestman test site\n"
        "User-agent: otherbot\n"
        "Disallow: /\n"
        "\n"
        "User-agent: *\n"
        "Disallow: /private/\n"
        "Allow: /private/open.html\n"
        "\n"
        f"Sitemap: http://127.0.0.1:{site.port}/sitemap.xml\n"
    )
    rules = Protego.parse(body.decode())
    assert rules.crawl_delay("harvestman") is None
    assert not rules.can_fetch(site.url("/about.html"), "otherbot")
    for path in EXPECTED["blocked"]:
        assert not rules.can_fetch(site.url(path), "harvestman"), path
    for path in EXPECTED["completed"] | EXPECTED["failed"].keys():
        assert rules.can_fetch(site.url(path), "harvestman"), path


async def test_crawl_delay_is_added_to_the_star_group_when_asked(
    http: aiohttp.ClientSession,
) -> None:
    async with TestSite(crawl_delay=0.5) as site:
        _, _, body = await fetch(http, site.url("/robots.txt"))

    assert "Allow: /private/open.html\nCrawl-delay: 0.5\n" in body.decode()
    rules = Protego.parse(body.decode())
    assert rules.crawl_delay("harvestman") == 0.5
    assert rules.crawl_delay("otherbot") is None


@pytest.mark.parametrize(
    ("path", "first", "second"),
    [
        ("/status/404", 404, 404),
        ("/status/500", 500, 500),
        ("/status/503-once", 503, 200),
        ("/status/429-once", 429, 200),
        ("/about.html", 200, 200),
    ],
)
async def test_statuses_on_two_consecutive_requests(
    site: TestSite, http: aiohttp.ClientSession, path: str, first: int, second: int
) -> None:
    first_status, headers, _ = await fetch(http, site.url(path))
    second_status, _, _ = await fetch(http, site.url(path))

    assert (first_status, second_status) == (first, second)
    assert headers.get("Retry-After") == ("1" if path == "/status/429-once" else None)


async def test_reset_counts_rearms_the_first_time_failures(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    assert (await fetch(http, site.url("/status/503-once")))[0] == 503
    assert (await fetch(http, site.url("/status/503-once")))[0] == 200

    site.reset_counts()

    assert site.hits == {}
    assert site.log == []
    assert (await fetch(http, site.url("/status/503-once")))[0] == 503


async def test_every_failed_http_path_has_its_documented_status(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    http_failures = {p for p, cls in EXPECTED["failed"].items() if cls is HttpStatusError}
    assert http_failures == EXPECTED_STATUS.keys()
    for path, expected_status in EXPECTED_STATUS.items():
        assert (await fetch(http, site.url(path)))[0] == expected_status


async def test_completed_pages_answer_200_with_their_titles(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    followed = {"/redirect/1": "/redirect/final.html"}
    once = {"/status/503-once", "/status/429-once"}
    for path in sorted(EXPECTED["completed"]):
        if path in once:
            await fetch(http, site.url(path))
        status, headers, body = await fetch(http, site.url(followed.get(path, path)))
        assert status == 200, path
        if path in EXPECTED_TITLES:
            assert headers["Content-Type"].startswith("text/html"), path
            charset = {
                "/charset/meta-1252.html": "cp1252",
                "/charset/wrong-header.html": "iso-8859-1",
                "/charset/shift-jis.html": "shift_jis",
                "/malformed.html": "latin-1",
            }.get(path, "utf-8")
            title = LexborHTMLParser(body.decode(charset)).css_first("title")
            assert title is not None, path
            assert title.text() == EXPECTED_TITLES[path], path


@pytest.mark.parametrize(
    ("path", "locations"),
    [
        ("/redirect/1", ["/redirect/2", "3", "/redirect/final.html"]),
        ("/loop/a", ["/loop/b", "/loop/a"]),
        ("/hops/1", [f"/hops/{n}" for n in range(2, 9)]),
        ("/redirect/to-private", ["/private/x"]),
    ],
)
async def test_redirect_chains_hop_by_hop(
    site: TestSite, http: aiohttp.ClientSession, path: str, locations: list[str]
) -> None:
    seen: list[str] = []
    url = URL(site.url(path))
    for _ in range(len(locations)):
        status, headers, _ = await fetch(http, str(url))
        assert status in (301, 302, 307)
        seen.append(headers["Location"])
        url = url.join(URL(headers["Location"]))

    assert seen == locations
    assert (await fetch(http, str(url)))[0] in (200, 302)


async def test_offsite_redirect_and_link_point_at_localhost(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    _, headers, _ = await fetch(http, site.url("/redirect/offsite"))
    _, _, index = await fetch(http, site.url("/"))

    assert headers["Location"] == f"http://localhost:{site.port}/offsite-target"
    assert f'href="http://localhost:{site.port}/elsewhere"' in index.decode()


async def test_index_links_every_depth_one_path(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    _, _, body = await fetch(http, site.url("/"))
    hrefs = [a.attributes["href"] or "" for a in LexborHTMLParser(body.decode()).css("a[href]")]
    resolved = {URL(site.url("/")).join(URL(href)) for href in hrefs}
    on_site = {url.raw_path_qs for url in resolved if url.host == "127.0.0.1"}

    assert {path for path, depth in EXPECTED_DEPTHS.items() if depth == 1} <= on_site
    assert {"mailto:crawler@example.com", "javascript:void(0)", "tel:+15550100"} <= set(hrefs)


async def test_gzip_bomb_is_small_on_the_wire_and_inflates_to_200_mib(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    status, headers, body = await fetch(http, site.url("/bomb.html"))

    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Content-Type"] == "text/html"
    assert int(headers["Content-Length"]) == len(body) < 300_000
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    inflated, pending = 0, body
    while pending:
        inflated += len(inflater.decompress(pending, 16 * MiB))
        pending = inflater.unconsumed_tail
    assert inflated == BOMB_INFLATED_BYTES == 200 * MiB


async def test_big_bodies_with_and_without_content_length(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    _, with_length, body = await fetch(http, site.url("/big/with-length.html"))
    _, chunked, chunked_body = await fetch(http, site.url("/big/chunked.html"))

    assert int(with_length["Content-Length"]) == len(body) == 2 * MiB
    assert "Content-Length" not in chunked
    assert chunked["Transfer-Encoding"] == "chunked"
    assert chunked_body == body


async def test_slow_page_answers_only_after_slow_seconds(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    # A client that waits less than SLOW seconds gets no answer; one that waits gets the page.
    with pytest.raises(TimeoutError):
        async with http.get(site.url("/slow.html"), timeout=aiohttp.ClientTimeout(total=0.1)):
            pass
    status, _, body = await fetch(http, site.url("/slow.html"))

    assert (status, b"<title>Slow page</title>" in body) == (200, True)
    assert site.hits["/slow.html"] == 2


@pytest.mark.parametrize(
    ("path", "content_type", "magic"),
    [
        ("/files/image.png", "image/png", b"\x89PNG\r\n\x1a\n"),
        ("/files/report.pdf", "application/pdf", b"%PDF-"),
        ("/files/data.json", "application/json", b"{"),
    ],
)
async def test_non_html_files(
    site: TestSite, http: aiohttp.ClientSession, path: str, content_type: str, magic: bytes
) -> None:
    status, headers, body = await fetch(http, site.url(path))

    assert (status, headers["Content-Type"]) == (200, content_type)
    assert body.startswith(magic)


async def test_charset_headers(site: TestSite, http: aiohttp.ClientSession) -> None:
    _, wrong, wrong_body = await fetch(http, site.url("/charset/wrong-header.html"))
    _, sjis, _ = await fetch(http, site.url("/charset/shift-jis.html"))
    _, meta, meta_body = await fetch(http, site.url("/charset/meta-1252.html"))
    _, none, _ = await fetch(http, site.url("/charset/none.html"))

    assert wrong["Content-Type"] == "text/html; charset=utf-8"
    with pytest.raises(UnicodeDecodeError):
        wrong_body.decode("utf-8")
    assert sjis["Content-Type"] == "text/html; charset=Shift_JIS"
    assert (meta["Content-Type"], none["Content-Type"]) == ("text/html", "text/html")
    assert b'<meta charset="windows-1252">' in meta_body


async def test_hits_are_keyed_by_path_and_query_as_received(
    site: TestSite, http: aiohttp.ClientSession
) -> None:
    await fetch(http, site.url("/item?utm_source=x&id=1"))
    await fetch(http, site.url("/item?id=1"))
    await fetch(http, site.url("/item?id=1"))
    await fetch(http, site.url("/no-such-page"))

    assert site.hits == {"/item?utm_source=x&id=1": 1, "/item?id=1": 2, "/no-such-page": 1}
    assert [path for _, path in site.log] == [
        "/item?utm_source=x&id=1",
        "/item?id=1",
        "/item?id=1",
        "/no-such-page",
    ]
    times = [t for t, _ in site.log]
    assert times == sorted(times)  # arrival order, by the log's own clock


def test_manifest_is_consistent() -> None:
    completed, failed = EXPECTED["completed"], EXPECTED["failed"].keys()
    blocked, never = EXPECTED["blocked"], EXPECTED["never_requested"]

    assert not completed & failed
    assert not (completed | failed) & blocked
    assert blocked <= never
    assert not (completed | failed) & never
    assert all(EXPECTED_HITS[p] >= 1 for p in completed | failed)
    assert all(EXPECTED_HITS[p] == 0 for p in never)
    assert EXPECTED_HITS["/status/500"] == EXPECTED_HITS["/slow.html"] == 4
    assert EXPECTED_TITLES.keys() <= completed
    assert len(completed) == 24


async def test_the_quick_variant_links_no_slow_page_and_asks_for_no_wait(
    http: aiohttp.ClientSession,
) -> None:
    async with TestSite(quick=True) as quick:
        _, _, index = await fetch(http, quick.url("/"))
        links = {node.attributes.get("href") for node in LexborHTMLParser(index).css("a")}
        status, headers, _ = await fetch(http, quick.url("/status/429-once"))

    assert "/slow.html" not in links
    assert "/big/with-length.html" in links
    assert (status, headers["Retry-After"]) == (429, "0")
    assert "/slow.html" not in quick.expected["failed"]
    assert "/slow.html" not in quick.expected_depths
    assert quick.expected_hits["/slow.html"] == 0
    # Everything else is the whole site's.
    assert quick.expected["completed"] == EXPECTED["completed"]
    assert quick.expected_depths == {p: d for p, d in EXPECTED_DEPTHS.items() if p != "/slow.html"}
    assert {p: n for p, n in quick.expected_hits.items() if p != "/slow.html"} == {
        p: n for p, n in EXPECTED_HITS.items() if p != "/slow.html"
    }
