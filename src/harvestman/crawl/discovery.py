"""What a crawl learns of new URLs: the seen filter and the scope every discovered URL passes.

Links, feeds, sitemaps, listings and guesses (pagination, archives) all become ``NewUrl`` rows
here, each checked once against this process's seen cache (:mod:`.seen`, bounded) and the
crawl's scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harvestman.crawl.frontier import priority_for
from harvestman.crawl.seen import SeenCache
from harvestman.discovery.listings import feed_row, sitemap_rows
from harvestman.records import NewUrl
from harvestman.stats import Stats
from harvestman.urls import Scope, host_key, url_hash

PAGE, LINK = "page", "link"


class Discovery:
    """The seen filter (a cache: the store's unique index is the truth) and the crawl's scope.

    ``scope`` is set when the crawl starts and again when a worker refreshes it.
    """

    def __init__(self, stats: Stats, *, max_depth: int, seen_cache_size: int) -> None:
        self.stats = stats
        self.max_depth = max_depth
        self.seen = SeenCache(seen_cache_size)  # normalized URLs
        self.scope = Scope([])

    def seed_row(self, url: str) -> NewUrl:
        self.seen.add(url)
        row = NewUrl(url, url_hash(url), host_key(url), 0, priority_for(url, 0, is_seed=True))
        row.via = "seed"
        return row

    def links(self, links: Iterable[str], depth: int, parent: int | None = None) -> list[NewUrl]:
        """The links that are new to this process and in scope, as pages at ``depth``, found
        on the frontier row ``parent``."""
        check_scope = self.scope.check
        found: list[NewUrl] = []
        out_of_scope = 0
        for link in self.seen.fresh(links):  # only these are hashed
            if check_scope(link) is not None:
                out_of_scope += 1
                continue
            priority = priority_for(link, depth)
            found.append(
                NewUrl(link, url_hash(link), host_key(link), depth, priority, PAGE, None, parent,
                       LINK)
            )  # fmt: skip
        if out_of_scope:
            self.stats.inc("frontier/out_of_scope", out_of_scope)
        return found

    def feeds(self, feeds: Iterable[str], depth: int, parent: int | None = None) -> list[NewUrl]:
        """Feed URLs new to this process and in scope, as ``feed`` rows."""
        check_scope = self.scope.check
        found = []
        for url in feeds:
            if url not in self.seen and check_scope(url) is None:
                self.seen.add(url)
                row = feed_row(url, depth)
                row.parent_id, row.via = parent, "feed"
                found.append(row)
        return found

    def sitemaps(self, url: str, declared: Sequence[str], root: str) -> list[NewUrl]:
        """A host's sitemaps (robots.txt's and ``/sitemap.xml``), new and in scope."""
        if self.max_depth == 0:  # only the seeds: what a sitemap lists is out of reach
            return []
        check = self.scope.check
        found = []
        for row in sitemap_rows(declared, root):
            if row.url not in self.seen and check(row.url) is None:
                self.seen.add(row.url)
                row.via = "sitemap"
                found.append(row)
        return found

    def listed(self, rows: Iterable[NewUrl], parent: int, via: str) -> list[NewUrl]:
        """A sitemap's or feed's rows within max depth that are new, or say they changed; found
        in the listing of frontier row ``parent`` (``via``: sitemap or feed).

        Listed pages do not join the seen cache (child sitemaps and feeds do): a sitemap lists
        each URL once, and an index of 2,000,000 would fill the cache (31 MB at its default
        400,000) and push out the links a crawl keeps meeting. A link to a listed page goes to
        the store once, as in a crawl without sitemaps, and is cached from then on.
        """
        found = [
            row
            for row in rows
            if (row.kind != "page" or row.depth <= self.max_depth)
            and (row.url not in self.seen or row.lastmod)
        ]
        for row in found:
            if row.kind != "page":
                self.seen.add(row.url)
            row.parent_id, row.via = parent, via
        return found

    def guessed(
        self, urls: Iterable[str], depth: int, via: str, parent: int | None = None
    ) -> list[NewUrl]:
        """Speculative URLs (``via`` pagination or archive): low priority, same depth, in
        scope; a pagination guess's ``parent`` is the page it was guessed from."""
        found = []
        for url in urls:
            if url in self.seen or self.scope.check(url) is not None:
                continue
            self.seen.add(url)
            row = NewUrl(url, url_hash(url), host_key(url), depth, 1)
            row.parent_id, row.via = parent, via
            found.append(row)
        self.stats.inc("discovery/guessed", len(found))
        return found
