"""A sitemap's entries as frontier rows, a bounded batch at a time.

A sitemap lists up to 50,000 URLs (an index as many child sitemaps), and a crawl may read
dozens of them at once; holding each one's rows until it is fully read made the crawler's
memory grow with what the sitemaps held. :class:`ListingStream` reads the document with
:class:`~harvestman.discovery.sitemaps.SitemapReader` and turns each batch of entries into
rows as :func:`~harvestman.discovery.listings.read_listing` does (normalized with the crawl's
normalizer, scoped, a bad URL dropped with its reason, listed pages one hop from the listing,
child sitemaps one level deeper up to ``max_depth``), so the caller writes a batch before the
next is parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from harvestman.crawl.frontier import priority_for
from harvestman.discovery.sitemaps import SitemapReader
from harvestman.errors import UrlError
from harvestman.records import NewUrl
from harvestman.urls import host_key, normalize_url, url_hash

# Reasons for dropped URLs are listed up to this many, then only counted.
_MAX_LISTED = 100
_SITEMAP_PRIORITY = 3


class ListingStream:
    """One fetched sitemap read as batches of rows (:meth:`batches`); once they are taken,
    ``kind``, ``errors``, ``rows`` and ``out_of_scope`` say what it yielded."""

    def __init__(
        self,
        body: bytes,
        url: str,
        *,
        depth: int,
        max_depth: int,
        max_urls: int,
        max_bytes: int,
        in_scope: Callable[[str], bool],
        normalize: Callable[[str], str] = normalize_url,
    ) -> None:
        self._reader = SitemapReader(body, url, max_urls=max_urls, max_bytes=max_bytes)
        self.depth = depth
        self.max_depth = max_depth
        self.in_scope = in_scope
        self.normalize = normalize
        self.errors: list[str] = []
        self.rows = 0  # rows handed over
        self.out_of_scope = 0
        self._listed = 0  # dropped URLs whose reason is listed
        self._unlisted = 0
        self._too_deep = 0  # child sitemaps past max_depth

    @property
    def kind(self) -> str:
        """The parser's verdict: urlset, index, text, rss, atom, invalid."""
        return self._reader.kind

    @property
    def invalid(self) -> bool:
        return self.kind == "invalid" or (not self.rows and bool(self.errors))

    def batches(self, size: int) -> Iterator[list[NewUrl]]:
        """The rows, at most ``size`` in a batch, each made as its entries are parsed."""
        for urls, sitemaps in self._reader.batches(size):
            rows: list[NewUrl] = []
            for entry in urls:
                loc = self._normalized(entry.loc)
                if loc is None:
                    continue
                if not self.in_scope(loc):
                    self.out_of_scope += 1
                    continue
                lastmod = entry.lastmod.timestamp() if entry.lastmod is not None else None
                # Listed pages are one hop from the listing, whatever the index nesting.
                rows.append(
                    NewUrl(loc, url_hash(loc), host_key(loc), 1, priority_for(loc, 1), "page",
                           lastmod)
                )  # fmt: skip
            if sitemaps and self.depth >= self.max_depth:
                self._too_deep += len(sitemaps)
                sitemaps = []
            for written in sitemaps:
                child = self._normalized(written)
                if child is None:
                    continue
                if not self.in_scope(child):
                    self.out_of_scope += 1
                    continue
                rows.append(
                    NewUrl(child, url_hash(child), host_key(child), self.depth + 1,
                           _SITEMAP_PRIORITY, "sitemap")
                )  # fmt: skip
            if rows:
                self.rows += len(rows)
                yield rows
        # The parser's reasons first, then this side's, as read_listing orders them.
        self.errors[:0] = self._reader.errors
        if self._too_deep:
            self.errors.append(f"{self._too_deep} child sitemaps beyond depth {self.max_depth}")
        if self._unlisted:
            self.errors.append(f"{self._unlisted} more bad locs not listed")

    def _normalized(self, loc: str) -> str | None:
        try:
            return self.normalize(loc)
        except UrlError as exc:
            if self._listed < _MAX_LISTED:
                self._listed += 1
                self.errors.append(f"bad loc {loc[:200]!r}: {exc.reason}")
            else:
                self._unlisted += 1
            return None
