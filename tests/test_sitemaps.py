"""Sitemaps, sitemap indexes, text lists and feeds: parsed by content, streamed, never trusted."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any
from xml.parsers import expat

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.crawl.fetch import Fetcher
from harvestman.discovery.sitemaps import Sitemap, SitemapUrl, _parse_datetime, parse_sitemap
from testsite import TestSite

SITEMAP = "https://example.com/sitemap.xml"
NS_09 = "http://www.sitemaps.org/schemas/sitemap/0.9"
UA = "Harvestman/0.1 (+https://harvestman.example/bot)"
MIB = 1024 * 1024


def urlset(*entries: str, open_tag: str = f'<urlset xmlns="{NS_09}">') -> bytes:
    body = "".join(f"<url><loc>{loc}</loc></url>" for loc in entries)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{open_tag}{body}</urlset>\n'.encode()


def locs(sitemap: Sitemap) -> list[str]:
    return [entry.loc for entry in sitemap.urls]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


class FeedCountingParser:
    """An expat parser that records the size of every ``Parse`` call: the work a parse did,
    counted in bytes instead of seconds."""

    def __init__(self, parser: Any, fed: list[int]) -> None:
        object.__setattr__(self, "_parser", parser)
        object.__setattr__(self, "_fed", fed)

    def Parse(self, data: bytes, final: bool = False) -> int:  # expat's name
        self._fed.append(len(data))
        return int(self._parser.Parse(data, final))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._parser, name, value)


@pytest.fixture
def expat_feeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the chunks every expat parser created in the test was fed."""
    fed: list[int] = []
    create = expat.ParserCreate
    monkeypatch.setattr(
        expat, "ParserCreate", lambda *args, **kw: FeedCountingParser(create(*args, **kw), fed)
    )
    return fed


# --- urlset ------------------------------------------------------------------------------------


def test_urlset_keeps_loc_as_written_and_lastmod() -> None:
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="{NS_09}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>
      https://Example.com/a/./b?utm_source=sitemap&amp;z=1&amp;a=2
    </loc>
    <lastmod> 2024-05-06T07:08:09+02:00 </lastmod>
    <changefreq>daily</changefreq>
    <priority>0.8</priority>
    <image:image><image:loc>https://cdn.example.com/photo.jpg</image:loc></image:image>
  </url>
  <url><loc>https://example.com/no-date</loc></url>
</urlset>
""".encode()

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap == Sitemap(
        urls=[
            # Trimmed and decoded, nothing else: normalizing is the frontier's (test_listings.py).
            SitemapUrl(
                "https://Example.com/a/./b?utm_source=sitemap&z=1&a=2", utc(2024, 5, 6, 5, 8, 9)
            ),
            SitemapUrl("https://example.com/no-date", None),
        ],
        sitemaps=[],
        errors=[],
        kind="urlset",
    )


def test_entries_are_kept_as_written_and_bad_ones_skipped_with_their_reasons() -> None:
    body = (
        b"<urlset>"
        b"<url><loc>https://example.com/ok</loc><lastmod>yesterday</lastmod></url>"
        b"<url><loc>/relative/path</loc></url>"
        b"<url><loc>javascript:alert(1)</loc></url>"
        b"<url><loc>https://exa mple.com/</loc></url>"
        b"<url><lastmod>2024-01-01</lastmod></url>"
        b"<url><loc>https://example.com/" + b"x" * 3000 + b"</loc></url>"
        b"<url><loc>https://example.com/last</loc></url>"
        b"</urlset>"
    )

    sitemap = parse_sitemap(body, SITEMAP)

    # A relative <loc> is not resolved (sitemaps.org: it "must begin with the protocol"); the
    # frontier refuses it and the others with their reasons (tests/test_listings.py).
    assert locs(sitemap) == [
        "https://example.com/ok",
        "/relative/path",
        "javascript:alert(1)",
        "https://exa mple.com/",
        "https://example.com/" + "x" * 3000,
        "https://example.com/last",
    ]
    assert sitemap.urls[0].lastmod is None
    assert sitemap.errors == [
        "bad lastmod 'yesterday' of https://example.com/ok",
        "<url> without <loc>",
    ]


def test_errors_about_entries_are_listed_up_to_100_then_counted() -> None:
    body = b"<urlset>" + b"<url><lastmod>2024</lastmod></url>" * 250 + b"</urlset>"

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap.urls == []
    assert sitemap.errors == ["<url> without <loc>"] * 100 + ["150 more skipped entries not listed"]


# --- tolerated variations ----------------------------------------------------------------------

VARIANTS = {
    "0.9 namespace": f'<urlset xmlns="{NS_09}"><url><loc>https://example.com/a</loc></url></urlset>',
    "old Google namespace": (
        '<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">'
        "<url><loc>https://example.com/a</loc></url></urlset>"
    ),
    "no namespace": "<urlset><url><loc>https://example.com/a</loc></url></urlset>",
    "prefixed": (
        f'<sm:urlset xmlns:sm="{NS_09}"><sm:url><sm:loc>https://example.com/a</sm:loc>'
        "</sm:url></sm:urlset>"
    ),
    "undeclared prefix": "<x:urlset><x:url><x:loc>https://example.com/a</x:loc></x:url></x:urlset>",
    "upper-case tags": "<URLSET><URL><LOC>https://example.com/a</LOC></URL></URLSET>",
    "mixed-case tags": "<UrlSet><Url><Loc>https://example.com/a</Loc></Url></UrlSet>",
    "white space around": (
        "<urlset>\n <url>\n  <loc>\n\t https://example.com/a \r\n</loc>\n</url></urlset>"
    ),
    "CDATA": "<urlset><url><loc><![CDATA[ https://example.com/a ]]></loc></url></urlset>",
    "split by a comment": "<urlset><url><loc>https://example.com<!-- x -->/a</loc></url></urlset>",
    "junk after the root": "<urlset><url><loc>https://example.com/a</loc></url></urlset>\n<p>x</p>",
    "two roots": "<urlset><url><loc>https://example.com/a</loc></url></urlset><urlset></urlset>",
    "leading white space": "\n\n   <?xml version='1.0'?><urlset><url><loc>https://example.com/a</loc></url></urlset>",
    "character reference": "<urlset><url><loc>https://example.com/&#97;</loc></url></urlset>",
    "DOCTYPE without entities": (
        '<!DOCTYPE urlset PUBLIC "-//X//DTD X//EN" "http://127.0.0.1:9/x.dtd">'
        "<urlset><url><loc>https://example.com/a</loc></url></urlset>"
    ),
    "two locs (the first wins)": (
        "<urlset><url><loc>https://example.com/a</loc><loc>https://example.com/b</loc></url>"
        "</urlset>"
    ),
}  # fmt: skip


@pytest.mark.parametrize("text", VARIANTS.values(), ids=VARIANTS.keys())
def test_variations_read_the_same(text: str) -> None:
    sitemap = parse_sitemap(text.encode(), SITEMAP)

    assert sitemap == Sitemap([SitemapUrl("https://example.com/a", None)], [], [], "urlset")


@pytest.mark.parametrize(
    "prefix", [b"\xef\xbb\xbf", b"\xef\xbb\xbf\n  "], ids=["BOM", "BOM and white space"]
)
def test_byte_order_mark_is_skipped(prefix: bytes) -> None:
    sitemap = parse_sitemap(prefix + urlset("https://example.com/a"), SITEMAP)

    assert locs(sitemap) == ["https://example.com/a"]
    assert sitemap.errors == []


def test_escaped_ampersands_and_non_ascii() -> None:
    body = (
        '<?xml version="1.0" encoding="UTF-8"?><urlset>'
        "<url><loc>https://example.com/search?q=a&amp;page=2</loc></url>"
        "<url><loc>https://bücher.example/straße?x=é</loc></url>"
        "</urlset>"
    ).encode()

    sitemap = parse_sitemap(body, SITEMAP)

    assert locs(sitemap) == [
        "https://example.com/search?q=a&page=2",
        "https://bücher.example/straße?x=é",
    ]


@pytest.mark.parametrize(
    ("declaration", "encoded"),
    [
        ("UTF-16", "<urlset><url><loc>https://example.com/é</loc></url></urlset>".encode("utf-16")),
        ("ISO-8859-1", "<urlset><url><loc>https://example.com/é</loc></url></urlset>".encode("latin-1")),
        ("windows-1252", "<urlset><url><loc>https://example.com/é</loc></url></urlset>".encode("cp1252")),
    ],
)  # fmt: skip
def test_declared_encodings(declaration: str, encoded: bytes) -> None:
    prolog = f'<?xml version="1.0" encoding="{declaration}"?>'
    if declaration == "UTF-16":
        body = (prolog + encoded.decode("utf-16")).encode("utf-16")
    else:
        body = prolog.encode() + encoded

    assert locs(parse_sitemap(body, SITEMAP)) == ["https://example.com/é"]


def test_multi_byte_encoding_other_than_unicode_is_reported() -> None:
    body = b'<?xml version="1.0" encoding="Shift_JIS"?><urlset></urlset>'

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap.urls == []
    assert sitemap.errors == ["unsupported XML encoding: multi-byte encodings are not supported"]


# --- lastmod -----------------------------------------------------------------------------------

LASTMODS = [
    ("2024", utc(2024, 1, 1)),
    ("2024-05", utc(2024, 5, 1)),
    ("2024-05-06", utc(2024, 5, 6)),
    ("2024-05-06T07:08Z", utc(2024, 5, 6, 7, 8)),
    ("2024-05-06T07:08:09Z", utc(2024, 5, 6, 7, 8, 9)),
    ("2024-05-06T07:08:09.5Z", utc(2024, 5, 6, 7, 8, 9, 500_000)),
    ("2024-05-06T07:08:09.123456789+00:00", utc(2024, 5, 6, 7, 8, 9, 123_456)),
    ("2024-05-06T07:08:09+02:00", utc(2024, 5, 6, 5, 8, 9)),
    ("2024-05-06T07:08:09-0530", utc(2024, 5, 6, 12, 38, 9)),
    ("2024-05-06T07:08:09+02", utc(2024, 5, 6, 5, 8, 9)),
    ("2024-05-06 07:08:09", utc(2024, 5, 6, 7, 8, 9)),  # no zone: read as UTC
    ("2024-05-06t07:08:09z", utc(2024, 5, 6, 7, 8, 9)),
    ("2016-12-31T23:59:60Z", utc(2016, 12, 31, 23, 59, 59)),  # a leap second
    ("Mon, 06 May 2024 07:08:09 GMT", utc(2024, 5, 6, 7, 8, 9)),  # RFC 822, as in RSS
    ("Mon, 06 May 2024 07:08:09 +0200", utc(2024, 5, 6, 5, 8, 9)),
    ("6 May 2024 07:08 -0000", utc(2024, 5, 6, 7, 8)),
    ("0001-01-01T00:00:00+01:00", None),  # before year 1 once in UTC
    ("2024-13-01", None),
    ("2024-02-30", None),
    ("2024-05-06T24:00:00Z", None),
    ("yesterday", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), LASTMODS, ids=[text for text, _ in LASTMODS])
def test_lastmod_formats(text: str, expected: datetime | None) -> None:
    assert _parse_datetime(text) == expected
    if expected is not None:
        assert _parse_datetime(text).tzinfo is UTC  # type: ignore[union-attr]


@given(st.text(max_size=60))
def test_date_parsing_never_raises(text: str) -> None:
    value = _parse_datetime(text)
    assert value is None or value.tzinfo is UTC


# --- sitemap index -----------------------------------------------------------------------------


def test_index_lists_child_sitemaps() -> None:
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="{NS_09}">
  <sitemap><loc>https://example.com/sitemap-1.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
  <sitemap><loc> https://example.com/sitemap-2.xml </loc></sitemap>
  <sitemap><loc>sitemap-3.xml</loc></sitemap>
</sitemapindex>""".encode()

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap == Sitemap(
        urls=[],
        sitemaps=[
            "https://example.com/sitemap-1.xml.gz",
            "https://example.com/sitemap-2.xml",
            "sitemap-3.xml",  # relative: kept as written, refused by the frontier
        ],
        errors=[],
        kind="index",
    )


@pytest.fixture
async def sitemap_server() -> AsyncIterator[tuple[str, Callable[[str, bytes], None], Counter[str]]]:
    """A real server on 127.0.0.1: ``(base, put(path, body), hits)``; ``.gz`` paths are raw gzip."""
    files: dict[str, bytes] = {}
    hits: Counter[str] = Counter()

    async def handle(request: web.Request) -> web.Response:
        hits[request.path] += 1
        if request.path not in files:
            return web.Response(status=404)
        content_type = "application/gzip" if request.path.endswith(".gz") else "application/xml"
        return web.Response(body=files[request.path], content_type=content_type)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", files.__setitem__, hits
    finally:
        await runner.cleanup()


async def walk(fetcher: Fetcher, start: str) -> tuple[list[str], list[str], list[str]]:
    """Fetch and parse sitemaps from ``start`` as the engine will: (pages, sitemaps, errors)."""
    pages: list[str] = []
    seen: list[str] = []
    errors: list[str] = []
    queue = [start]
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.append(url)
        result = await fetcher.fetch(url, max_bytes=50 * MIB)
        sitemap = parse_sitemap(result.body, url)
        pages += locs(sitemap)
        queue += sitemap.sitemaps
        errors += [f"{url}: {error}" for error in sitemap.errors]
    return pages, seen, errors


async def test_nested_indexes_are_followed_to_their_pages(
    sitemap_server: tuple[str, Callable[[str, bytes], None], Counter[str]],
) -> None:
    base, put, hits = sitemap_server
    put(
        "/sitemap.xml",
        f"<sitemapindex><sitemap><loc>{base}/news-index.xml</loc></sitemap>"
        f"<sitemap><loc>{base}/pages.xml.gz</loc></sitemap>"
        f"<sitemap><loc>{base}/broken.xml</loc></sitemap></sitemapindex>".encode(),
    )
    put(
        "/news-index.xml",
        f"<sitemapindex><sitemap><loc>{base}/news-2024.txt</loc></sitemap>"
        f"<sitemap><loc>{base}/sitemap.xml</loc></sitemap></sitemapindex>".encode(),
    )
    put("/news-2024.txt", f"{base}/news/1\n{base}/news/2\n".encode())
    put("/pages.xml.gz", gzip.compress(urlset(f"{base}/about", f"{base}/contact")))
    put("/broken.xml", urlset(f"{base}/kept", f"{base}/cut")[:-30])

    async with Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        pages, seen, errors = await walk(fetcher, f"{base}/sitemap.xml")

    assert pages == [
        f"{base}/about",
        f"{base}/contact",
        f"{base}/kept",
        f"{base}/news/1",
        f"{base}/news/2",
    ]
    assert seen == [
        f"{base}/sitemap.xml",
        f"{base}/news-index.xml",
        f"{base}/pages.xml.gz",
        f"{base}/broken.xml",
        f"{base}/news-2024.txt",
    ]
    assert errors == [f"{base}/broken.xml: malformed XML: no element found: line 2, column 137"]
    assert hits["/sitemap.xml"] == 1


async def test_the_test_site_sitemap_from_robots_txt() -> None:
    async with TestSite() as site, Fetcher(user_agent=UA, timeout=5.0) as fetcher:
        base = site.base
        robots = await fetcher.fetch(f"{base}/robots.txt")
        (line,) = [x for x in robots.body.decode().splitlines() if x.startswith("Sitemap:")]
        result = await fetcher.fetch(line.removeprefix("Sitemap:").strip())

    sitemap = parse_sitemap(result.body, result.url)

    assert sitemap == Sitemap(
        [SitemapUrl(f"{base}/", None), SitemapUrl(f"{base}/about.html", None)],
        [],
        [],
        "urlset",
    )


# --- gzip --------------------------------------------------------------------------------------


def test_gzip_is_detected_by_content() -> None:
    body = gzip.compress(urlset("https://example.com/a", "https://example.com/b"))

    sitemap = parse_sitemap(body, "https://example.com/sitemap.xml")  # no .gz in the name

    assert locs(sitemap) == ["https://example.com/a", "https://example.com/b"]
    assert sitemap.errors == []


def test_gzip_with_several_members_is_read_whole() -> None:
    text = urlset(*(f"https://example.com/{n}" for n in range(2000)))
    members = b"".join(gzip.compress(text[i : i + 7000]) for i in range(0, len(text), 7000))

    sitemap = parse_sitemap(members, SITEMAP)

    assert len(sitemap.urls) == 2000
    assert sitemap.errors == []


def test_corrupt_and_truncated_gzip_keep_what_was_read() -> None:
    text = urlset(*(f"https://example.com/{n}" for n in range(20_000)))
    compressed = gzip.compress(text)

    truncated = parse_sitemap(compressed[: len(compressed) // 2], SITEMAP)
    corrupt = parse_sitemap(compressed[:20] + b"\xff" * 64, SITEMAP)

    assert 5_000 < len(truncated.urls) < 15_000
    assert locs(truncated)[:2] == ["https://example.com/0", "https://example.com/1"]
    assert truncated.errors == ["truncated gzip stream"]
    assert truncated.kind == "urlset"
    assert corrupt.errors[-1].startswith("corrupt gzip: Error -3 while decompressing data")


def test_gzip_bomb_is_cut_at_the_byte_cap_in_bounded_memory(expat_feeds: list[int]) -> None:
    # 1 GiB of white space in ~1 MB: one member per MiB, 1024 of them after a real entry.
    head = gzip.compress(
        b'<?xml version="1.0"?><urlset><url><loc>https://example.com/a</loc></url>'
    )
    bomb = head + gzip.compress(b" " * MIB, 9) * 1024
    assert len(bomb) < 1.2 * MIB

    tracemalloc.start()
    try:
        sitemap = parse_sitemap(bomb, SITEMAP)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert sitemap == Sitemap(
        [SitemapUrl("https://example.com/a", None)], [], ["truncated at 52428800 bytes"], "urlset"
    )
    assert peak < 4 * MIB
    # The parser saw exactly the 50 MiB cap of the 1 GiB, in 64 KiB chunks.
    assert sum(expat_feeds) == 50 * MIB
    assert max(expat_feeds) == 64 * 1024


def test_single_member_gzip_bomb_stops_at_a_small_cap() -> None:
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * MIB
    bomb = b"".join([deflater.compress(zeros) for _ in range(64)]) + deflater.flush()

    sitemap = parse_sitemap(bomb, SITEMAP, max_bytes=MIB)

    assert sitemap.errors == [f"truncated at {MIB} bytes"]
    assert sitemap.urls == []


# --- plain text --------------------------------------------------------------------------------


def test_plain_text_sitemap_one_url_per_line() -> None:
    body = (
        b"\xef\xbb\xbfhttps://example.com/a\r\n"
        b"\r\n"
        b"   https://example.com/b?utm_medium=x   \n"
        b"this is not a url\n"
        b"example.com/no-scheme\n"
        b"\xff\xfe garbage bytes\n"
        b"https://example.com/" + b"y" * 20_000 + b"\n"
        b"\n\n"
        b"https://example.com/c"  # no final newline
    )

    sitemap = parse_sitemap(body, "https://example.com/sitemap.txt")

    assert sitemap == Sitemap(
        urls=[
            SitemapUrl("https://example.com/a", None),
            SitemapUrl("https://example.com/b?utm_medium=x", None),
            SitemapUrl("this is not a url", None),  # the frontier refuses these two
            SitemapUrl("example.com/no-scheme", None),
            SitemapUrl("https://example.com/c", None),
        ],
        sitemaps=[],
        errors=["bad line 6: not UTF-8", "bad line 7: longer than 16384 bytes"],
        kind="text",
    )


def test_plain_text_lines_across_chunks() -> None:
    urls = [f"https://example.com/{n:06d}" for n in range(10_000)]  # ~290 KB: several chunks

    sitemap = parse_sitemap("\n".join(urls).encode(), SITEMAP)

    assert locs(sitemap) == urls
    assert sitemap.errors == []


# --- feeds -------------------------------------------------------------------------------------


def test_rss_items_become_urls_with_their_pub_dates() -> None:
    body = b"""<?xml version="1.0"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
  "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel>
  <title>News</title><link>https://example.com/</link>
  <atom:link href="https://example.com/feed.xml" rel="self"/>
  <item><title>One</title><link>https://example.com/news/1</link>
    <pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
  <item><title>Two</title><link>/news/2</link><dc:date>2003-06-11T09:30:00+01:00</dc:date></item>
  <item><title>Three</title><guid>https://example.com/news/3</guid></item>
  <item><title>Four</title><guid isPermaLink="false">tag:example.com,2003:4</guid></item>
  <item><title>Five</title><link>https://example.com/news/5</link><pubDate>soon</pubDate></item>
</channel>
</rss>"""

    sitemap = parse_sitemap(body, "https://example.com/feed.xml")

    assert sitemap == Sitemap(
        urls=[
            SitemapUrl("https://example.com/news/1", utc(2003, 6, 10, 4)),
            SitemapUrl("https://example.com/news/2", utc(2003, 6, 11, 8, 30)),
            SitemapUrl("https://example.com/news/3", None),
            SitemapUrl("https://example.com/news/5", None),
        ],
        sitemaps=[],
        errors=["<item> without <link>", "bad lastmod 'soon' of https://example.com/news/5"],
        kind="rss",
    )


def test_rss_1_0_rdf_items() -> None:
    body = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
  xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="https://example.com/"><link>https://example.com/</link></channel>
  <item rdf:about="https://example.com/a"><link>https://example.com/a</link>
    <dc:date>2024-02-03</dc:date></item>
</rdf:RDF>"""

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap == Sitemap([SitemapUrl("https://example.com/a", utc(2024, 2, 3))], [], [], "rss")


def test_atom_entries_use_the_alternate_link_and_updated() -> None:
    body = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>Example</title>
  <link href="https://example.com/"/>
  <link rel="self" href="https://example.com/atom.xml"/>
  <updated>2003-12-13T18:30:02Z</updated>
  <entry>
    <link rel="edit" href="https://example.com/edit/1"/>
    <link rel="alternate" type="text/html" href="https://example.com/posts/1"/>
    <link rel="alternate" type="text/html" href="https://example.com/posts/1-copy"/>
    <published>2003-12-01T00:00:00Z</published>
    <updated>2003-12-13T18:30:02+01:00</updated>
  </entry>
  <entry><link href="posts/2"/><published>2003-12-14T10:00:00Z</published></entry>
  <entry><id>urn:uuid:60a76c80</id></entry>
</feed>"""

    sitemap = parse_sitemap(body, "https://example.com/blog/atom.xml")

    assert sitemap == Sitemap(
        urls=[
            SitemapUrl("https://example.com/posts/1", utc(2003, 12, 13, 17, 30, 2)),
            SitemapUrl("https://example.com/blog/posts/2", utc(2003, 12, 14, 10)),
        ],
        sitemaps=[],
        errors=["<entry> without <link>"],
        kind="atom",
    )


# --- hostile and broken input ------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>https://example.com/&lol9;</loc></url></urlset>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>https://example.com/&x;</loc></url></urlset>"""


@pytest.mark.parametrize(
    "body",
    [BILLION_LAUGHS, EXTERNAL_ENTITY, gzip.compress(BILLION_LAUGHS)],
    ids=["billion laughs", "external entity", "gzip billion laughs"],
)
def test_entity_declarations_are_refused_cheaply(body: bytes, expat_feeds: list[int]) -> None:
    tracemalloc.start()
    try:
        sitemap = parse_sitemap(body, SITEMAP)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    # Refused at the declaration, in one feed: nothing of the entity (3 GB spelled out) exists.
    assert sitemap == Sitemap([], [], ["XML entity declaration refused"], "invalid")
    assert len(expat_feeds) == 1
    assert peak < 256 * 1024
    assert "root:" not in repr(sitemap)
    assert "lol" not in repr(sitemap)


async def test_external_dtd_and_entities_are_never_fetched(
    sitemap_server: tuple[str, Callable[[str, bytes], None], Counter[str]],
) -> None:
    base, put, hits = sitemap_server
    put("/evil.dtd", b'<!ENTITY x "leaked">')
    put("/secret", b"leaked")
    with_dtd = (
        f'<!DOCTYPE urlset SYSTEM "{base}/evil.dtd">'
        "<urlset><url><loc>https://example.com/a</loc></url></urlset>"
    ).encode()
    with_entity = (
        f'<!DOCTYPE urlset [<!ENTITY % p SYSTEM "{base}/evil.dtd"> %p; '
        f'<!ENTITY x SYSTEM "{base}/secret">]>'
        "<urlset><url><loc>https://example.com/&x;</loc></url></urlset>"
    ).encode()

    dtd_only = parse_sitemap(with_dtd, SITEMAP)
    entity = parse_sitemap(with_entity, SITEMAP)

    assert dtd_only == Sitemap([SitemapUrl("https://example.com/a", None)], [], [], "urlset")
    assert entity == Sitemap([], [], ["XML entity declaration refused"], "invalid")
    assert hits == Counter()


def test_truncated_xml_keeps_the_entries_before_the_cut() -> None:
    body = urlset("https://example.com/a", "https://example.com/b", "https://example.com/c")
    cut = body[: body.index(b"https://example.com/c") + 10]

    sitemap = parse_sitemap(cut, SITEMAP)

    assert locs(sitemap) == ["https://example.com/a", "https://example.com/b"]
    assert sitemap.kind == "urlset"
    assert sitemap.errors == ["malformed XML: no element found: line 2, column 166"]


def test_malformed_xml_keeps_the_entries_before_the_error() -> None:
    body = b"<urlset><url><loc>https://example.com/a</loc></url><url><loc>x</lo></url></urlset>"

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap == Sitemap(
        [SitemapUrl("https://example.com/a", None)],
        [],
        ["malformed XML: mismatched tag: line 1, column 64"],
        "urlset",
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", "empty body"),
        (b" \n\t ", "empty body"),
        (b"\xef\xbb\xbf", "empty body"),
        (b"<!DOCTYPE html><html><p>Gone</p></html>", "not a sitemap: root element <html>"),
        (b"<?xml version='1.0'?><error>none</error>", "not a sitemap: root element <error>"),
        (b"<?xml version='1.0'?><urlset", "malformed XML: unclosed token: line 1, column 21"),
        (b"<<<>>>", "malformed XML: not well-formed (invalid token): line 1, column 1"),
    ],
)  # fmt: skip
def test_not_a_sitemap_is_invalid(body: bytes, error: str) -> None:
    assert parse_sitemap(body, SITEMAP) == Sitemap([], [], [error], "invalid")


def test_50001_urls_are_truncated_to_50000() -> None:
    body = urlset(*(f"https://example.com/p/{n}" for n in range(50_001)))

    sitemap = parse_sitemap(body, SITEMAP)

    assert len(sitemap.urls) == 50_000
    assert sitemap.urls[-1].loc == "https://example.com/p/49999"
    assert sitemap.errors == ["truncated at 50000 URLs"]


def test_50000_urls_are_all_kept() -> None:
    sitemap = parse_sitemap(urlset(*(f"https://example.com/{n}" for n in range(50_000))), SITEMAP)

    assert len(sitemap.urls) == 50_000
    assert sitemap.errors == []


def test_limits_are_parameters() -> None:
    index = b"<sitemapindex>" + b"<sitemap><loc>https://example.com/s</loc></sitemap>" * 5
    text = b"https://example.com/a\n" * 1000

    assert parse_sitemap(index, SITEMAP, max_urls=3).sitemaps == ["https://example.com/s"] * 3
    assert parse_sitemap(index, SITEMAP, max_urls=3).errors == ["truncated at 3 URLs"]
    assert parse_sitemap(text, SITEMAP, max_urls=2).errors == ["truncated at 2 URLs"]
    cut = parse_sitemap(text, SITEMAP, max_bytes=220)
    assert (len(cut.urls), cut.errors) == (10, ["truncated at 220 bytes"])


def test_huge_token_is_refused_before_it_costs_quadratic_time(expat_feeds: list[int]) -> None:
    body = b"<urlset><url><loc>https://example.com/a</loc></url><!--" + b"x" * (20 * MIB)

    sitemap = parse_sitemap(body, SITEMAP)

    # Expat re-scans the open comment on every feed: the cost grows with the square of what it
    # was fed, so feeding stops at the first 64 KiB chunk past the 1 MiB limit, not at 20 MiB.
    assert sum(expat_feeds) == 1 * MIB + 64 * 1024
    assert locs(sitemap) == ["https://example.com/a"]
    assert sitemap.errors == ["XML token longer than 1048576 bytes"]


def test_deep_nesting_is_refused() -> None:
    body = b"<urlset>" + b"<a>" * 100_000

    sitemap = parse_sitemap(body, SITEMAP)

    assert sitemap == Sitemap([], [], ["XML nested deeper than 64 elements"], "urlset")


# --- never raises ------------------------------------------------------------------------------

FRAGMENTS = [
    "<urlset>", "</urlset>", "<url>", "</url>", "<loc>", "</loc>", "<lastmod>", "</lastmod>",
    "<sitemapindex>", "<sitemap>", "<rss>", "<item>", "<link>", "</link>", "<feed>", "<entry>",
    '<link href="/x"/>', "<![CDATA[", "]]>", "<!--", "-->", "&amp;", "&lol;", "&#0;", "&#x110000;",
    "<!DOCTYPE x [", "<!ENTITY a 'b'>", "]>", "<?xml version='1.0'?>", "https://example.com/",
    "http://[::1", "2024-05-06T07:08:09Z", "Mon, 06 May 2024", "\n", " ", "\x00", "é", "\ud7ff",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(body: bytes) -> None:
    for candidate in (body, gzip.compress(body), b"\x1f\x8b" + body):
        sitemap = parse_sitemap(candidate, SITEMAP)
        assert sitemap.kind in {"urlset", "index", "text", "rss", "atom", "invalid"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40), st.integers(0, 3), st.integers(0, 300))
def test_sitemap_like_fragments_never_raise(parts: list[str], max_urls: int, cut: int) -> None:
    body = "".join(parts).encode("utf-8", "surrogatepass")
    for candidate in (body, gzip.compress(body)[: cut or None]):
        sitemap = parse_sitemap(candidate, SITEMAP, max_urls=max_urls, max_bytes=cut or 1000)
        assert len(sitemap.urls) + len(sitemap.sitemaps) <= max_urls


# --- other parsers' fixtures -------------------------------------------------------------------
# Our own documents, modelled on the cases other sitemap parsers test; each names its source.

SCRAPY = "scrapy/scrapy tests/test_utils_sitemap.py"
USP = "GateNLP/ultimate-sitemap-parser tests/tree"

OTHER_PARSERS = {
    # scrapy test_sitemap_strip: a space before the URL inside <loc>, an empty <lastmod/>.
    f"{SCRAPY} test_sitemap_strip": (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">\n'
        b"<url>\n<loc> https://example.org/</loc>\n<lastmod>2010-03-21</lastmod>\n"
        b"<changefreq>weekly</changefreq>\n</url>\n"
        b"<url>\n<loc> https://example.org/two</loc>\n<lastmod />\n</url>\n</urlset>\n",
        [
            SitemapUrl("https://example.org/", utc(2010, 3, 21)),
            SitemapUrl("https://example.org/two", None),
        ],
    ),
    # scrapy test_sitemap_wrong_ns: the old Google namespace on the root, xmlns="" on <url>.
    f"{SCRAPY} test_sitemap_wrong_ns": (
        b'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">'
        b'<url xmlns=""><loc>https://example.org/a</loc></url>'
        b'<url xmlns=""><loc>https://example.org/b</loc></url></urlset>',
        [SitemapUrl("https://example.org/a", None), SitemapUrl("https://example.org/b", None)],
    ),
    # scrapy test_sitemap_wrong_ns2: no namespace on the root, xmlns="" on <url>.
    f"{SCRAPY} test_sitemap_wrong_ns2": (
        b'<urlset><url xmlns=""><loc>https://example.org/a</loc><priority>1</priority></url>'
        b"</urlset>",
        [SitemapUrl("https://example.org/a", None)],
    ),
    # scrapy test_comment: a comment inside <url>, an xhtml namespace declared.
    f"{SCRAPY} test_comment": (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>https://example.org/</loc>'
        b"<!-- a comment a careless parser might trip on --></url></urlset>",
        [SitemapUrl("https://example.org/", None)],
    ),
    # scrapy test_alternate: <xhtml:link rel="alternate"> are not pages of the sitemap.
    f"{SCRAPY} test_alternate": (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>https://example.org/en/</loc>'
        b'<xhtml:link rel="alternate" hreflang="fr" href="https://example.org/fr/"/>'
        b'<xhtml:link rel="alternate" hreflang="en"/></url></urlset>',
        [SitemapUrl("https://example.org/en/", None)],
    ),
    # USP test_rss_atom: RSS 2.0 with a <guid isPermaLink="true"> next to the <link>.
    f"{USP}/test_rss_atom.py RSS 2.0": (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
        b"<title>Feed</title><link>https://example.org</link>"
        b"<pubDate>Sat, 17 Dec 2011 02:00:00 +0000</pubDate>"
        b"<item><title>One</title><link>https://example.org/rss_1.html</link>"
        b'<guid isPermaLink="true">https://example.org/rss_1.html</guid>'
        b"<pubDate>Sat, 17 Dec 2011 02:00:00 +0000</pubDate></item>"
        b"<item><title>Two</title><link>https://example.org/rss_2.html</link></item>"
        b"</channel></rss>",
        [
            SitemapUrl("https://example.org/rss_1.html", utc(2011, 12, 17, 2)),
            SitemapUrl("https://example.org/rss_2.html", None),
        ],
    ),
    # USP test_rss_atom: Atom 0.3 entries carry <issued> (and <modified>), not <updated>.
    f"{USP}/test_rss_atom.py Atom 0.3": (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Feed</title>'
        b'<link rel="alternate" type="text/html" href="https://example.org"/>'
        b"<modified>2011-12-17T02:00:00Z</modified>"
        b'<entry><title>One</title><link rel="alternate" type="text/html" '
        b'href="https://example.org/atom_0_3_1.html"/><id>https://example.org/1</id>'
        b"<issued>2011-12-17T02:00:00+01:00</issued></entry>"
        b'<entry><title>Two</title><link rel="alternate" href="https://example.org/atom_0_3_2.html"/>'
        b"<issued>2011-12-16T00:00:00Z</issued><modified>2011-12-18T00:00:00Z</modified></entry>"
        b"</feed>",
        [
            SitemapUrl("https://example.org/atom_0_3_1.html", utc(2011, 12, 17, 1)),
            SitemapUrl("https://example.org/atom_0_3_2.html", utc(2011, 12, 18)),
        ],
    ),
    # USP test_rss_atom: Atom 1.0, a <link> without rel (alternate) before rel="alternate" and
    # rel="edit" ones.
    f"{USP}/test_rss_atom.py Atom 1.0": (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        b'<title>Feed</title><link href="https://example.org/atom.xml" rel="self"/>'
        b"<updated>2011-12-17T02:00:00Z</updated>"
        b'<entry><title>One</title><link href="https://example.org/atom_1_0_1.html"/>'
        b'<link rel="alternate" type="text/html" href="https://example.org/atom_1_0_1.html?alt"/>'
        b'<link rel="edit" href="https://example.org/atom_1_0_1.html?edit"/>'
        b"<updated>2011-12-17T02:00:00Z</updated></entry></feed>",
        [SitemapUrl("https://example.org/atom_1_0_1.html", utc(2011, 12, 17, 2))],
    ),
    # USP test_plain_text: blank lines around URLs, and a line that is no URL at all (kept as
    # written here; the frontier refuses it).
    f"{USP}/test_plain_text.py": (
        b"\nhttps://example.org/news/foo.html\n\n\nhttps://example.org/news/bar.html\n\n"
        b"Some other stuff which is no URL",
        [
            SitemapUrl("https://example.org/news/foo.html", None),
            SitemapUrl("https://example.org/news/bar.html", None),
            SitemapUrl("Some other stuff which is no URL", None),
        ],
    ),
}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "expected"), OTHER_PARSERS.values(), ids=list(OTHER_PARSERS.keys())
)
def test_other_parsers_fixtures(body: bytes, expected: list[SitemapUrl]) -> None:
    sitemap = parse_sitemap(body, "https://example.org/sitemap.xml")

    assert sitemap.urls == expected
    assert sitemap.sitemaps == []
    assert sitemap.errors == []


def test_scrapy_blank_lines_before_the_xml_declaration_of_an_index() -> None:
    # scrapy/scrapy tests/test_utils_sitemap.py test_sitemap_blanklines, and a comment between
    # entries; gzip-compressed as USP's tests/tree/test_plain_text.py serves one (no .gz suffix).
    body = (
        b'\n\n<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<!-- cache: cached = yes -->\n"
        b"<sitemap><loc>https://example.org/sitemap1.xml</loc><lastmod>2013-07-15</lastmod>"
        b"</sitemap>\n<sitemap><loc>https://example.org/sitemap2.xml</loc></sitemap>\n"
        b"<!-- end cache -->\n</sitemapindex>\n"
    )

    for candidate in (body, gzip.compress(body)):
        sitemap = parse_sitemap(candidate, "https://example.org/sitemap.dat")

        assert sitemap == Sitemap(
            [],
            ["https://example.org/sitemap1.xml", "https://example.org/sitemap2.xml"],
            [],
            "index",
        )


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        ("<![CDATA[https://example.org/a?b=2&a=1]]>", "https://example.org/a?b=2&a=1"),
        ("<![CDATA[\n  https://example.org/a?b=2&a=1\n]]>", "https://example.org/a?b=2&a=1"),
        ("  <![CDATA[https://example.org/a]]>  ", "https://example.org/a"),
        ("\t\r\n https://example.org/a \t\r\n", "https://example.org/a"),
        ("https://example.org/a?b=2&amp;a=1&amp;c=%7e", "https://example.org/a?b=2&a=1&c=%7e"),
        ("https://example.org/&#x41;&#66;", "https://example.org/AB"),
        ("https://EXAMPLE.org:443/./a/../b#frag", "https://EXAMPLE.org:443/./a/../b#frag"),
        ("https://example.org/a?utm_source=x&amp;ref=y", "https://example.org/a?utm_source=x&ref=y"),
    ],
    ids=["CDATA", "CDATA with white space", "white space around CDATA", "white space",
         "entities", "character references", "not normalized", "tracking kept"],
)  # fmt: skip
def test_loc_is_returned_as_written(loc: str, expected: str) -> None:
    body = f"<urlset><url><loc>{loc}</loc></url></urlset>".encode()

    assert locs(parse_sitemap(body, SITEMAP)) == [expected]


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("posts/2?b=1&amp;a=2", "https://example.com/blog/posts/2?b=1&a=2"),
        ("/posts/3", "https://example.com/posts/3"),
        ("//cdn.example.net/x", "https://cdn.example.net/x"),
        (" ../up ", "https://example.com/up"),
        ("HTTPS://Other.example/Z?b&amp;a", "HTTPS://Other.example/Z?b&a"),
        ("mailto:x@example.com", "mailto:x@example.com"),
    ],
)
def test_a_feeds_relative_links_are_resolved_and_nothing_more(link: str, expected: str) -> None:
    body = f'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="{link}"/></entry></feed>'

    sitemap = parse_sitemap(body.encode(), "https://example.com/blog/atom.xml")

    assert locs(sitemap) == [expected]
