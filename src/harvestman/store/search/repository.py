"""Search as a store method, for callers that hold the store rather than its engine."""

from __future__ import annotations

from typing import Any

from harvestman.search.hits import PageHit, ProductHit, SearchResult
from harvestman.store.connection import StoreConnection
from harvestman.store.search.targets import search_pages, search_products


class SearchRepository(StoreConnection):
    """Ranked full-text search over a crawl's pages and products (synchronous: run it off the
    event loop). Arguments as ``store.search.targets.search_pages`` / ``search_products``."""

    def search_pages(self, crawl_id: int | None, q: str, **options: Any) -> SearchResult[PageHit]:
        return search_pages(self.engine, crawl_id, q, **options)

    def search_products(
        self, crawl_id: int | None, q: str, **options: Any
    ) -> SearchResult[ProductHit]:
        return search_products(self.engine, crawl_id, q, **options)
