"""Sitemaps and feeds as frontier rows: listed URLs are normalized here, bad ones dropped."""

from __future__ import annotations

from harvestman.discovery.listings import Listing, read_listing
from harvestman.urls import UrlNormalizer, normalize_url

SITEMAP = "https://example.com/sitemap.xml"


def listing(body: bytes, url: str = SITEMAP, **options: object) -> Listing:
    arguments: dict[str, object] = {
        "depth": 0, "max_depth": 3, "max_urls": 50_000, "max_bytes": 1 << 20,
        "in_scope": lambda url: "elsewhere" not in url,
    }  # fmt: skip
    arguments.update(options)
    return read_listing(body, url, **arguments)  # type: ignore[arg-type]


def rows(found: Listing) -> list[tuple[str, str, int]]:
    return [(row.url, row.kind, row.depth) for row in found.urls]


def test_locs_are_normalized_and_bad_ones_dropped_with_their_reasons() -> None:
    body = (
        b"<urlset>"
        b"<url><loc>https://Example.com/a/./b?utm_source=s&amp;z=1&amp;a=2</loc></url>"
        b"<url><loc>https://example.com/ok</loc><lastmod>yesterday</lastmod></url>"
        b"<url><loc>/relative/path</loc></url>"
        b"<url><loc>javascript:alert(1)</loc></url>"
        b"<url><loc>https://exa mple.com/</loc></url>"
        b"<url><lastmod>2024-01-01</lastmod></url>"
        b"<url><loc>https://example.com/" + b"x" * 3000 + b"</loc></url>"
        b"<url><loc>https://elsewhere.example/x</loc></url>"
        b"<url><loc>https://example.com/last</loc></url>"
        b"</urlset>"
    )

    found = listing(body)

    assert rows(found) == [
        ("https://example.com/a/b?a=2&z=1", "page", 1),
        ("https://example.com/ok", "page", 1),
        ("https://example.com/last", "page", 1),
    ]
    assert found.out_of_scope == 1
    assert found.errors == [
        "bad lastmod 'yesterday' of https://example.com/ok",
        "<url> without <loc>",
        "bad loc '/relative/path': scheme",
        "bad loc 'javascript:alert(1)': scheme",
        "bad loc 'https://exa mple.com/': bad_host",
        f"bad loc {'https://example.com/' + 'x' * 180!r}: too_long",
    ]
    assert not found.invalid


def test_rows_are_what_normalize_url_makes_of_each_loc() -> None:
    written = [
        "HTTP://Example.com:80/a?b=2&a=1#top",
        "https://bücher.example/straße?x=é",
        "https://example.com/search?q=a&page=2&fbclid=1",
        "https://example.com/%7euser/",
    ]
    body = "\n".join(written).encode()

    found = listing(body, "https://example.com/sitemap.txt")

    assert [row.url for row in found.urls] == [normalize_url(url) for url in written]
    assert [row.url for row in found.urls] == [
        "http://example.com/a?a=1&b=2",
        "https://xn--bcher-kva.example/stra%C3%9Fe?x=%C3%A9",
        "https://example.com/search?page=2&q=a",
        "https://example.com/~user/",
    ]


def test_the_crawls_normalizer_is_used() -> None:
    body = b"<urlset><url><loc>https://example.com/a?keep=1&amp;session=9</loc></url></urlset>"
    crawl_normalizer = UrlNormalizer(tracking_params=["session"])

    default = listing(body)
    crawl = listing(body, normalize=crawl_normalizer.normalize)

    assert [row.url for row in default.urls] == ["https://example.com/a?keep=1&session=9"]
    assert [row.url for row in crawl.urls] == ["https://example.com/a?keep=1"]


def test_child_sitemaps_are_normalized_and_a_relative_one_refused() -> None:
    body = (
        b"<sitemapindex>"
        b"<sitemap><loc> https://EXAMPLE.com/s-1.xml.gz </loc></sitemap>"
        b"<sitemap><loc>s-2.xml</loc></sitemap>"
        b"<sitemap><loc>https://elsewhere.example/s.xml</loc></sitemap>"
        b"</sitemapindex>"
    )

    found = listing(body)

    assert rows(found) == [("https://example.com/s-1.xml.gz", "sitemap", 1)]
    assert found.errors == ["bad loc 's-2.xml': scheme"]
    assert found.out_of_scope == 1


def test_a_feeds_relative_links_become_rows() -> None:
    body = (
        b'<feed xmlns="http://www.w3.org/2005/Atom">'
        b'<entry><link href="posts/2?b=1&amp;a=2"/><updated>2024-01-02T00:00:00Z</updated></entry>'
        b'<entry><link href="mailto:x@example.com"/></entry></feed>'
    )

    found = listing(body, "https://example.com/blog/atom.xml")

    assert rows(found) == [("https://example.com/blog/posts/2?a=2&b=1", "page", 1)]
    assert found.urls[0].lastmod == 1704153600.0
    assert found.errors == ["bad loc 'mailto:x@example.com': scheme"]


def test_reasons_for_dropped_locs_are_listed_up_to_100_then_counted() -> None:
    body = "\n".join([*(f"ftp://example.com/{n}" for n in range(250)), "https://example.com/ok"])

    found = listing(body.encode(), "https://example.com/sitemap.txt")

    assert [row.url for row in found.urls] == ["https://example.com/ok"]
    assert len(found.errors) == 101
    assert found.errors[0] == "bad loc 'ftp://example.com/0': scheme"
    assert found.errors[99] == "bad loc 'ftp://example.com/99': scheme"
    assert found.errors[100] == "150 more bad locs not listed"


def test_a_listing_of_only_bad_locs_is_invalid() -> None:
    found = listing(b"<urlset><url><loc>/a</loc></url><url><loc>b</loc></url></urlset>")

    assert found.urls == []
    assert found.invalid
