"""Sitemaps and feeds as frontier rows: what a fetched listing adds to the frontier.

A sitemap or feed is a URL of kind ``sitemap`` or ``feed`` in the frontier, so it is fetched
politely, leased, retried and resumed like any page. Its body yields page URLs (with their
``lastmod``, which can make a known page due again) and, for a sitemap index, child sitemaps
one level deeper, up to ``max_depth`` levels.

The parser hands URLs over as the document wrote them; here each one is normalized, as every
URL is before it becomes a frontier row, and one that cannot be crawled is dropped with its
reason in ``Listing.errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from harvestman.crawl.frontier import priority_for
from harvestman.discovery.sitemaps import Sitemap, parse_sitemap
from harvestman.errors import UrlError
from harvestman.records import NewUrl
from harvestman.urls import host_key, normalize_url, url_hash

SITEMAP = "sitemap"
FEED = "feed"
PAGE = "page"
# Reasons for dropped URLs are listed up to this many, then only counted.
_MAX_LISTED = 100


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
    normalize: Callable[[str], str] = normalize_url,
) -> Listing:
    """Parse a sitemap/feed body into the URLs to queue (normalized with ``normalize``, scoped,
    hashed, with priorities)."""
    sitemap: Sitemap = parse_sitemap(body, url, max_urls=max_urls, max_bytes=max_bytes)
    listing = Listing(kind=sitemap.kind, errors=list(sitemap.errors))
    dropped = _Dropped(listing.errors)
    for entry in sitemap.urls:
        loc = dropped.normalized(entry.loc, normalize)
        if loc is None:
            continue
        if not in_scope(loc):
            listing.out_of_scope += 1
            continue
        lastmod = entry.lastmod.timestamp() if entry.lastmod is not None else None
        # Listed pages are one hop from the listing, whatever the index nesting.
        listing.urls.append(_row(loc, 1, PAGE, lastmod))
    if depth < max_depth:
        for written in sitemap.sitemaps:
            child = dropped.normalized(written, normalize)
            if child is None:
                continue
            if in_scope(child):
                listing.urls.append(_row(child, depth + 1, SITEMAP))
            else:
                listing.out_of_scope += 1
    elif sitemap.sitemaps:
        listing.errors.append(f"{len(sitemap.sitemaps)} child sitemaps beyond depth {max_depth}")
    dropped.finish()
    return listing


class _Dropped:
    """Normalizes listed URLs and keeps the reasons for those it drops, up to a bound."""

    def __init__(self, errors: list[str]) -> None:
        self._errors = errors
        self._listed = 0
        self._unlisted = 0

    def normalized(self, loc: str, normalize: Callable[[str], str]) -> str | None:
        try:
            return normalize(loc)
        except UrlError as exc:
            if self._listed < _MAX_LISTED:
                self._listed += 1
                self._errors.append(f"bad loc {loc[:200]!r}: {exc.reason}")
            else:
                self._unlisted += 1
            return None

    def finish(self) -> None:
        if self._unlisted:
            self._errors.append(f"{self._unlisted} more bad locs not listed")


def sitemap_rows(robots_sitemaps: Iterable[str], root: str) -> list[NewUrl]:
    """The sitemaps a host declares in robots.txt, and its ``/sitemap.xml``."""
    urls = dict.fromkeys([*robots_sitemaps, root.rstrip("/") + "/sitemap.xml"])
    return [_row(url, 0, SITEMAP) for url in urls]


def feed_row(url: str, depth: int) -> NewUrl:
    return _row(url, depth, FEED)


def _row(url: str, depth: int, kind: str, lastmod: float | None = None) -> NewUrl:
    priority = 3 if kind != PAGE else priority_for(url, depth)
    return NewUrl(url, url_hash(url), host_key(url), depth, priority, kind, lastmod)
