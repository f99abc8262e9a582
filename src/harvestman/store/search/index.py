"""What Alembic must not compare: the search index (migration 0006) and the other objects of
one dialect only, which the schema's metadata cannot declare."""

from __future__ import annotations

_INDEX_TABLES = ("crawled_pages_fts", "products_fts")
# SQLite's only: PostgreSQL dropped it (migration 0027; store/schema.py says why).
_ONE_DIALECT_INDEXES = ("ix_urls_lease",)


def include_name(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    """Alembic's ``include_name`` hook: hide the search index, and the indexes of one dialect,
    from autogenerate comparisons.

    The FTS5 tables (and their shadow tables, and ``crawled_pages_fts_deferred``: migration
    0026), the SQLite indexes for filters and the ``search_vector`` columns and GIN indexes
    exist in one dialect each, so ``schema.metadata`` cannot declare them.
    """
    if name is None:
        return True
    if type_ == "table":
        return not any(name == t or name.startswith(f"{t}_") for t in _INDEX_TABLES)
    if type_ == "column":
        return name not in ("search_vector", "rank_vector", "pair_vector")
    if type_ == "index":
        return name not in _ONE_DIALECT_INDEXES and not name.endswith(
            ("_search_vector", "_search_filter", "_pair_vector")
        )
    return True
