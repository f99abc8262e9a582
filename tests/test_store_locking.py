"""Row lock order on PostgreSQL: a batch write and a lease extension sharing rows.

They deadlocked in the distributed crawl (a worker's flush against its own heartbeat): each
statement locked the same ``urls`` rows, one in batch order, the other in table order. Here a
third connection holds the middle row while both statements queue behind it, so each has
locked its first rows when it is let go: in opposite orders they would wait on each other.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import Connection, Engine, create_engine, insert, select, text

from harvestman.records import CrawlRequest, Outcome, UrlStatus
from harvestman.store import SqlStore
from harvestman.store.schema import urls
from harvestman.urls import url_hash

NOW = 1_700_000_000.0
ROWS = 20
WORKER = "w1"


def leased_rows(engine: Engine, crawl_id: int) -> list[CrawlRequest]:
    """ROWS in-progress rows of WORKER, inserted in descending id order so that a plain scan of
    the table meets them in the opposite order to the ids."""
    requests = []
    with engine.begin() as conn:
        for row_id in range(ROWS, 0, -1):
            url = f"http://h.test/{row_id}"
            conn.execute(
                insert(urls).values(
                    id=row_id, crawl_id=crawl_id, url_hash=url_hash(url), url=url, host="h.test",
                    status="in_progress", priority=2, depth=0, next_crawl_at=NOW,
                    lease_until=NOW + 60, leased_by=WORKER, attempts=0, discovered_at=NOW,
                    updated_at=NOW, kind="page",
                )
            )  # fmt: skip
            requests.append(CrawlRequest(row_id, url, url_hash(url), "h.test", 0, 2))
    return requests  # descending ids: the batch is written in the opposite order too


def blocked_by(conn: Connection, pids: set[int]) -> set[int]:
    """Backends waiting for a lock held by one of ``pids``."""
    # A transaction sees one snapshot of pg_stat_activity: each look is a transaction of its own.
    conn.rollback()
    rows = conn.execute(
        text(
            "SELECT pid FROM pg_stat_activity"
            " WHERE pg_blocking_pids(pid) && CAST(:pids AS integer[])"
        ),
        {"pids": sorted(pids)},
    )
    return {pid for (pid,) in rows}


async def wait_for_blocked(conn: Connection, pids: set[int], count: int) -> set[int]:
    for _ in range(3000):
        waiting = blocked_by(conn, pids)
        if len(waiting) >= count:
            return waiting
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} statements never queued behind {pids}")


async def test_a_batch_write_and_a_lease_extension_do_not_deadlock(pg_schema_url: str) -> None:
    async with SqlStore(pg_schema_url) as store:
        await store.upgrade()
        crawl_id = await store.ensure_crawl("locking")
        await store.register_worker(WORKER, "here", 1, NOW)
        engine = create_engine(pg_schema_url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            requests = leased_rows(engine, crawl_id)
            outcomes = [
                Outcome(r, UrlStatus.COMPLETED, NOW + 3600, 1, status_code=200) for r in requests
            ]
            with engine.connect() as holder, engine.connect() as watcher:
                holder.execute(
                    select(urls.c.id).where(urls.c.id == ROWS // 2).with_for_update()
                ).all()
                holder_pid = holder.execute(text("SELECT pg_backend_pid()")).scalar_one()
                write = asyncio.create_task(store.record(crawl_id, outcomes, [], NOW))
                (writer_pid,) = await wait_for_blocked(watcher, {holder_pid}, 1)
                extend = asyncio.create_task(store.heartbeat(WORKER, NOW, NOW + 120))
                # The extension waits on the holder's row or on one the write already locked.
                await wait_for_blocked(watcher, {holder_pid, writer_pid}, 2)
                holder.rollback()  # both go on; opposite lock orders would deadlock now
                results = await asyncio.gather(write, extend, return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            assert not errors, errors
            with engine.connect() as conn:
                states = conn.execute(select(urls.c.status, urls.c.leased_by)).all()
            assert set(states) == {("completed", None)}
        finally:
            engine.dispose()
