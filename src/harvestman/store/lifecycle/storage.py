"""What the store occupies, table by table and index by index, and how fast it fills.

PostgreSQL: the tables and indexes of the store's schema, sized by ``pg_total_relation_size``
(table, indexes, TOAST), ``pg_relation_size`` (the table's main fork) and ``pg_indexes_size``;
rows are the planner's estimate (``reltuples``, exact enough for a report and free) for a
table over ``COUNT_BELOW_BYTES``, counted for a smaller one (an estimate taken while it was
empty said "~0" for a crawl of hundreds of pages) or one never analyzed. SQLite: every
table's rows counted, and its pages and each index's from the ``dbstat`` virtual table; a
SQLite built without it reports the file's pages only (``page_count`` and
``freelist_count``).

Pages per day come from the stats history (minute and day rows added up per UTC day); a store
without history counts its pages' ``fetched_at`` per day instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, func, select, text
from sqlalchemy.exc import DBAPIError

from harvestman.store.dialect import is_sqlite
from harvestman.store.schema import crawled_pages, crawls, stats_history

DAY = 86400.0
# Tables up to this size are counted (a scan of a few ms), larger ones estimated.
COUNT_BELOW_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TableSize:
    """A table: rows, its own bytes, its indexes' bytes, all of it (with TOAST); ``None`` where
    the database cannot tell (SQLite without ``dbstat``)."""

    name: str
    rows: int
    table_bytes: int | None
    index_bytes: int | None
    total_bytes: int | None
    rows_estimated: bool = False


@dataclass(frozen=True, slots=True)
class IndexSize:
    name: str
    table: str
    bytes: int


@dataclass(frozen=True, slots=True)
class StoreSizes:
    """The store's tables and indexes (largest first) and the bytes it occupies in all.
    ``data_directory``: where a PostgreSQL server keeps its files, when this role may read it."""

    dialect: str
    tables: list[TableSize]
    indexes: list[IndexSize]
    total_bytes: int
    data_directory: str | None = None


def store_sizes(engine: Engine) -> StoreSizes:
    with engine.connect() as conn:
        if is_sqlite(engine):
            return _sqlite_sizes(conn)
        return _postgres_sizes(conn)


def pages_per_day(engine: Engine, since: float) -> dict[float, int]:
    """Pages stored per UTC day (its midnight, epoch seconds) from ``since`` on."""
    history = stats_history.c
    day = func.floor(history.bucket_start / DAY) * DAY
    with engine.connect() as conn:
        found = conn.execute(
            select(day, func.sum(history.pages)).where(history.bucket_start >= since).group_by(day)
        ).all()
        if not found:
            fetched = func.floor(crawled_pages.c.fetched_at / DAY) * DAY
            found = conn.execute(
                select(fetched, func.count())
                .where(crawled_pages.c.fetched_at >= since)
                .group_by(fetched)
            ).all()
    return {float(moment): int(pages or 0) for moment, pages in found}


def page_rows(engine: Engine) -> tuple[int, int]:
    """(pages stored, pages with an archived body)."""
    with engine.connect() as conn:
        return (
            int(conn.execute(select(func.count()).select_from(crawled_pages)).scalar_one()),
            int(
                conn.execute(
                    select(func.count()).where(crawled_pages.c.archive_path.is_not(None))
                ).scalar_one()
            ),
        )


def archive_locations(engine: Engine) -> list[str]:
    """The raw archive locations crawls recorded."""
    with engine.connect() as conn:
        found = conn.execute(
            select(crawls.c.archive_location).where(crawls.c.archive_location.is_not(None))
        ).scalars()
        return sorted({str(location) for location in found})


def _postgres_sizes(conn: Connection) -> StoreSizes:
    schema = conn.execute(text("SELECT current_schema()")).scalar_one()
    relations = conn.execute(
        text(
            "SELECT c.relname, c.reltuples, pg_relation_size(c.oid), pg_indexes_size(c.oid),"
            " pg_total_relation_size(c.oid)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = :schema AND c.relkind IN ('r', 'p')"
        ),
        {"schema": schema},
    ).all()
    quote = conn.dialect.identifier_preparer.quote
    tables = []
    for name, estimate, own, indexes, total in relations:
        estimated = estimate is not None and estimate >= 0 and own > COUNT_BELOW_BYTES
        rows = (
            int(estimate)
            if estimated
            else int(
                conn.execute(
                    text(f"SELECT count(*) FROM {quote(schema)}.{quote(name)}")
                ).scalar_one()
            )
        )
        tables.append(TableSize(name, rows, int(own), int(indexes), int(total), estimated))
    indexes = [
        IndexSize(name, table, int(size))
        for name, table, size in conn.execute(
            text(
                "SELECT i.relname, t.relname, pg_relation_size(i.oid) FROM pg_index x"
                " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
                " JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = :schema"
            ),
            {"schema": schema},
        )
    ]
    try:
        with conn.begin_nested():
            directory = conn.execute(text("SHOW data_directory")).scalar()
    except DBAPIError:  # only superusers and pg_read_all_settings may read it
        directory = None
    return StoreSizes(
        "postgresql",
        sorted(tables, key=lambda t: (-(t.total_bytes or 0), t.name)),
        sorted(indexes, key=lambda i: (-i.bytes, i.name)),
        sum(t.total_bytes or 0 for t in tables),
        None if directory is None else str(directory),
    )


def _sqlite_sizes(conn: Connection) -> StoreSizes:
    page_size = int(conn.exec_driver_sql("PRAGMA page_size").scalar_one())
    pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar_one())
    objects = conn.exec_driver_sql(
        # sqlite_autoindex_* (UNIQUE constraints) and sqlite_sequence take room too.
        "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"
    ).all()
    try:
        sized = {
            str(name): int(size)
            for name, size in conn.exec_driver_sql(
                "SELECT name, sum(pgsize) FROM dbstat GROUP BY name"
            )
        }
    except DBAPIError:  # a SQLite built without SQLITE_ENABLE_DBSTAT_VTAB
        sized = None
    indexes = [
        IndexSize(name, table, sized.get(name, 0))
        for kind, name, table in objects
        if kind == "index" and sized is not None
    ]
    tables = []
    for kind, name, _ in objects:
        if kind != "table":
            continue
        rows = int(conn.exec_driver_sql(f'SELECT count(*) FROM "{name}"').scalar_one())
        if sized is None:
            tables.append(TableSize(name, rows, None, None, None))
            continue
        own = sized.get(name, 0)
        index_bytes = sum(i.bytes for i in indexes if i.table == name)
        tables.append(TableSize(name, rows, own, index_bytes, own + index_bytes))
    return StoreSizes(
        "sqlite",
        sorted(tables, key=lambda t: (-(t.total_bytes or 0), t.name)),
        sorted(indexes, key=lambda i: (-i.bytes, i.name)),
        pages * page_size,
    )
