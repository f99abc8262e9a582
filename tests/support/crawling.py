"""One crawl of a real store, for the integration tests: the crawler, then the rows it left."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from harvestman.config import Settings
from harvestman.crawl.crawler import Crawler
from harvestman.store import SqlStore


class Crawled(NamedTuple):
    """The crawler after its run, the crawl's frontier rows and its stored pages."""

    crawler: Crawler
    rows: list[dict[str, Any]]
    pages: list[dict[str, Any]]

    @property
    def pages_by_url(self) -> dict[str, dict[str, Any]]:
        return {page["url"]: page for page in self.pages}


async def crawl(
    settings: Settings | Any,
    seeds: Sequence[str] | str,
    *,
    clock: Callable[[], float] = time.time,
) -> Crawled:
    """Crawl ``seeds`` (one URL or many) into ``settings.database_url``, migrated first."""
    if isinstance(seeds, str):
        seeds = [seeds]
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        crawler = Crawler(settings, store, seeds, clock=clock)
        await crawler.run()
        rows = list(store.iter_urls(crawler.crawl_id))
        pages = list(store.iter_pages(crawler.crawl_id))
    return Crawled(crawler, rows, pages)
