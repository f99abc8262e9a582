"""The SQL store on real SQLite and PostgreSQL: leases, batches, recovery, migrations."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from harvestman.errors import SchemaOutdated
from harvestman.records import CrawlRequest, DomainRecord, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.store import SqlStore, migrate
from harvestman.store.search.targets import search_pages
from harvestman.urls import host_key, url_hash

NOW = 1_000_000.0


def new(url: str, depth: int = 1, priority: int = 2) -> NewUrl:
    return NewUrl(url, url_hash(url), host_key(url), depth, priority)


@pytest.fixture
def store(store_on_each_database: SqlStore) -> SqlStore:
    """The store on each database: PostgreSQL runs the batch writes and the lease as one
    statement each (``store.pgbatch``), SQLite through the driver's executemany."""
    return store_on_each_database


async def test_lease_takes_due_rows_of_a_host_in_priority_order(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c", ["http://a.test/"])
    await store.add_urls(
        crawl,
        [new("http://a.test/low", priority=1), new("http://a.test/high", priority=3),
         new("http://a.test/mid", priority=2), new("http://b.test/other")],
        NOW,
    )  # fmt: skip

    leased, dry = await store.lease(crawl, {"a.test": 2}, NOW, NOW + 300, "w1")

    assert [r.url for r in leased] == ["http://a.test/high", "http://a.test/mid"]
    assert dry == {}
    leased, dry = await store.lease(crawl, {"a.test": 2}, NOW, NOW + 300, "w1")
    assert [r.url for r in leased] == ["http://a.test/low"]
    assert dry == {"a.test": None}  # nothing pending is left on that host
    counts = await store.counts(crawl)
    assert counts.by_status == {"in_progress": 3, "pending": 1}


async def test_a_known_url_is_not_added_twice_until_it_is_due_again(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new("http://a.test/x")], NOW)
    [request], _ = await store.lease(crawl, {"a.test": 5}, NOW, NOW + 300, "w1")
    done = Outcome(request, UrlStatus.COMPLETED, next_crawl_at=NOW + 100, attempts=0)
    await store.record(crawl, [done], [new("http://a.test/x")], NOW)
    assert (await store.counts(crawl)).by_status == {"completed": 1}

    await store.add_urls(crawl, [new("http://a.test/x")], NOW + 50)  # not due yet
    assert (await store.counts(crawl)).by_status == {"completed": 1}
    await store.add_urls(crawl, [new("http://a.test/x")], NOW + 150)  # due: re-crawl
    assert (await store.counts(crawl)).by_status == {"pending": 1}


async def test_namespaces_keep_the_same_url_apart(store: SqlStore) -> None:
    one, two = await store.ensure_crawl("one"), await store.ensure_crawl("two")
    await store.add_urls(one, [new("http://a.test/x")], NOW)
    await store.add_urls(two, [new("http://a.test/x")], NOW)
    assert (await store.counts(one)).by_status == {"pending": 1}
    assert (await store.counts(two)).by_status == {"pending": 1}


async def test_two_stores_on_one_file_never_lease_the_same_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    async with SqlStore(url) as first, SqlStore(url) as second:
        await first.upgrade()
        crawl = await first.ensure_crawl("c")
        await first.add_urls(crawl, [new(f"http://a.test/{i}") for i in range(500)], NOW)

        async def drain(store: SqlStore, worker: str) -> list[int]:
            got: list[int] = []
            while True:
                leased, _ = await store.lease(crawl, {"a.test": 7}, NOW, NOW + 300, worker)
                if not leased:
                    return got
                got.extend(r.id for r in leased)

        a, b = await asyncio.gather(drain(first, "w1"), drain(second, "w2"))
    assert len(a) + len(b) == 500
    assert not set(a) & set(b)


async def test_batches_record_pages_and_states_and_a_304_keeps_the_hash(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new("http://a.test/x")], NOW)
    [request], _ = await store.lease(crawl, {"a.test": 1}, NOW, NOW + 300, "w1")
    page = PageRecord(
        url=request.url, final_url=request.url, host="a.test", status_code=200,
        content_type="text/html", content_length=10, fetched_at=NOW, crawl_duration_ms=5,
        title="X", content_hash="h" * 64, redirects=["http://a.test/old"],
    )  # fmt: skip
    await store.record(
        crawl,
        [Outcome(request, UrlStatus.COMPLETED, NOW + 10, 0, status_code=200,
                 content_hash="h" * 64, etag='"v1"', page=page)],
        [new("http://a.test/y")],
        NOW,
    )  # fmt: skip
    await store.add_urls(crawl, [new("http://a.test/x")], NOW + 20)  # due again
    leased, _ = await store.lease(crawl, {"a.test": 5}, NOW + 20, NOW + 320, "w1")
    [again] = [r for r in leased if r.url == "http://a.test/x"]
    assert (again.url, again.etag) == ("http://a.test/x", '"v1"')
    await store.record(
        crawl, [Outcome(again, UrlStatus.COMPLETED, NOW + 30, 0, status_code=304)], [], NOW + 20
    )
    [row] = [r for r in store.iter_urls(crawl) if r["url"] == "http://a.test/x"]
    assert (row["status_code"], row["content_hash"], row["etag"]) == (304, "h" * 64, '"v1"')
    [stored] = list(store.iter_pages(crawl))
    assert (stored["title"], stored["redirects"]) == ("X", '["http://a.test/old"]')
    assert (await store.counts(crawl)).pages == 1


async def test_a_hosts_page_count_counts_pages_not_fetches(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.save_robots(DomainRecord("a.test", allowed=True), NOW)
    await store.add_urls(crawl, [new("http://a.test/x"), new("http://a.test/y")], NOW)

    def fetched(request: CrawlRequest, at: float) -> Outcome:
        page = PageRecord(
            url=request.url, final_url=request.url, host="a.test", status_code=200,
            content_type="text/html", content_length=10, fetched_at=at, crawl_duration_ms=5,
        )  # fmt: skip
        return Outcome(request, UrlStatus.COMPLETED, at + 10, 0, status_code=200, page=page)

    for at in (NOW, NOW + 20, NOW + 40):  # three crawls of the same two pages
        await store.add_urls(crawl, [new("http://a.test/x"), new("http://a.test/y")], at)
        leased, _ = await store.lease(crawl, {"a.test": 5}, at, at + 300, "w1")
        assert len(leased) == 2
        await store.record(crawl, [fetched(r, at) for r in leased], [], at)
    domain = await store.get_domain("a.test")
    assert domain is not None
    assert domain.page_count == 2


async def test_a_batch_with_two_outcomes_of_one_url_keeps_the_last(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new("http://a.test/x")], NOW)
    [request], _ = await store.lease(crawl, {"a.test": 1}, NOW, NOW + 300, "w1")

    def fetched(title: str, code: int) -> Outcome:
        page = PageRecord(
            url=request.url, final_url=request.url, host="a.test", status_code=code,
            content_type="text/html", content_length=10, fetched_at=NOW, crawl_duration_ms=5,
            title=title,
        )  # fmt: skip
        return Outcome(request, UrlStatus.COMPLETED, NOW + 10, 0, status_code=code, page=page)

    await store.record(crawl, [fetched("first", 200), fetched("second", 203)], [], NOW)

    [row] = list(store.iter_urls(crawl))
    assert (row["status"], row["status_code"]) == ("completed", 203)
    [page] = list(store.iter_pages(crawl))
    assert (page["title"], page["status_code"]) == ("second", 203)


async def test_batches_index_their_pages_for_search(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new(f"http://a.test/{n}") for n in ("x", "y", "z")], NOW)
    x, y, z = sorted((await store.lease(crawl, {"a.test": 3}, NOW, NOW + 300, "w1"))[0],
                     key=lambda r: r.url)  # fmt: skip

    def fetched(request: CrawlRequest, title: str, description: str | None = None) -> Outcome:
        page = PageRecord(
            url=request.url, final_url=request.url, host="a.test", status_code=200,
            content_type="text/html", content_length=10, fetched_at=NOW, crawl_duration_ms=5,
            title=title, description=description,
        )  # fmt: skip
        return Outcome(request, UrlStatus.COMPLETED, NOW + 10, 0, status_code=200, page=page)

    # New pages, one of them twice in the batch (the last fetch is kept, and indexed once).
    await store.record(
        crawl,
        [fetched(x, "Alpha", "quartz"), fetched(y, "Bravo"), fetched(y, "Charlie", "garnet")],
        [],
        NOW,
    )
    # A re-crawl that changes a page, beside a new page in the same batch.
    await store.record(crawl, [fetched(x, "Delta", "quartz"), fetched(z, "Echo")], [], NOW)

    def found(q: str) -> list[str]:
        return sorted(hit.requested_url for hit in search_pages(store.engine, crawl, q).hits)

    assert found("alpha") == []
    assert found("bravo") == []
    assert found("delta") == found("quartz") == ["http://a.test/x"]
    assert found("charlie") == found("garnet") == ["http://a.test/y"]
    assert found("echo") == ["http://a.test/z"]
    if store.is_embedded:  # FTS5's own check that the index and the rows agree
        with store.engine.begin() as conn:
            conn.execute(text("INSERT INTO crawled_pages_fts(crawled_pages_fts, rank) "
                              "VALUES ('integrity-check', 1)"))  # fmt: skip
            assert (
                conn.execute(text("SELECT count(*) FROM crawled_pages_fts_deferred")).scalar() == 0
            )
            # The batch's in-memory sub-journal was the batch's alone (dialect._sqlite_begin).
            assert conn.execute(text("PRAGMA temp_store")).scalar() == 0


async def test_leases_of_dead_or_expired_workers_return_to_pending(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new(f"http://a.test/{i}") for i in range(6)], NOW)
    await store.lease(crawl, {"a.test": 2}, NOW, NOW + 300, "dead")
    await store.lease(crawl, {"a.test": 2}, NOW, NOW + 10, "slow")
    await store.lease(crawl, {"a.test": 2}, NOW, NOW + 300, "alive")

    assert await store.recover(NOW + 20, ["dead"]) == 4  # dead's two, and slow's expired two
    assert (await store.counts(crawl)).by_status == {"pending": 4, "in_progress": 2}
    assert await store.release("alive", NOW + 20) == 2
    assert (await store.counts(crawl)).by_status == {"pending": 6}


async def test_a_cancelled_call_that_started_ends_before_its_cancellation_goes_on(
    tmp_path: Path,
) -> None:
    # SQLite's store: one thread, so a call queued behind another has not started.
    async with SqlStore(f"sqlite:///{tmp_path / 's.db'}") as store:
        await _cancelled_calls(store)


async def _cancelled_calls(store: SqlStore) -> None:
    # A lease whose caller is cancelled mid-call commits anyway (the thread runs on): the
    # shutdown's release, which comes next, must come after it or the rows stay leased.
    started, go = threading.Event(), threading.Event()
    ended: list[str] = []

    def slow_call() -> None:
        started.set()
        go.wait(10)
        ended.append("committed")

    call = asyncio.create_task(store._run(slow_call))
    await asyncio.to_thread(started.wait, 10)
    call.cancel()
    asyncio.get_running_loop().call_later(0.05, go.set)
    with pytest.raises(asyncio.CancelledError):
        await call
    assert ended == ["committed"]

    # One that had not started yet never runs.
    started.clear()
    go.clear()
    blocker = asyncio.create_task(store._run(slow_call))
    await asyncio.to_thread(started.wait, 10)
    queued = asyncio.create_task(store._run(ended.append, "queued"))
    await asyncio.sleep(0)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    go.set()
    await blocker
    assert ended == ["committed", "committed"]


async def test_heartbeat_extends_the_workers_leases(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("c")
    await store.add_urls(crawl, [new("http://a.test/x")], NOW)
    await store.register_worker("w1", "here", 1, NOW)
    await store.lease(crawl, {"a.test": 1}, NOW, NOW + 10, "w1")
    await store.heartbeat("w1", NOW + 5, NOW + 305)
    assert await store.recover(NOW + 20) == 0
    assert [w[0] for w in await store.workers()] == ["w1"]


async def test_pooled_connections_the_server_closed_are_replaced_before_use(
    pg_schema_url: str, postgres_url: str
) -> None:
    """The pool does not ping each connection it hands out; one the server has closed (a
    restart, pg_terminate_backend) is still replaced, with every connection pooled before it."""
    async with SqlStore(pg_schema_url) as store:
        await store.upgrade()
        crawl = await store.ensure_crawl("c")
        await store.add_urls(crawl, [new("http://a.test/x")], NOW)
        with store.engine.connect() as first, store.engine.connect() as second:
            pids = [
                conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
                for conn in (first, second)
            ]
        admin = SqlStore(postgres_url)
        with admin.engine.connect() as conn:
            conn.execute(
                text("SELECT pg_terminate_backend(pid) FROM unnest(:p) AS pid"), {"p": pids}
            )
            for _ in range(100):  # the backends end a moment after they are told to
                alive = conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:p)"), {"p": pids}
                ).scalar_one()
                if not alive:
                    break
                await asyncio.sleep(0.05)
        admin.dispose()

        leased, _ = await store.lease(crawl, {"a.test": 1}, NOW, NOW + 300, "w1")
        assert [r.url for r in leased] == ["http://a.test/x"]
        assert (await store.counts(crawl)).by_status == {"in_progress": 1}
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() not in pids


def test_sqlite_migrations_go_up_and_down_and_the_check_says_what_to_run(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'm.db'}")
    with pytest.raises(SchemaOutdated, match="harvestman db upgrade"):
        migrate.check_current(store.engine)
    migrate.upgrade(store.engine)
    migrate.check_current(store.engine)
    migrate.downgrade(store.engine, "base")
    assert migrate.current_revision(store.engine) is None
    store.engine.dispose()


def test_postgres_runs_the_same_migrations(postgres_url: str) -> None:
    schema = f"t_{uuid.uuid4().hex[:10]}"
    admin = SqlStore(postgres_url)
    with admin.engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        store = SqlStore(f"{postgres_url}?options=-csearch_path%3D{schema}")
        migrate.upgrade(store.engine)
        migrate.check_current(store.engine)
        with store.engine.connect() as conn:
            tables = set(conn.execute(text(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = :s"
            ), {"s": schema}).scalars())  # fmt: skip
        assert {"crawls", "urls", "crawled_pages", "domains", "workers"} <= tables
        migrate.downgrade(store.engine, "base")
        assert migrate.current_revision(store.engine) is None
        store.engine.dispose()
    finally:
        with admin.engine.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.engine.dispose()


def _schema_differences(engine: object) -> list:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    import harvestman.store.jobs.tables  # noqa: F401  (its tables join the metadata)
    from harvestman.store.schema import metadata
    from harvestman.store.search.index import include_name

    with engine.connect() as conn:  # type: ignore[attr-defined]
        return compare_metadata(
            MigrationContext.configure(conn, opts={"include_name": include_name}), metadata
        )


def test_the_migrated_sqlite_schema_is_the_models_schema(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'm.db'}")
    migrate.upgrade(store.engine)
    assert _schema_differences(store.engine) == []
    store.engine.dispose()


def test_the_migrated_postgres_schema_is_the_models_schema(pg_schema_url: str) -> None:
    store = SqlStore(pg_schema_url)
    migrate.upgrade(store.engine)
    assert _schema_differences(store.engine) == []
    store.engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_0007_goes_down_and_up_keeping_the_search_triggers(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'm.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_schema_url")
    )
    store = SqlStore(url)
    migrate.upgrade(store.engine)
    migrate.downgrade(store.engine, "0006")
    with store.engine.connect() as conn:
        if backend == "sqlite":
            triggers = set(
                conn.execute(
                    text("SELECT name FROM sqlite_master WHERE type = 'trigger'")
                ).scalars()
            )
            # A table copy (batch mode) would have dropped these with the old table.
            assert {
                f"crawled_pages_fts_{t}" for t in ("insert", "delete", "unindex", "reindex")
            } <= triggers
        columns = {c["name"] for c in inspect(conn).get_columns("crawled_pages")}
        tables = set(inspect(conn).get_table_names())
    assert "main_text" not in columns
    assert not {"parsed_records", "parser_stats"} & tables
    migrate.upgrade(store.engine)
    assert _schema_differences(store.engine) == []
    store.engine.dispose()
