"""parse_html: what a crawler keeps of a page, from well-formed, broken and mislabeled HTML."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from harvestman.errors import UrlError
from harvestman.parse import Page, _visible_text, parse_html
from harvestman.urls import UrlNormalizer

URL = "https://example.com/dir/page.html"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_complete_page() -> None:
    html = b"""<!DOCTYPE html>
<html lang="en"><head>
  <meta charset="utf-8">
  <title>  The   Example
     Page </title>
  <meta name="description" content="  All about   examples. ">
  <link rel="canonical" href="/dir/page.html?utm_source=newsletter">
  <link rel="alternate" type="application/rss+xml" href="/feed.rss">
  <link rel="stylesheet" href="/site.css">
  <style>body { color: red }</style>
  <script>var links = "<a href='/not-a-link'>";</script>
</head>
<body>
  <h1>Welcome</h1>
  <p>Read the <a href="guide.html">guide</a>, then the
     <a href="../faq/?b=2&a=1">FAQ</a>.</p>
  <a href="mailto:team@example.com">Mail us</a>
</body></html>"""
    assert parse_html(html, URL) == Page(
        url=URL,
        title="The Example Page",
        description="All about examples.",
        canonical=URL,
        links=[
            URL,
            "https://example.com/feed.rss",
            "https://example.com/dir/guide.html",
            "https://example.com/faq/?a=1&b=2",
        ],
        feeds=["https://example.com/feed.rss"],
        text="Welcome Read the guide , then the FAQ . Mail us",
        content_hash=sha256("Welcome Read the guide , then the FAQ . Mail us"),
        nofollow=False,
        noindex=False,
        lang="en",
        encoding="utf-8",
    )


def test_the_page_url_is_normalized() -> None:
    page = parse_html(b"<p>x</p>", "HTTPS://Example.COM:443/a/./b?utm_medium=x&z=1#frag")
    assert page.url == "https://example.com/a/b?z=1"


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ("<title>\n  Hello\t world  </title>", "Hello world"),
        ("<title>   </title>", None),
        ("<title></title>", None),
        ("<p>no title</p>", None),
        ("<title>First</title><title>Second</title>", "First"),
        ("<title>Fish &amp; Chips</title>", "Fish & Chips"),
        ("<body><svg><title>Icon</title></svg><title>Page</title></body>", "Page"),
        ("<body><svg><g><title>Icon only</title></g></svg></body>", None),
    ],
)
def test_title(html: str, title: str | None) -> None:
    assert parse_html(html, URL).title == title


@pytest.mark.parametrize(
    ("html", "description"),
    [
        ('<meta name="DESCRIPTION" content=" Upper  case ">', "Upper case"),
        ('<meta name="description" content="">', None),
        ('<meta name="description" content="   ">', None),
        ('<meta content="Any order" name="Description">', "Any order"),
        ('<meta name="description" content="one"><meta name="description" content="two">', "one"),
        ('<meta property="og:description" content="not this">', None),
    ],
)
def test_description(html: str, description: str | None) -> None:
    assert parse_html(html, URL).description == description


@pytest.mark.parametrize(
    ("html", "canonical"),
    [
        ('<link rel="canonical" href="https://Example.com/dir/page.html#x">', URL),
        ('<link rel="CANONICAL" href="other.html">', "https://example.com/dir/other.html"),
        ('<link rel="canonical" href="javascript:void(0)">', None),
        ('<link rel="canonical">', None),
        (
            '<link rel="canonical" href="/a"><link rel="canonical" href="/b">',
            "https://example.com/a",
        ),
        ("<p>none</p>", None),
    ],
)
def test_canonical(html: str, canonical: str | None) -> None:
    assert parse_html(html, URL).canonical == canonical


def test_links_resolve_against_the_first_base_which_resolves_against_the_page() -> None:
    html = """<head><base href="../assets/v2/"><base href="https://elsewhere.org/"></head>
    <a href="img/a.html">a</a> <a href="/root">root</a> <a href="?q=1">query</a>
    <a href="//cdn.example.net/x">scheme-relative</a> <a href="#part">fragment</a>"""
    assert parse_html(html, URL).links == [
        "https://example.com/assets/v2/img/a.html",
        "https://example.com/root",
        "https://example.com/assets/v2/?q=1",
        "https://cdn.example.net/x",
        "https://example.com/assets/v2/",
    ]


def test_a_base_that_does_not_normalize_is_ignored() -> None:
    html = '<base href="javascript:alert(1)"><a href="next.html">n</a>'
    assert parse_html(html, URL).links == ["https://example.com/dir/next.html"]


def test_links_are_deduplicated_in_page_order() -> None:
    html = """<a href="/b">b</a><a href="/a">a</a><a href="/b#top">b again</a>
    <a href="https://EXAMPLE.com:443/a#bottom">a again</a><a href="/b?utm_source=x">b tracked</a>
    <a href="/c?y=2&x=1">c</a><a href="/c?x=1&y=2&fbclid=123">c sorted</a>"""
    assert parse_html(html, URL).links == [
        "https://example.com/b",
        "https://example.com/a",
        "https://example.com/c?x=1&y=2",
    ]


def test_links_that_are_not_http_are_dropped() -> None:
    html = """<a href="mailto:a@example.com">m</a><a href="javascript:go()">j</a>
    <a href="tel:+15555550100">t</a><a href="data:text/html,hi">d</a>
    <a href="ftp://example.com/f">f</a><a href="  JavaScript:go()">j2</a>
    <a href="http://[::1">bad host</a><a href="https://example.com:99999/">bad port</a>
    <a href="/ok">ok</a><a>no href</a><a href>empty attribute</a>"""
    assert parse_html(html, URL).links == ["https://example.com/ok"]


def test_a_self_link_is_kept_but_an_in_page_reference_is_not() -> None:
    html = '<a href="#top">t</a><a href="">reload</a><a href=" #x">x</a><a href="page.html#y">s</a>'
    assert parse_html(html, URL).links == [URL]


def test_area_and_link_relations_are_links() -> None:
    html = """<head>
    <link rel="next" href="?page=3"><link rel="PREV" href="?page=1">
    <link rel="alternate" hreflang="de" href="/de/page.html">
    <link rel="alternate stylesheet" href="/dark.css"><link rel="alternate icon" href="/f.png">
    <link rel="icon" href="/favicon.ico"><link rel="preload" href="/font.woff2">
    <link rel="author" href="/humans.txt"></head>
    <map><area href="/region" shape="rect" coords="0,0,1,1"></map>"""
    assert parse_html(html, URL).links == [
        "https://example.com/dir/page.html?page=3",
        "https://example.com/dir/page.html?page=1",
        "https://example.com/de/page.html",
        "https://example.com/region",
    ]


def test_feeds() -> None:
    html = """<link rel="alternate" type="application/rss+xml" href="/rss">
    <link rel="Alternate" type="Application/Atom+XML; charset=utf-8" href="atom.xml">
    <link rel="alternate" type="application/rss+xml" href="/rss#dup">
    <link rel="alternate" type="text/html" href="/mobile">
    <link rel="feed" type="application/rss+xml" href="/not-alternate">
    <link rel="alternate" type="application/rss+xml" href="mailto:x@example.com">"""
    page = parse_html(html, URL)
    assert page.feeds == ["https://example.com/rss", "https://example.com/dir/atom.xml"]
    assert page.links == [
        "https://example.com/rss",
        "https://example.com/dir/atom.xml",
        "https://example.com/mobile",
    ]


@pytest.mark.parametrize(
    ("meta", "nofollow", "noindex"),
    [
        ('<meta name="robots" content="noindex, nofollow">', True, True),
        ('<meta name="ROBOTS" content="NOFOLLOW">', True, False),
        ('<meta name="robots" content="none">', True, True),
        ('<meta name="robots" content="noindex,max-snippet:50">', False, True),
        ('<meta name="harvestman" content="nofollow">', True, False),
        (
            '<meta name="robots" content="noindex"><meta name="Harvestman" content="nofollow">',
            True,
            True,
        ),
        ('<meta name="googlebot" content="noindex, nofollow">', False, False),
        ('<meta name="robots" content="index, follow">', False, False),
        ('<meta name="robots">', False, False),
    ],
)
def test_meta_robots(meta: str, nofollow: bool, noindex: bool) -> None:
    page = parse_html(f"<html><head>{meta}</head><body><a href='/x'>x</a></body></html>", URL)
    assert (page.nofollow, page.noindex) == (nofollow, noindex)
    assert page.links == ["https://example.com/x"]  # nofollow is reported, not applied


def test_text_leaves_out_what_a_browser_does_not_show() -> None:
    html = """<html><head><title>Title</title><style>.a{}</style><script>var head;</script>
    </head><body>
    <script type="application/ld+json">{"@type": "Product"}</script>
    <p>Visible\tone</p><style>p { color: blue }</style>
    <noscript>Enable JavaScript</noscript><template><p>Template</p></template>
    <iframe>fallback</iframe><noembed>no embed</noembed>
    <div>  Visible&nbsp;&nbsp;two\u3000three  </div>
    <svg><title>Icon title</title></svg>
    </body></html>"""
    page = parse_html(html, URL)
    assert page.text == "Visible one Visible two three"
    assert page.content_hash == sha256("Visible one Visible two three")


def test_inline_elements_are_separated_by_a_space() -> None:
    # The price of a C-level text walk: every text node is one word boundary.
    assert parse_html("<p>Hel<b>lo</b> world</p>", URL).text == "Hel lo world"


def test_a_tracking_pixel_in_head_does_not_lose_the_head_elements() -> None:
    # <noscript><img> closes <head> when scripting is off; what follows lands in <body>.
    html = """<html><head><noscript><img src="/px.gif"></noscript>
    <title>Kept</title><link rel="canonical" href="/c"><meta name="robots" content="noindex">
    <meta name="description" content="Still read"></head><body><p>Body</p></body></html>"""
    page = parse_html(html, URL)
    assert (page.title, page.canonical, page.noindex, page.description, page.text) == (
        "Kept",
        "https://example.com/c",
        True,
        "Still read",
        "Body",
    )


def test_lang() -> None:
    assert parse_html('<html lang=" pt-BR "><p>x</p></html>', URL).lang == "pt-BR"
    assert parse_html('<html lang=""><p>x</p></html>', URL).lang is None
    assert parse_html("<p>x</p>", URL).lang is None


@pytest.mark.parametrize(
    ("body", "links", "text"),
    [
        (b"", [], ""),
        (b"   ", [], ""),
        (
            b"<div><p>unclosed <b>tags <a href='/u'>link",
            ["https://example.com/u"],
            "unclosed tags link",
        ),
        (b"<<<>>><a href=>\x00<title>", [], "<<<>>>"),
        (b'{"json": true, "items": [1, 2]}', [], '{"json": true, "items": [1, 2]}'),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", [], "\u2030PNG \x1a IHDR"),
        (b"<frameset><frame src='/f'></frameset>", [], ""),
        (
            b"<div>" * 5000 + b"<a href=/deep>deep</a>" + b"</div>" * 5000,
            ["https://example.com/deep"],
            "deep",
        ),
    ],
    ids=["empty", "blank", "unclosed", "garbage", "json", "png", "frameset", "deep"],
)
def test_malformed_input_gives_a_page(body: bytes, links: list[str], text: str) -> None:
    page = parse_html(body, URL)
    assert (page.url, page.links, page.text) == (URL, links, text)
    assert page.content_hash == sha256(text)


def test_binary_garbage_gives_a_page() -> None:
    page = parse_html(bytes(range(256)) * 8, URL)
    assert (page.title, page.links, page.encoding) == (None, [], "windows-1252")
    assert page.text.startswith("\x01\x02\x03\x04\x05\x06\x07\x08 \x0e\x0f")


def test_unclosed_tags_still_yield_their_content() -> None:
    page = parse_html(b"<title>T<body><p>one <a href='/u'>two <p>three", URL)
    assert (page.title, page.links) == ("T<body><p>one <a href='/u'>two <p>three", [])
    page = parse_html(b"<p>one <a href='/u'>two <div>three", URL)
    assert (page.title, page.links, page.text) == (None, ["https://example.com/u"], "one two three")


def test_empty_body() -> None:
    assert parse_html(b"", URL) == Page(
        url=URL,
        title=None,
        description=None,
        canonical=None,
        links=[],
        feeds=[],
        text="",
        content_hash=sha256(""),
        nofollow=False,
        noindex=False,
        lang=None,
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("body", "charset", "title", "encoding"),
    [
        ("<title>Café</title>".encode(), "utf-8", "Café", "utf-8"),
        ("<title>Café “q”</title>".encode("cp1252"), "windows-1252", "Café “q”", "windows-1252"),
        ("<title>Café “q”</title>".encode("cp1252"), "ISO-8859-1", "Café “q”", "windows-1252"),
        (
            "<title>Grüße aus München, schöne Straße</title>".encode("cp1252"),
            None,
            "Grüße aus München, schöne Straße",
            "windows-1252",
        ),
        (
            '<meta charset="Shift_JIS"><title>日本語のテスト</title>'.encode("shift_jis"),
            None,
            "日本語のテスト",
            "shift_jis",
        ),
        (
            '<meta charset="euc-jp"><title>日本語のテスト</title>'.encode("euc_jp"),
            "utf-8",
            "日本語のテスト",
            "euc-jp",
        ),
        (b"\xef\xbb\xbf<title>Caf\xc3\xa9</title>", "windows-1252", "Café", "utf-8"),
        (
            "<title>Café crème brûlée déjà ".encode() + b"\xe9</title>",
            None,
            "Café crème brûlée déjà \ufffd",
            "utf-8",
        ),
        ("<title>Ελληνικά</title>".encode("iso8859_7"), "iso-8859-7", "Ελληνικά", "iso-8859-7"),
    ],
)
def test_charsets(body: bytes, charset: str | None, title: str, encoding: str) -> None:
    page = parse_html(body, URL, charset=charset)
    assert (page.title, page.encoding) == (title, encoding)


def test_a_str_body_is_used_as_is() -> None:
    page = parse_html("<title>Déjà</title><p>\ud800 lone surrogate</p>", URL, charset="ascii")
    assert (page.title, page.text, page.encoding) == ("Déjà", "lone surrogate", None)


def test_a_custom_normalizer_decides_the_tracking_parameters() -> None:
    html = '<a href="/a?utm_source=x&sessionid=42&id=7">a</a>'
    normalizer = UrlNormalizer(tracking_params=["sessionid"])
    assert parse_html(html, URL, normalizer=normalizer).links == [
        "https://example.com/a?id=7&utm_source=x"
    ]


def test_a_custom_normalizer_limits_the_length() -> None:
    html = f'<a href="/{"x" * 100}">long</a><a href="/short">short</a>'
    normalizer = UrlNormalizer(max_length=60)
    assert parse_html(html, URL, normalizer=normalizer).links == ["https://example.com/short"]


def test_max_links_stops_after_that_many_distinct_links() -> None:
    html = "".join(f'<a href="/p{i % 4}">x</a>' for i in range(10))
    assert parse_html(html, URL, max_links=3).links == [
        "https://example.com/p0",
        "https://example.com/p1",
        "https://example.com/p2",
    ]


def test_a_page_url_that_does_not_normalize_raises() -> None:
    with pytest.raises(UrlError) as caught:
        parse_html(b"<p>x</p>", "ftp://example.com/")
    assert caught.value.reason == "scheme"


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u2028\u3000aé日"), max_size=40
    )
)
def test_visible_text_collapses_exactly_like_split_and_join(raw: str) -> None:
    assert _visible_text(raw) == " ".join(raw.split())


MARKUP_PIECES = (
    *("<a href='", "'>", "<p>", "</p>", "<title>", "<base href=", "<meta name=robots ", "x"),
    *("content=nofollow>", "<link rel=canonical href=", "#", "/", "?", "&", " ", "\n"),
    *("<script>", "</script>", "é", "\x00", "javascript:", "//h", ":", "<!--", "-->"),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(MARKUP_PIECES), max_size=40).map("".join))
def test_parsing_never_raises_on_arbitrary_markup(html: str) -> None:
    page = parse_html(html.encode("utf-8", errors="replace"), URL)
    assert all(link.startswith(("http://", "https://")) for link in page.links)
    assert page.content_hash == sha256(page.text)


@pytest.fixture
async def mislabeled_site() -> AsyncIterator[str]:
    """A site on 127.0.0.1 whose server claims UTF-8 for a windows-1252 page."""

    async def page(request: web.Request) -> web.Response:
        body = '<title>Crème brûlée</title><a href="/recettes?utm_source=home">Recettes</a>'
        return web.Response(
            body=body.encode("cp1252"), headers={"Content-Type": "text/html; charset=utf-8"}
        )

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()


async def test_a_page_served_with_the_wrong_charset_reads_right(mislabeled_site: str) -> None:
    async with aiohttp.ClientSession() as session, session.get(mislabeled_site) as response:
        body = await response.read()
        charset = response.charset
    assert charset == "utf-8"
    page = parse_html(body, mislabeled_site, charset=charset)
    assert (page.title, page.links) == ("Crème brûlée", [f"{mislabeled_site}recettes"])
