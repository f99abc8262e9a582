"""Backup and restore of a PostgreSQL store with pg_dump / pg_restore: a backup verified by a
restore into a scratch database, restores into another database, and the refusals."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, insert, text

from harvestman.errors import BackupFailed, RestoreRefused, StoreError
from harvestman.store import migrate
from harvestman.store.lifecycle.pgdump import backup_postgres, verify_postgres_backup
from harvestman.store.lifecycle.pgrestore import restore_postgres
from harvestman.store.schema import crawled_pages, crawls, domains, urls, workers
from storerows import NOW, add_crawl, add_page, add_url, open_store, table_rows
from support.cli import run_cli

TABLES = (crawls, urls, crawled_pages, domains)


def fill(engine: Engine) -> None:
    crawl = add_crawl(engine, "site")
    add_url(engine, crawl, "http://a.test/", "completed", 1, etag='"e1"')
    add_url(engine, crawl, "http://a.test/gone", "failed", 2, error_class="HttpStatusError")
    add_url(engine, crawl, "http://a.test/next", "pending", 0)
    add_page(engine, crawl, "http://a.test/", 1, description="front page", text="hello there")
    add_page(engine, crawl, "http://a.test/b", 3)
    with engine.begin() as conn:
        conn.execute(
            insert(domains).values(host="a.test", robots_txt="User-agent: *", updated_at=NOW)
        )


def snapshot(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    return {table.name: table_rows(engine, table) for table in TABLES}


@pytest.fixture
def source(pg_schema_url: str) -> Iterator[tuple[str, Engine]]:
    engine = open_store(pg_schema_url)
    fill(engine)
    yield pg_schema_url, engine
    engine.dispose()


@pytest.fixture
def database(postgres_url: str) -> Iterator[str]:
    """The URL of a fresh database of its own, dropped afterwards."""
    name = f"hm_restore_{uuid.uuid4().hex[:12]}"
    admin = create_engine(
        postgres_url.replace("postgresql://", "postgresql+psycopg://", 1),
        isolation_level="AUTOCOMMIT",
    )
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_a_backup_is_verified_and_restores_into_another_database_row_for_row(
    source: tuple[str, Engine], database: str, postgres_url: str, tmp_path: Path
) -> None:
    url, engine = source
    out = tmp_path / "store.dump"

    report = backup_postgres(url, out)
    verified = verify_postgres_backup(report, postgres_url)

    assert report.path == out
    assert out.stat().st_size == report.bytes > 0
    assert report.revision == migrate.head_revision(engine)
    assert {name: report.tables[name] for name in ("crawls", "urls", "crawled_pages")} == {
        "crawls": 1, "urls": 3, "crawled_pages": 2,
    }  # fmt: skip
    assert verified.verified
    assert not report.verified
    assert not list(tmp_path.glob("*.partial"))

    restored = restore_postgres(out, database)

    assert restored.tables == report.tables
    assert restored.schema == "public"  # the source's schema, renamed to the target's
    target = open_store(database)  # at head already: migrations find nothing to do
    try:
        assert snapshot(target) == snapshot(engine)
        assert migrate.current_revision(target) == migrate.head_revision(target)
        # The search trigger came along: a new page is indexed in the restored store too.
        add_page(target, 1, "http://a.test/new", 0, text="fresh words")
        with target.connect() as conn:
            indexed = conn.execute(
                text("SELECT count(*) FROM crawled_pages WHERE search_vector IS NOT NULL")
            ).scalar_one()
        assert indexed == 3
    finally:
        target.dispose()


def test_a_restore_over_a_store_needs_force_and_then_replaces_it(
    source: tuple[str, Engine], database: str, tmp_path: Path
) -> None:
    url, engine = source
    report = backup_postgres(url, tmp_path / "store.dump")
    restore_postgres(report.path, database)
    target = open_store(database)
    add_crawl(target, "written after the restore")
    target.dispose()

    with pytest.raises(RestoreRefused, match="holds a store already: pass force"):
        restore_postgres(report.path, database)
    restore_postgres(report.path, database, force=True)

    target = open_store(database)
    try:
        assert snapshot(target) == snapshot(engine)
    finally:
        target.dispose()


def test_a_restore_into_a_database_in_use_is_refused(
    source: tuple[str, Engine], database: str, tmp_path: Path
) -> None:
    url, _ = source
    report = backup_postgres(url, tmp_path / "store.dump")
    restore_postgres(report.path, database)
    target = open_store(database)
    try:
        # A service still connected:
        with target.connect(), pytest.raises(RestoreRefused, match="1 other connection"):
            restore_postgres(report.path, database, force=True)
        with target.begin() as conn:
            conn.execute(insert(workers).values(
                id="w1", hostname="h", pid=1, started_at=NOW, heartbeat_at=NOW - 10
            ))  # fmt: skip
        target.dispose()  # no connection left: only the worker's heartbeat is in the way
        with pytest.raises(RestoreRefused, match="1 worker"):
            restore_postgres(report.path, database, force=True, now=NOW)
        restore_postgres(report.path, database, force=True, now=NOW + 120)
    finally:
        target.dispose()


def test_a_file_that_is_no_store_backup_is_refused(
    source: tuple[str, Engine], database: str, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.dump"
    junk.write_bytes(b"PGDMP but not really" * 10)

    with pytest.raises(StoreError, match="is not a pg_dump archive"):
        restore_postgres(junk, database)
    with pytest.raises(StoreError, match="is not a file"):
        restore_postgres(tmp_path / "missing.dump", database)
    empty = backup_postgres(database, tmp_path / "empty.dump")  # a database without a store
    with pytest.raises(StoreError, match="is not a backup of one Harvestman store"):
        restore_postgres(empty.path, database)


def test_a_verification_that_finds_other_counts_fails_the_backup(
    source: tuple[str, Engine], postgres_url: str, tmp_path: Path
) -> None:
    url, _ = source
    report = backup_postgres(url, tmp_path / "store.dump")
    claimed = dataclasses.replace(report, tables={**report.tables, "urls": 4})

    with pytest.raises(BackupFailed, match="urls: 4 dumped, 3 restored"):
        verify_postgres_backup(claimed, postgres_url)


def test_a_backup_never_replaces_a_file_unless_asked(
    source: tuple[str, Engine], tmp_path: Path
) -> None:
    url, _ = source
    out = tmp_path / "store.dump"
    out.write_bytes(b"older")
    with pytest.raises(FileExistsError):
        backup_postgres(url, out)
    assert out.read_bytes() == b"older"
    assert backup_postgres(url, out, overwrite=True).bytes == out.stat().st_size > 5


async def test_the_backup_and_restore_commands_take_postgresql_urls(
    source: tuple[str, Engine], database: str, tmp_path: Path
) -> None:
    url, engine = source
    out, junk = tmp_path / "store.dump", tmp_path / "junk.dump"
    junk.write_text("not a dump")

    code, printed, err = await run_cli("backup", str(out), "--database-url", url, "--json")
    assert code == 0, err
    assert json.loads(printed)["verified"] is True
    code, _, err = await run_cli("restore", str(out), "--database-url", database)
    assert code == 0, err
    code, _, err = await run_cli("restore", str(out), "--database-url", database)
    assert code == 1
    assert "holds a store already: pass force" in err
    code, _, err = await run_cli("restore", str(junk), "--database-url", database, "--force")
    assert code == 1
    assert "is not a pg_dump archive" in err

    target = open_store(database)
    try:
        assert snapshot(target) == snapshot(engine)
    finally:
        target.dispose()


def test_a_backup_taken_while_pages_are_written_holds_exactly_its_counted_rows(
    source: tuple[str, Engine], postgres_url: str, tmp_path: Path
) -> None:
    import threading
    import time

    url, engine = source
    stop = threading.Event()
    written = [0]

    def write() -> None:
        while not stop.is_set():
            written[0] += 1
            add_page(engine, 1, f"http://a.test/w{written[0]}", 0)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while written[0] < 20 and writer.is_alive():  # under way before the snapshot
            assert time.monotonic() < deadline
            stop.wait(0.01)
        report = backup_postgres(url, tmp_path / "store.dump")
        verified = verify_postgres_backup(report, postgres_url)
    finally:
        stop.set()
        writer.join()

    assert verified.verified
    assert report.tables["crawled_pages"] >= 2 + 20
