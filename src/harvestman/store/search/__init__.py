"""Full-text search's SQL: the query plans and ranked reads of FTS5 (SQLite) and tsvector
(PostgreSQL), and the page and product searches built on them.

The query language, snippets and rendering are pure Python in ``harvestman.search``, which
re-exports ``search_pages`` and ``search_products`` from here.
"""
