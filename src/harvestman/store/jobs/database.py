"""``JobDatabase``: the engine, the thread(s) and the transactions the jobs queries run on.

Queries are synchronous SQLAlchemy Core run on the store's own thread(s), so the event loop
never blocks on the database; each repository method is one call and, when it writes, one
transaction (IMMEDIATE on SQLite, so a read-then-write is atomic there too). The repositories
take this, and ``JobStore`` (``db.py``) is this with the repositories on it, so no repository
imports the store that holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Self, TypeVar

from sqlalchemy import Connection, Engine, literal, select
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import StoreError, StoreRejected
from harvestman.store import dialect
from harvestman.store.jobs import tables as tables  # its tables join the store's metadata
from harvestman.store.transaction import transaction
from harvestman.store.transient import is_transient

T = TypeVar("T")

Clock = Callable[[], float]


class JobDatabase:
    """One engine (``SqlStore.engine`` to share the crawl store's pool; a URL makes one of its
    own), the threads queries run on, and ``clock``: the time every query uses (tests pass a
    controllable one). Open it with ``async with``."""

    def __init__(self, engine: Engine | str, *, threads: int = 4, clock: Clock = time.time) -> None:
        self._owns_engine = isinstance(engine, str)
        self.engine: Engine = dialect.make_engine(engine) if isinstance(engine, str) else engine
        # SQLite has one writer anyway; more threads would only wait on its lock.
        self._threads = 1 if dialect.is_sqlite(self.engine) else max(1, threads)
        self._executor: ThreadPoolExecutor | None = None
        self.clock = clock

    async def __aenter__(self) -> Self:
        self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="harvestman-jobs")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self._owns_engine:
            self.engine.dispose()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the store's thread; database errors become StoreError, and
        StoreRejected when the same call can never succeed (``store.transient``: a broken
        constraint, a value the database cannot hold), so a caller waiting out an outage
        does not wait on a refusal."""
        if self._executor is None:
            raise StoreError("the job store is not open: use `async with JobStore(...)`")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn, *args)
        except SQLAlchemyError as exc:
            error = StoreError if is_transient(exc) else StoreRejected
            raise error(f"{type(exc).__name__}: {exc}") from exc

    async def ping(self) -> None:
        """One round trip to the database: StoreError while it cannot be reached."""

        def _ping() -> None:
            with self.read() as conn:
                conn.execute(select(literal(1)))

        await self.run(_ping)

    @contextlib.contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction (the write lock is taken at BEGIN on SQLite)."""
        with transaction(self.engine) as conn:
            yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn
