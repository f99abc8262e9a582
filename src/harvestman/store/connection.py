"""What every repository of the SQL store stands on: the engine and the store's threads.

Calls are async; each runs synchronously on the store's own thread(s), so the event loop never
blocks on the database and SQLite sees a single writer. Writes go through ``transaction``. A call
cancelled once its thread has started it ends before the cancellation goes on (its effects are
in the database before the caller's cleanup runs); one still queued never runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Self, TypeVar

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import StoreError
from harvestman.store import dialect, migrate, template
from harvestman.store.transaction import transaction

T = TypeVar("T")


class StoreConnection:
    """The engine, the threads that run its calls, and the store's own health checks."""

    def __init__(
        self, database_url: str, *, threads: int = 4, schema_template: Path | None = None
    ) -> None:
        self.database_url = database_url
        self.schema_template = schema_template  # a new SQLite database is copied from there
        self.engine: Engine = dialect.make_engine(database_url)
        # SQLite: exactly one thread, the single writer. PostgreSQL: a few, so a heartbeat
        # never waits behind a long lease or flush (a late heartbeat reads as a dead worker).
        self._threads = 1 if dialect.is_sqlite(self.engine) else max(1, threads)
        self._executor: ThreadPoolExecutor | None = None
        self.schema = migrate.Schema(self.engine)

    @property
    def is_embedded(self) -> bool:
        """Whether this is the embedded store (SQLite: one machine, one writer)."""
        return dialect.is_sqlite(self.engine)

    def _begin(self) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction (``store.transaction``: the locking rules)."""
        return transaction(self.engine)

    def _begin_index_walks(self) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction of the crawl's leases: planned as index walks on PostgreSQL
        (``store.pgbatch``)."""
        return transaction(self.engine, index_walks=True)

    def _begin_batch(self) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction of many statements of a few rows each (the crawl's batches),
        planned as index walks on PostgreSQL (``store.pgbatch``)."""
        return transaction(self.engine, batch=True, index_walks=True)

    def dispose(self) -> None:
        """Close every pooled connection: the end of a store used without ``async with``."""
        self.engine.dispose()

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="harvestman-store")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.engine.dispose()

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise StoreError("the store is not open: use `async with SqlStore(...)`")
        work = self._executor.submit(fn, *args)
        done = asyncio.wrap_future(work)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            # A call that has started commits whether its caller waits or not: let it end
            # before the cancellation goes on, so that what follows (a shutdown giving this
            # worker's leases back, say) comes after it rather than beside it.
            if not work.cancel():
                with contextlib.suppress(Exception):
                    await done
            raise
        except SQLAlchemyError as exc:
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a synchronous call on this store (a read such as ``list_rows``, or an admin
        write) in a thread of its own, beside the store's threads, with errors translated."""
        try:
            return await asyncio.to_thread(fn, *args)
        except SQLAlchemyError as exc:
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    async def upgrade(self) -> None:
        """Bring the schema to the code's head revision (Alembic)."""
        await self._run(migrate.upgrade, self.engine)

    async def check_schema(self) -> None:
        """Raise SchemaOutdated when the database is behind the code."""
        await self._run(migrate.check_current, self.engine)

    async def prepare_schema(self) -> None:
        """Ready the schema for a crawl or the service: the embedded store (SQLite) migrates
        itself to the code's head (a new one is a copy of ``schema_template``'s, when given:
        ``store.template``); a shared one (PostgreSQL) is migrated by its operator
        (``harvestman db upgrade``), so it is only checked (SchemaOutdated)."""
        if dialect.is_sqlite(self.engine):
            await self._run(template.ready_schema, self.engine, self.schema_template)
        else:
            await self.check_schema()

    async def check(self) -> None:
        """Prove the database answers on a NEW connection (a pooled SQLite connection keeps a
        deleted file open and would say all is well)."""

        def _check() -> None:
            if dialect.is_sqlite(self.engine):
                import sqlite3

                path = self.engine.url.database or ""
                fresh = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=5)
                try:
                    fresh.execute("SELECT 1 FROM crawls LIMIT 1").fetchall()
                finally:
                    fresh.close()
                return
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        try:
            await self._run(_check)
        except Exception as exc:  # sqlite3 errors are not SQLAlchemy's
            raise StoreError(f"{type(exc).__name__}: {exc}") from exc

    async def reconnect(self) -> None:
        """Drop every pooled connection; the next use opens new ones."""
        await self._run(self.engine.dispose)

    async def ping(self) -> None:
        def _ping() -> None:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        await self._run(_ping)
