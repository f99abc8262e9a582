"""Full-text search over crawled pages and products, on SQLite (FTS5) and PostgreSQL (tsvector).

The SQL lives in the store (``harvestman.store.search``: the searches are in its ``targets``,
``include_name`` hides the index from Alembic in its ``index``); this package holds the query
language (``query``), the hits (``hits``), snippets and their rendering (``highlight``,
``terminal``), and imports nothing itself. The database keeps the index (migration 0006):
triggers feed FTS5 tables on SQLite, generated ``search_vector`` columns with GIN indexes on
PostgreSQL. So writing a page or a product row is all it takes to index it,
and re-crawls, deletes and retention re-index or unindex by themselves.

    result = store.search.search_pages(crawl_id, 'solar "heat pump" -diesel', domain="a.com")
    for hit in result.hits:
        print(hit.rank, hit.url, hit.snippet)
"""
