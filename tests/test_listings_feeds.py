"""Feeds are read as a feed reader reads them: feedparser's own test feeds and date tables.

The cases come from the ``feedparser`` 6.0.11 sdist on PyPI (SHA-256
``c9d0407b64c6f2a065d0ebb292c2b35c01050cc0dc33757461aaabdc4c4184d5``):

- ``tests/wellformed/**`` feeds whose ``Expect:`` line names the first entry's link
  (``entries[0]['link']``) or its date (``entries[0][...'_parsed']``), copied to
  ``tests/fixtures/feedparser/wellformed/``. Each runs through ``read_listing``, the path a
  crawl takes for a feed, at the URL feedparser's own test server gives it
  (``http://127.0.0.1:8097/tests/wellformed/...``).
- ``tests/runtests.py``'s ``date_tests`` for ``_parse_date_rfc822``, ``_parse_date_w3dtf`` and
  ``_parse_date_asctime``, copied to ``tests/fixtures/feedparser/date_tests.json``, run
  through the date reader of the listings.

Left out, each for its reason: ``base/http_item_link_base_content_location.xml`` resolves
against an HTTP ``Content-Location`` header, which a listing is not given; ``cdf/*`` is
Microsoft's Channel Definition Format, not a feed Harvestman reads; ``*_multiple_values.xml``
give an entry two ``<updated>`` (or ``<created>``): feedparser keeps the last, Harvestman the
first, and RFC 4287 §4.1.2 allows one.

The xml:base and ``rel`` cases below them are ours, built like feedparser's
``wellformed/base/*_xml_base_inherit*.xml`` feeds (a base on the feed, overridden on the entry,
on the element, and relative bases nested).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harvestman.discovery.listings import Listing, read_listing
from harvestman.discovery.sitemaps import _parse_datetime
from harvestman.urls import normalize_url

FEEDPARSER = Path(__file__).parent / "fixtures" / "feedparser"
SKIPPED = {
    "http_item_link_base_content_location.xml",
    "item_href_map_link.xml",
    "item_lastmod_parsed.xml",
    "entry_created_multiple_values.xml",
    "entry_updated_multiple_values.xml",
}
FEEDS = sorted(
    path for path in (FEEDPARSER / "wellformed").rglob("*.xml") if path.name not in SKIPPED
)


def read(body: bytes, url: str) -> Listing:
    return read_listing(
        body,
        url,
        depth=0,
        max_depth=3,
        max_urls=50_000,
        max_bytes=1 << 20,
        in_scope=lambda url: True,
    )


def expectation(path: Path) -> tuple[str, str]:
    text = path.read_text("utf-8")
    link = re.search(r"entries\[0\]\['link'\] == '([^']*)'", text)
    if link is not None:
        return "link", link.group(1)
    date = re.search(r"entries\[0\]\['\w+_parsed'\] == \(([^)]*)\)", text)
    assert date is not None, path
    return "date", date.group(1)


def test_the_suite_is_the_cited_files() -> None:
    assert len(FEEDS) == 25


@pytest.mark.parametrize("path", FEEDS, ids=[f"{p.parent.name}/{p.name}" for p in FEEDS])
def test_a_feed_entry_is_read_as_feedparser_reads_it(path: Path) -> None:
    kind, expected = expectation(path)
    url = "http://127.0.0.1:8097/tests/" + path.relative_to(FEEDPARSER).as_posix()
    body = path.read_bytes()
    if kind == "date" and b"<link" not in body:  # a date feed without links: give it one
        body = body.replace(b"<entry>", b'<entry><link href="/e"/>')
        body = body.replace(b"<item>", b"<item><link>/e</link>")
    found = read(body, url)
    assert found.urls, found.errors
    first = found.urls[0]
    if kind == "link":
        assert first.url == normalize_url(expected)
    else:
        assert first.lastmod is not None, found.errors
        parts = tuple(int(value) for value in expected.split(",")[:6])
        assert datetime.fromtimestamp(first.lastmod, UTC).timetuple()[:6] == parts


DATES = json.loads((FEEDPARSER / "date_tests.json").read_text("utf-8"))
DATE_CASES = [
    (name, text, expected)
    for name in ("rfc822", "w3dtf", "asctime")
    for text, expected in DATES[name]
]


@pytest.mark.parametrize(
    ("name", "text", "expected"), DATE_CASES, ids=[f"{c[0]}:{c[1]}" for c in DATE_CASES]
)
def test_a_date_is_read_as_feedparser_reads_it(
    name: str, text: str, expected: list[int] | None
) -> None:
    """Invalid dates are refused (an offset ``+zz:00``, ``10:14:61Z``, hour 25); zone names
    RFC 822 does not know (``MET``, ``ET``) are read as feedparser reads them."""
    value = _parse_datetime(text)
    if expected is None:
        assert value is None
    else:
        assert value is not None
        assert list(value.timetuple()[:6]) == expected


# --- xml:base and rel, built like feedparser's wellformed/base feeds -------------------------

DOCUMENT = "https://feeds.example.org/blog/atom.xml"


def links_of(body: str) -> list[str]:
    return [row.url for row in read(body.encode(), DOCUMENT).urls]


def test_entry_links_resolve_against_the_xml_base_in_scope() -> None:
    body = """<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://example.com/parent/">
      <entry><link href="feed-level"/></entry>
      <entry xml:base="http://example.com/entry/"><link href="entry-level"/></entry>
      <entry xml:base="http://example.com/entry/">
        <link xml:base="http://example.com/element/" href="element-level"/></entry>
      <entry xml:base="sub/"><link xml:base="deeper/" href="nested"/></entry>
      <entry><link href="/rooted"/></entry>
    </feed>"""
    assert links_of(body) == [
        "http://example.com/parent/feed-level",
        "http://example.com/entry/entry-level",
        "http://example.com/element/element-level",
        "http://example.com/parent/sub/deeper/nested",
        "http://example.com/rooted",
    ]


def test_a_base_ends_with_its_element() -> None:
    body = """<feed xmlns="http://www.w3.org/2005/Atom">
      <entry xml:base="http://example.com/a/"><title xml:base="/t/">x</title>
        <link href="one"/></entry>
      <entry><link href="two"/></entry>
    </feed>"""
    assert links_of(body) == [
        "http://example.com/a/one",
        "https://feeds.example.org/blog/two",
    ]


def test_an_rss_link_resolves_against_the_channel_base() -> None:
    body = """<rss version="2.0"><channel xml:base="http://example.com/news/">
      <item><link>2024/story</link></item></channel></rss>"""
    assert links_of(body) == ["http://example.com/news/2024/story"]


def test_an_enclosure_is_not_the_entry_link() -> None:
    body = """<feed xmlns="http://www.w3.org/2005/Atom">
      <entry><link rel="enclosure">http://example.com/a.mp3</link>
        <link>http://example.com/page-a</link></entry>
      <entry><link rel="enclosure" href="http://example.com/b.mp3"/>
        <link rel="alternate" href="http://example.com/page-b"/></entry>
      <entry><link rel="related" href="http://example.com/elsewhere"/>
        <link href="http://example.com/page-c"/></entry>
      <entry><link rel="enclosure" href="http://example.com/only.mp3"/></entry>
    </feed>"""
    found = read(body.encode(), DOCUMENT)
    assert [row.url for row in found.urls] == [
        "http://example.com/page-a",
        "http://example.com/page-b",
        "http://example.com/page-c",
    ]
    assert found.errors == ["<entry> without <link>"]


def test_dublin_core_terms_dates_are_read() -> None:
    body = """<rss version="2.0" xmlns:dcterms="http://purl.org/dc/terms/"><channel>
      <item><link>http://example.com/m</link><dcterms:modified>2024-05-06T10:00:00Z</dcterms:modified></item>
      <item><link>http://example.com/i</link><dcterms:issued>2024-05-07T10:00:00Z</dcterms:issued></item>
      <item><link>http://example.com/c</link><dcterms:created>2024-05-08T10:00:00Z</dcterms:created></item>
    </channel></rss>"""
    found = read(body.encode(), DOCUMENT)
    days = [datetime.fromtimestamp(row.lastmod or 0, UTC).day for row in found.urls]
    assert days == [6, 7, 8]
