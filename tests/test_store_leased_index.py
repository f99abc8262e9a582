"""The frontier's indexes after migration 0027: the rows in progress have an index of their own
(the heartbeat, the release and the stale-lease sweep name no crawl, and read the whole table
without it), and PostgreSQL no longer writes ``ix_urls_lease`` for every URL row version."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, inspect

from harvestman.store import SqlStore
from test_store_frontier_expiry import new

WORKER = "worker-1"


@pytest.fixture
def store(store_on_each_database: SqlStore) -> SqlStore:
    return store_on_each_database


def url_indexes(store: SqlStore) -> set[str]:
    return {str(index["name"]) for index in inspect(store.engine).get_indexes("urls")}


async def test_postgresql_writes_no_lease_index_and_sqlite_keeps_it(store: SqlStore) -> None:
    names = url_indexes(store)
    assert "ix_urls_leased_by" in names
    assert "ix_urls_ready" in names
    assert ("ix_urls_lease" in names) is store.is_embedded


async def test_the_calls_of_a_worker_lease_find_its_rows_by_the_leased_rows_index(
    store: SqlStore,
) -> None:
    crawl_id = await store.ensure_crawl("c")
    await store.add_urls(crawl_id, [new(f"http://a.test/{n}") for n in range(30)], 100.0)
    await store.register_worker(WORKER, "here", 1, 100.0)
    leased, _ = await store.lease(crawl_id, {"a.test": 10}, 100.0, 160.0, WORKER)
    assert len(leased) == 10
    statements: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, sql: str, params: Any, *_: Any) -> None:
        if sql.lstrip().startswith("UPDATE urls"):
            statements.append((sql, params))

    event.listen(store.engine, "before_cursor_execute", keep)
    assert await store.heartbeat(WORKER, 110.0, 170.0)
    assert await store.recover(200.0, dead_workers=["gone"]) == 10  # the leases ran out
    event.remove(store.engine, "before_cursor_execute", keep)
    leased, _ = await store.lease(crawl_id, {"a.test": 5}, 200.0, 260.0, WORKER)  # by host
    event.listen(store.engine, "before_cursor_execute", keep)
    assert await store.release(WORKER, 210.0) == 5
    event.remove(store.engine, "before_cursor_execute", keep)

    assert len(statements) == 3  # the heartbeat's, the sweep's and the release's
    explain = "EXPLAIN QUERY PLAN " if store.is_embedded else "EXPLAIN "
    with store.engine.connect() as conn:
        if not store.is_embedded:  # the tables are tiny: ask which index, not whether one
            conn.exec_driver_sql("SET enable_seqscan = off")
        for sql, params in statements:
            # SQLite sweeps in id order, by the table (as before 0027): one process, at start.
            if store.is_embedded and "lease_until <" in sql:
                continue
            plan = " / ".join(str(row[-1]) for row in conn.exec_driver_sql(explain + sql, params))
            assert "ix_urls_leased_by" in plan, (sql, plan)
