"""Where SQLite and PostgreSQL differ: engine set-up, upserts and row locking.

Everything dialect-specific in the store lives here, so each of its queries exists once.
"""

from __future__ import annotations

import functools
import select
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Table,
    Text,
    cast,
    create_engine,
    event,
    func,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, InvalidatePoolError, OperationalError

from harvestman.errors import ConfigError

WRITE_OPTION = "harvestman_sqlite_begin"
MEMORY_SUBJOURNAL_OPTION = "harvestman_sqlite_memory_subjournal"


def make_engine(database_url: str) -> Engine:
    """An Engine for ``database_url``; SQLite gets WAL, PostgreSQL the psycopg driver."""
    try:
        url = make_url(database_url)
    except Exception as exc:
        raise ConfigError(f"invalid database URL {database_url!r}: {exc}") from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    if backend == "postgresql":
        if url.drivername == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
        engine = create_engine(url, pool_size=8, max_overflow=8)
        event.listen(engine, "checkout", _drop_closed_connections)
        return engine
    raise ConfigError(f"unsupported database {backend!r}: use sqlite:/// or postgresql://")


def _drop_closed_connections(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Make the pool replace its connections when the one it hands out was closed by the
    server (a restart, an administrator's pg_terminate_backend), as ``pool_pre_ping`` would,
    without its round trip on every checkout (about a third of a crawl's round trips).

    An idle connection has nothing to read unless the server spoke unasked: a closed one
    holds its last message and end of file. Only then is it pinged; a failed ping drops
    every connection pooled before it, since a restart closed them all.
    """
    if not _has_input(dbapi_connection.fileno()):
        return
    try:  # a notice the server sent meanwhile is read by the ping; the connection is fine
        dbapi_connection.execute("SELECT 1")
        dbapi_connection.rollback()
    except Exception as exc:
        raise InvalidatePoolError(f"the server closed the connection: {exc}") from exc


def _has_input(fd: int) -> bool:
    """Whether ``fd`` has something to read (or was closed), without waiting."""
    if hasattr(select, "poll"):  # not bound to descriptors below 1024, as select() is
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # Windows
    return bool(readable)


def unusable_database(exc: BaseException) -> str | None:
    """One line for a database that could not be reached or used (None: not such an error).

    SQLAlchemy's message spans lines (the driver's hint, a link to its docs); the first line of
    the driver's own message says what happened, without the URL (it may hold a password).
    """
    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    detail = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
    first = detail[0].strip() if detail else type(exc).__name__
    return f"the database cannot be used: {first}"


def _sqlite_begin(conn: Connection) -> None:
    # pysqlite would run a SELECT outside any transaction and BEGIN only at the first write,
    # so two processes could read the same rows to lease. We BEGIN ourselves; writers take
    # the write lock up front (IMMEDIATE) so a lease's SELECT and UPDATE are one atomic step.
    options = conn.get_execution_options()
    begin = f"BEGIN {options.get(WRITE_OPTION, '')}".rstrip()
    if not options.get(MEMORY_SUBJOURNAL_OPTION):
        conn.exec_driver_sql(begin)
        return
    # A statement that triggers or constraints may abort midway (each row of the page upsert)
    # keeps the pages it changes in a sub-journal, which past 64 KiB becomes a temporary file
    # for the rest of the transaction: a replay of a crawl's 100 page batches opened that file
    # in 85, and each later row wrote ~10 pages to it (its page upsert: 21 -> 16 µs a row
    # with the sub-journal in memory). SQLite decides where the sub-journal lives when the
    # write transaction begins, so temp_store is MEMORY for the BEGIN alone: sorts and
    # temporary tables in the transaction still use files.
    conn.exec_driver_sql("PRAGMA temp_store=MEMORY")
    try:
        conn.exec_driver_sql(begin)
    finally:
        conn.exec_driver_sql("PRAGMA temp_store=DEFAULT")


def write_options(engine: Engine) -> dict[str, Any]:
    """Execution options for a connection that will write (IMMEDIATE transactions on SQLite)."""
    return {WRITE_OPTION: "IMMEDIATE"} if is_sqlite(engine) else {}


def batch_write_options(engine: Engine) -> dict[str, Any]:
    """``write_options`` for a transaction of many statements of a few rows each (the crawl's
    batch writes): on SQLite, their sub-journal kept in memory (see ``_sqlite_begin``); one such
    statement holds the few pages its rows change."""
    if not is_sqlite(engine):
        return {}
    return {WRITE_OPTION: "IMMEDIATE", MEMORY_SUBJOURNAL_OPTION: True}


def read_options(engine: Engine) -> dict[str, Any]:
    """Execution options for a connection that runs one read statement: autocommit on
    PostgreSQL. One statement sees one snapshot either way, and psycopg otherwise spends a
    round trip on BEGIN and another on the pool's ROLLBACK, two of a list page's four."""
    return {} if is_sqlite(engine) else {"isolation_level": "AUTOCOMMIT"}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # transactions are begun by _sqlite_begin
    # WAL lets readers (stats, export, API) run beside the crawl's writer; NORMAL sync is
    # durable across a process kill (only an OS crash can lose the last transactions).
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    # 8 MB of page cache per connection, not SQLite's 64: the cache lives in the process, and a
    # crawl's store outgrows any cache (its hot pages are the B-tree's upper levels). Measured
    # on a 100,000-page replay of the crawl's writes, 64 -> 16 MB: the same CPU (348 vs 349 µs a
    # page), 34 MB less peak RSS; 16 -> 8 MB (with the memo's 16,384) on the 200,000-page crawl:
    # the same CPU, the crawler's process 177 -> 152 MB.
    cursor.execute("PRAGMA cache_size=-8192")
    cursor.close()


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


Upsert = sqlite.Insert | postgresql.Insert
"""An INSERT that knows ON CONFLICT (``on_conflict_do_update``, ``excluded``) on both stores."""


def insert(engine: Engine, table: Table) -> Upsert:
    """The dialect's INSERT, which knows ON CONFLICT."""
    return insert_of(engine.dialect.name, table)


def insert_of(backend: str, table: Table) -> Upsert:
    """:func:`insert` by the dialect's name (``engine.dialect.name``), for statements built
    once per dialect."""
    return sqlite.insert(table) if backend == "sqlite" else postgresql.insert(table)


def insert_ignore(engine: Engine, table: Table, *conflict: str) -> Upsert:
    """INSERT ... ON CONFLICT (conflict) DO NOTHING: one statement object for each dialect,
    table and conflict (``store.bulk`` compiles a statement it has seen once)."""
    return _insert_ignore(engine.dialect.name, table, conflict)


@functools.cache
def _insert_ignore(backend: str, table: Table, conflict: tuple[str, ...]) -> Upsert:
    return insert_of(backend, table).on_conflict_do_nothing(index_elements=list(conflict))


def json_rows(dialect: str, *columns: ColumnElement[Any]) -> ColumnElement[str | None]:
    """An aggregate of ``columns`` over a group's rows on the ``dialect`` (an engine's
    ``dialect.name``): one JSON array of arrays, as text (NULL or ``[]`` for no rows), in no
    set order (SQLite's aggregates take no ORDER BY before 3.44). SQLite's JSON functions are
    built in since 3.38 and in the usual builds before (Debian's, Python's own)."""
    if dialect == "sqlite":
        return func.json_group_array(func.json_array(*columns), type_=Text)
    return cast(func.json_agg(func.json_build_array(*columns)), Text)


def lock_suffix(engine: Engine) -> str:
    """Row locking for a lease SELECT: SKIP LOCKED on PostgreSQL; SQLite has one writer."""
    return "" if is_sqlite(engine) else " FOR UPDATE SKIP LOCKED"


def safe_url(database_url: str) -> str:
    """``database_url`` as it may be shown or logged: its password masked."""
    return make_url(database_url).render_as_string(hide_password=True)


def sqlite_path(database_url: str) -> Path | None:
    """The file of a SQLite database URL; None for another database and in-memory SQLite."""
    url = make_url(database_url)
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a URI filename: SQLite parses it, we don't
        return None
    return Path(database)
