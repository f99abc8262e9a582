"""The job runner's work on the crawl tables: its start pages made due again before a run, and
their states and stored content hashes read after it.

``make_due`` is a multi-row UPDATE of ``urls`` that may meet a crawl's batch writes and lease
extensions, so it follows the store's locking rules: an IMMEDIATE transaction on SQLite, rows
locked in id order on PostgreSQL (``transaction.locked_ids``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import NamedTuple, TypeVar

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import SQLAlchemyError

from harvestman.errors import StoreError
from harvestman.records import UrlStatus
from harvestman.store.schema import urls
from harvestman.store.transaction import locked_ids, transaction

T = TypeVar("T")

_FINISHED = [UrlStatus.COMPLETED.value, UrlStatus.FAILED.value, UrlStatus.BLOCKED.value]


class StartState(NamedTuple):
    """A start page's row after a run."""

    status: UrlStatus
    error_class: str | None
    error: str | None


class StartPages:
    """Start pages of crawl namespaces on the crawl store's ``engine``.

    Calls run on a worker thread, so the event loop never blocks; database errors become
    StoreError.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def make_due(self, crawl_id: int, hashes: Collection[str], now: float) -> int:
        """Rows ``hashes`` that finished (completed, failed, blocked) become pending again now,
        with their attempts reset; rows still pending or leased are left alone. Returns how many
        were made due."""
        wanted = sorted(hashes)
        if not wanted:
            return 0

        def _make_due() -> int:
            with transaction(self._engine) as conn:
                result = conn.execute(
                    update(urls)
                    .where(
                        locked_ids(
                            urls.c.crawl_id == crawl_id,
                            urls.c.url_hash.in_(wanted),
                            urls.c.status.in_(_FINISHED),
                        )
                    )
                    .values(status=UrlStatus.PENDING.value, next_crawl_at=now, attempts=0)
                )
                return result.rowcount or 0

        return await _on_thread(_make_due)

    async def states(self, crawl_id: int, hashes: Collection[str]) -> dict[str, StartState]:
        """How each row ``hashes`` that exists stands: its status, error class and error."""
        wanted = sorted(hashes)
        if not wanted:
            return {}

        def _read() -> dict[str, StartState]:
            with self._engine.connect() as conn:
                rows = conn.execute(
                    select(urls.c.url_hash, urls.c.status, urls.c.error_class, urls.c.error).where(
                        urls.c.crawl_id == crawl_id, urls.c.url_hash.in_(wanted)
                    )
                ).all()
            return {
                row.url_hash: StartState(UrlStatus(row.status), row.error_class, row.error)
                for row in rows
            }

        return await _on_thread(_read)

    async def content_hashes(self, crawl_id: int, hashes: Collection[str]) -> dict[str, str | None]:
        """The stored content hash of each row ``hashes`` that exists (None: no text hashed)."""
        wanted = sorted(hashes)
        if not wanted:
            return {}

        def _read() -> dict[str, str | None]:
            with self._engine.connect() as conn:
                rows = conn.execute(
                    select(urls.c.url_hash, urls.c.content_hash).where(
                        urls.c.crawl_id == crawl_id, urls.c.url_hash.in_(wanted)
                    )
                ).all()
            return {row.url_hash: row.content_hash for row in rows}

        return await _on_thread(_read)


async def _on_thread(fn: Callable[[], T]) -> T:
    try:
        return await asyncio.to_thread(fn)
    except SQLAlchemyError as exc:
        raise StoreError(f"{type(exc).__name__}: {exc}") from exc
