"""The one write transaction of the store, and the order it locks ``urls`` rows in.

Every write to the store opens ``transaction(engine)``. The locking rules it stands for:

- **SQLite** has a single writer. The transaction takes the write lock at BEGIN (``BEGIN
  IMMEDIATE``, ``dialect.write_options``), so what it reads cannot go stale before it writes:
  a lease's SELECT and UPDATE are one atomic step, and two processes (``crawl`` beside
  ``serve``) never both read the same rows to change.
- **PostgreSQL** has many writers. A statement that changes many ``urls`` rows and may wait on
  another writer locks them in id order (``locked_ids``): a plain ``UPDATE urls ... WHERE
  leased_by = ...`` locks rows in whatever order its plan scans them, and a batch write locks
  them in batch order; two such statements sharing rows deadlocked. Batch writes sort their
  rows by id (outcomes) or url hash (inserts) before writing, for the same reason.

    >>> with transaction(engine) as conn:  # doctest: +SKIP
    ...     conn.execute(update(urls).where(locked_ids(urls.c.host == host)).values(...))
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import ColumnElement, Connection, Engine, select
from sqlalchemy.exc import SQLAlchemyError

from harvestman.store import dialect, pgbatch
from harvestman.store.schema import urls


@contextlib.contextmanager
def transaction(
    engine: Engine, *, batch: bool = False, index_walks: bool = False
) -> Iterator[Connection]:
    """A write transaction on ``engine``: IMMEDIATE on SQLite (the write lock is taken at BEGIN),
    committed when the block ends, rolled back when it raises. ``batch``: many statements of a
    few rows each, as the crawl's batch writes (``dialect.batch_write_options``).

    ``index_walks``: on PostgreSQL, its statements are planned as index walks whatever the
    statistics say (``pgbatch.INDEX_WALKS``: the crawl's leases and batch writes), set by the
    message that begins the transaction."""
    if index_walks and not dialect.is_sqlite(engine):
        with _begun_with(engine, pgbatch.INDEX_WALKS) as conn:
            yield conn
        return
    with engine.connect() as conn:
        options = dialect.batch_write_options if batch else dialect.write_options
        conn.execution_options(**options(engine))
        with conn.begin():
            yield conn


@contextlib.contextmanager
def _begun_with(engine: Engine, settings: str) -> Iterator[Connection]:
    """A PostgreSQL transaction whose BEGIN carries ``settings`` (statements without
    parameters) in the same message: one round trip where the driver's own BEGIN and a
    statement of settings were two. The driver is in autocommit, so it sends no BEGIN of
    its own, and the transaction is begun and ended here."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql(f"BEGIN; {settings}")
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(SQLAlchemyError):  # a lost connection is already dropped
                conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")


def locked_ids(*where: ColumnElement[bool]) -> ColumnElement[bool]:
    """``urls.id IN (the ids matching where, locked in id order)``, for a write of many rows.

    Every multi-row ``urls`` UPDATE or DELETE that may wait on another writer selects its rows
    through this (SQLite, a single writer, ignores FOR UPDATE).
    """
    ids = select(urls.c.id).where(*where).order_by(urls.c.id).with_for_update()
    return urls.c.id.in_(ids.scalar_subquery())
