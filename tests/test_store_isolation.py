"""A record the store refuses is dead-lettered and its batch written (store/isolation.py);
a transient error is raised for the caller to retry (store/transient.py). SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg
from sqlalchemy import create_engine, text
from sqlalchemy import exc as sa

from harvestman.errors import StoreError
from harvestman.extract.products import Product
from harvestman.records import (
    CrawlRequest,
    DomainRecord,
    NewUrl,
    Outcome,
    PageRecord,
    UrlStatus,
)
from harvestman.store import SqlStore
from harvestman.store.transient import is_transient
from harvestman.urls import host_key, url_hash
from storerows import store_url
from support.cli import invoke_cli, run_cli

NOW = 1_000_000.0


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[SqlStore]:
    async with SqlStore(database_url) as opened:
        await opened.upgrade()
        yield opened


def new(path: str) -> NewUrl:
    url = f"http://a.test{path}"
    return NewUrl(url, url_hash(url), host_key(url), 1, 2)


def product(**values: Any) -> Product:
    fields: dict[str, Any] = {
        "name": "Kettle", "description": None, "price": Decimal("19.99"), "currency": "EUR",
        "availability": "in_stock", "rating": None, "review_count": None, "brand": None,
        "category": None, "sku": "K-1", "gtin": None, "url": None, "images": [],
        "image_details": [], "source": "json-ld", "errors": [],
    }  # fmt: skip
    return Product(**{**fields, **values})


def done(request: CrawlRequest, **values: Any) -> Outcome:
    page = PageRecord(
        url=request.url, final_url=request.url, host=request.host, status_code=200,
        content_type="text/html", content_length=10, fetched_at=NOW, crawl_duration_ms=5,
        title=f"page {request.url}",
    )  # fmt: skip
    return Outcome(request, UrlStatus.COMPLETED, NOW + 100, 0, status_code=200, page=page, **values)


async def leased(store: SqlStore, *paths: str) -> tuple[int, list[CrawlRequest]]:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new(path) for path in paths], NOW)
    requests, _ = await store.lease(crawl, {"a.test": len(paths)}, NOW, NOW + 300, "w1")
    return crawl, sorted(requests, key=lambda r: r.url)


def sql(store: SqlStore, query: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(query))]


async def test_a_refused_record_is_dead_lettered_and_the_rest_of_its_batch_is_written(
    store: SqlStore, database_url: str
) -> None:
    crawl, (a, b, c, d) = await leased(store, "/a", "/b", "/c", "/d")
    # A product without a source breaks a NOT NULL constraint: nothing the values check can
    # fit, so the store itself refuses it, on either database.
    refused = done(b, products=[product(source=None)])
    unhostable = NewUrl("http://a.test/new-2", url_hash("http://a.test/new-2"), None, 1, 2)  # type: ignore[arg-type]
    batch = [done(a, products=[product()]), refused, done(c), done(d)]

    rejected = await store.record(crawl, batch, [new("/new-1"), unhostable, new("/new-3")], NOW)

    assert list(rejected) == [b.id]  # the writer counts it as a dead letter, not a page
    # A dead letter comes due again when the page would have (the outcome's re-crawl time).
    assert sql(store, "SELECT url, status, error_class, next_crawl_at FROM urls ORDER BY url") == [
        ("http://a.test/a", "completed", None, NOW + 100),
        ("http://a.test/b", "failed", "StoreRejected", NOW + 100),
        ("http://a.test/c", "completed", None, NOW + 100),
        ("http://a.test/d", "completed", None, NOW + 100),
        ("http://a.test/new-1", "pending", None, NOW),
        ("http://a.test/new-3", "pending", None, NOW),
    ]
    assert sql(store, "SELECT url FROM crawled_pages ORDER BY url") == [
        ("http://a.test/a",), ("http://a.test/c",), ("http://a.test/d",),
    ]  # fmt: skip
    assert sql(store, "SELECT page_url, name FROM products") == [("http://a.test/a", "Kettle")]
    [(reason,)] = sql(store, "SELECT error FROM urls WHERE error_class = 'StoreRejected'")
    assert reason.startswith(("IntegrityError: NOT NULL", "NotNullViolation: null value"))
    assert "source" in reason
    logged = sql(store, "SELECT category, error_class, task, message FROM error_logs ORDER BY task")
    assert [row[:3] for row in logged] == [
        ("storage", "StoreRejected", "http://a.test/b"),
        ("storage", "StoreRejected", "http://a.test/new-2"),
    ]
    assert logged[0][3] == reason
    assert logged[1][3].startswith("discovered URL dropped: ")

    # The dead letter is listed with its reason, and can be put back once fixed.
    env = {"HARVESTMAN_DATABASE_URL": database_url}
    code, out, err = await invoke_cli("dead-letter", "list", "--name", "c", env=env)
    assert code == 0, err
    assert out.splitlines() == [f"http://a.test/b\tStoreRejected\t{reason}"]
    code, _, err = await run_cli(
        "dead-letter", "requeue", "--name", "c", "--error-class", "StoreRejected", env=env
    )
    assert code == 0, err
    assert "re-queued 1 URLs" in err


async def test_a_robots_txt_holding_nul_is_stored_without_it(store: SqlStore) -> None:
    robots = DomainRecord("a.test", "User-agent: *\x00\nDisallow: /private\n", 200, NOW)

    await store.save_robots(robots, NOW)

    stored = await store.get_domain("a.test")
    assert stored is not None
    assert stored.robots_txt == "User-agent: *\nDisallow: /private\n"


async def test_a_batch_of_healthy_records_is_one_transaction(store: SqlStore) -> None:
    crawl, requests = await leased(store, "/a", "/b")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement.split()[0].upper())

    from sqlalchemy import event

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        rejected = await store.record(crawl, [done(r) for r in requests], [new("/c")], NOW)
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)

    assert "SAVEPOINT" not in statements
    assert rejected == {}
    assert sql(store, "SELECT count(*) FROM urls WHERE status = 'completed'") == [(2,)]


async def test_a_locked_sqlite_store_raises_for_a_retry_and_dead_letters_nothing(
    tmp_path: Path,
) -> None:
    from sqlalchemy import event

    async with SqlStore(f"sqlite:///{tmp_path / 'locked.db'}") as store:
        await store.upgrade()
        crawl, [request] = await leased(store, "/a")
        # Wait 50 ms for the lock, not the store's 30 s.
        event.listen(
            store.engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA busy_timeout=50")
        )
        await store.reconnect()
        holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError, match="database is locked"):
                await store.record(crawl, [done(request)], [], NOW)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert sql(store, "SELECT status FROM urls") == [("in_progress",)]

        await store.record(crawl, [done(request)], [], NOW)  # the retry, once the lock is gone
        assert sql(store, "SELECT status FROM urls") == [("completed",)]


async def test_a_postgres_lock_timeout_raises_for_a_retry_and_dead_letters_nothing(
    pg_schema_url: str,
) -> None:
    url = pg_schema_url + "%20-clock_timeout%3D200"  # a row lock is waited for 200 ms
    async with SqlStore(url) as store:
        await store.upgrade()
        crawl, [request] = await leased(store, "/a")
        holder = create_engine(pg_schema_url.replace("postgresql://", "postgresql+psycopg://"))
        with holder.connect() as conn:
            conn.execute(text(f"SELECT 1 FROM urls WHERE id = {request.id} FOR UPDATE"))
            with pytest.raises(StoreError, match="LockNotAvailable"):
                await store.record(crawl, [done(request)], [], NOW)
            conn.rollback()
        holder.dispose()
        assert sql(store, "SELECT status FROM urls") == [("in_progress",)]
        assert sql(store, "SELECT count(*) FROM error_logs") == [(0,)]

        await store.record(crawl, [done(request)], [], NOW)
        assert sql(store, "SELECT status FROM urls") == [("completed",)]


def pg_error(sqlstate: str) -> sa.DBAPIError:
    cause = pg.lookup(sqlstate)(f"SQLSTATE {sqlstate}")
    return sa.DBAPIError.instance("UPDATE urls", None, cause, psycopg.Error)


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (pg_error("40001"), True),  # serialization failure
        (pg_error("40P01"), True),  # deadlock
        (pg_error("55P03"), True),  # lock timeout
        (pg_error("57014"), True),  # statement timeout
        (pg_error("57P01"), True),  # admin shutdown
        (pg_error("08006"), True),  # connection failure
        (pg_error("53100"), True),  # disk full
        (pg_error("22003"), False),  # numeric value out of range
        (pg_error("22001"), False),  # string data right truncation
        (pg_error("23502"), False),  # not null violation
        (pg_error("23505"), False),  # unique violation
        (pg_error("42703"), False),  # undefined column
        (sa.DBAPIError.instance(
            "SELECT 1", None, psycopg.OperationalError("server closed the connection"),
            psycopg.Error), True),
        (sa.DBAPIError.instance(
            "SELECT 1", None, psycopg.DataError("PostgreSQL text fields cannot contain NUL"),
            psycopg.Error), False),
        (sa.TimeoutError("QueuePool limit reached"), True),
        (OverflowError("Python int too large to convert to SQLite INTEGER"), False),
    ],
)  # fmt: skip
def test_only_the_listed_errors_are_transient(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def sqlite_error(setup: str, statement: str) -> sa.DBAPIError:
    engine = create_engine("sqlite://")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(setup)
            conn.exec_driver_sql(statement)
    except sa.DBAPIError as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError("no error")


def test_sqlite_errors_are_told_apart_by_result_code(tmp_path: Path) -> None:
    refused = sqlite_error("CREATE TABLE t (x INTEGER NOT NULL)", "INSERT INTO t VALUES (NULL)")
    assert refused.orig.sqlite_errorname == "SQLITE_CONSTRAINT_NOTNULL"  # type: ignore[union-attr]
    assert not is_transient(refused)

    path = tmp_path / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.05})
    try:
        with pytest.raises(sa.OperationalError) as busy, engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        engine.dispose()
        holder.close()
    assert busy.value.orig.sqlite_errorname == "SQLITE_BUSY"  # type: ignore[union-attr]
    assert is_transient(busy.value)


async def test_the_writer_counts_a_dead_letter_as_failed_not_as_a_page(store: SqlStore) -> None:
    from harvestman.crawl.frontier import Frontier
    from harvestman.crawl.run import CrawlRun
    from harvestman.crawl.writer import BatchWriter
    from harvestman.stats import Stats

    crawl, (a, b) = await leased(store, "/a", "/b")
    stats = Stats()
    run = CrawlRun(store, stats, lambda: NOW)
    run.crawl_id = crawl
    run.frontier = Frontier(store.frontier, crawl, "w1", delay=0.0, clock=lambda: NOW)
    written: list[Outcome] = []
    writer = BatchWriter(
        run, batch_size=10, flush_interval=1.0, history=None, on_pages=written.extend
    )
    writer.queue(done(a), [])
    writer.queue(done(b, products=[product(source=None)]), [])

    await writer.flush()

    assert [(o.request.url, o.status, o.error_class) for o in written] == [
        ("http://a.test/a", UrlStatus.COMPLETED, None),
        ("http://a.test/b", UrlStatus.FAILED, "StoreRejected"),
    ]
    assert (stats["fetch/pages"], stats["fetch/failed"], stats["store/dead_lettered"]) == (1, 1, 1)
