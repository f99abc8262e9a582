"""Sitemaps and feeds as frontier rows: what a fetched listing adds to the frontier.

A sitemap or feed is a URL of kind ``sitemap`` or ``feed`` in the frontier, so it is fetched
politely, leased, retried and resumed like any page. Its body yields page URLs (with their
``lastmod``, which can make a known page due again) and, for a sitemap index, child sitemaps
one level deeper, up to ``max_depth`` levels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from harvestman.discovery.sitemaps import Sitemap, parse_sitemap
from harvestman.frontier import priority_for
from harvestman.records import NewUrl
from harvestman.urls import host_key, url_hash

SITEMAP = "sitemap"
FEED = "feed"
PAGE = "page"


@dataclass(slots=True)
class Listing:
    """What one sitemap or feed yielded."""

    kind: str  # the parser's verdict: urlset, index, text, rss, atom, invalid
    urls: list[NewUrl] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    out_of_scope: int = 0

    @property
    def invalid(self) -> bool:
        return self.kind == "invalid" or (not self.urls and bool(self.errors))


def read_listing(
    body: bytes,
    url: str,
    *,
    depth: int,
    max_depth: int,
    max_urls: int,
    max_bytes: int,
    in_scope: Callable[[str], bool],
) -> Listing:
    """Parse a sitemap/feed body into the URLs to queue (scoped, hashed, with priorities)."""
    sitemap: Sitemap = parse_sitemap(body, url, max_urls=max_urls, max_bytes=max_bytes)
    listing = Listing(kind=sitemap.kind, errors=list(sitemap.errors))
    for entry in sitemap.urls:
        if not in_scope(entry.loc):
            listing.out_of_scope += 1
            continue
        lastmod = entry.lastmod.timestamp() if entry.lastmod is not None else None
        # Listed pages are one hop from the listing, whatever the index nesting.
        listing.urls.append(_row(entry.loc, 1, PAGE, lastmod))
    if depth < max_depth:
        for child in sitemap.sitemaps:
            if in_scope(child):
                listing.urls.append(_row(child, depth + 1, SITEMAP))
            else:
                listing.out_of_scope += 1
    elif sitemap.sitemaps:
        listing.errors.append(f"{len(sitemap.sitemaps)} child sitemaps beyond depth {max_depth}")
    return listing


def sitemap_rows(robots_sitemaps: Iterable[str], root: str) -> list[NewUrl]:
    """The sitemaps a host declares in robots.txt, and its ``/sitemap.xml``."""
    urls = dict.fromkeys([*robots_sitemaps, root.rstrip("/") + "/sitemap.xml"])
    return [_row(url, 0, SITEMAP) for url in urls]


def feed_row(url: str, depth: int) -> NewUrl:
    return _row(url, depth, FEED)


def _row(url: str, depth: int, kind: str, lastmod: float | None = None) -> NewUrl:
    priority = 3 if kind != PAGE else priority_for(url, depth)
    return NewUrl(url, url_hash(url), host_key(url), depth, priority, kind, lastmod)
