"""Full-text search over crawled pages and products, on SQLite (FTS5) and PostgreSQL (tsvector).

The SQL lives in the store (``harvestman.store.search``); this package holds the query language,
the hits, snippets and their rendering, and re-exports the searches. The database keeps the
index (migration 0006): triggers feed FTS5 tables on SQLite, generated ``search_vector`` columns
with GIN indexes on PostgreSQL. So writing a page or a product row is all it takes to index it,
and re-crawls, deletes and retention re-index or unindex by themselves.

    result = store.search.search_pages(crawl_id, 'solar "heat pump" -diesel', domain="a.com")
    for hit in result.hits:
        print(hit.rank, hit.url, hit.snippet)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvestman.search.hits import RANK_WINDOW, PageHit, ProductHit, SearchResult
from harvestman.search.query import (
    MARK_END,
    MARK_START,
    Query,
    parse_query,
    require_query,
    snippet,
)

if TYPE_CHECKING:
    from harvestman.store.search.targets import search_pages, search_products

__all__ = [
    "MARK_END",
    "MARK_START",
    "RANK_WINDOW",
    "PageHit",
    "ProductHit",
    "Query",
    "SearchResult",
    "include_name",
    "parse_query",
    "require_query",
    "search_pages",
    "search_products",
    "snippet",
]

# The store's search modules import this package's query language, so the searches are
# imported on first use: importing either package first then works.
_FROM_STORE = ("search_pages", "search_products")


def __getattr__(name: str) -> Any:
    if name not in _FROM_STORE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from harvestman.store.search import targets

    return getattr(targets, name)


_INDEX_TABLES = ("crawled_pages_fts", "products_fts")


def include_name(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    """Alembic's ``include_name`` hook: hide the search index from autogenerate comparisons.

    The FTS5 tables (and their shadow tables), the SQLite indexes for filters and the
    ``search_vector`` columns and GIN indexes exist in one dialect each, so ``schema.metadata``
    cannot declare them.
    """
    if name is None:
        return True
    if type_ == "table":
        return not any(name == t or name.startswith(f"{t}_") for t in _INDEX_TABLES)
    if type_ == "column":
        return name not in ("search_vector", "rank_vector", "pair_vector")
    if type_ == "index":
        return not name.endswith(("_search_vector", "_search_filter", "_pair_vector"))
    return True
