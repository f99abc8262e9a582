"""Backup and restore of the SQLite store: online copies under a writing crawl, exact restores."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert

from harvestman.errors import StoreError
from harvestman.records import NewUrl
from harvestman.store import SqlStore, migrate
from harvestman.store.lifecycle.sqlitebackup import RestoreRefused, backup_sqlite, restore_sqlite
from harvestman.store.schema import crawled_pages, crawls, domains, urls
from harvestman.urls import url_hash
from storerows import NOW, add_crawl, add_page, add_url, open_store, table_rows

TABLES = (crawls, urls, crawled_pages, domains)


def fill(engine: Engine, pages: int = 0) -> None:
    """A small crawl of every kind of row; ``pages`` extra pages of 1.5 KB make the file big."""
    crawl = add_crawl(engine, "site")
    add_url(engine, crawl, "http://a.test/", "completed", 1, etag='"e1"')
    add_url(engine, crawl, "http://a.test/gone", "failed", 2, error_class="HttpStatusError")
    add_url(engine, crawl, "http://a.test/next", "pending", 0)
    add_page(engine, crawl, "http://a.test/", 1, description="front page")
    with engine.begin() as conn:
        conn.execute(
            insert(domains).values(host="a.test", robots_txt="User-agent: *", updated_at=NOW)
        )
        if pages:
            conn.execute(
                insert(crawled_pages),
                [
                    {"crawl_id": crawl, "url_hash": f"{i:064x}", "url": f"http://a.test/{i}",
                     "final_url": f"http://a.test/{i}", "host": "a.test", "links_count": 0,
                     "fetched_at": NOW, "description": "x" * 1500}
                    for i in range(pages)
                ],
            )  # fmt: skip


def snapshot(engine: Engine) -> dict[str, list[tuple[object, ...]]]:
    return {table.name: table_rows(engine, table) for table in TABLES}


def stored(path: Path) -> Engine:
    return open_store(f"sqlite:///{path}")


def url_count(path: Path) -> int:
    """Frontier rows in the store at ``path``, read on a connection closed again at once."""
    engine = stored(path)
    try:
        return len(table_rows(engine, urls))
    finally:
        engine.dispose()


async def test_a_backup_taken_while_a_crawl_writes_is_a_consistent_prefix(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "backups" / "crawl-copy.db"
    engine = stored(db)
    fill(engine, pages=20_000)
    engine.dispose()
    batches = 0
    writing = True
    started = asyncio.Event()

    async with SqlStore(f"sqlite:///{db}") as store:
        crawl = await store.ensure_crawl("writer")

        async def crawl_writes() -> None:
            # Each batch of ten URLs is one transaction, as the engine's flusher writes them.
            nonlocal batches
            while writing:
                rows = [f"http://w.test/{batches}/{j}" for j in range(10)]
                await store.add_urls(
                    crawl, [NewUrl(u, url_hash(u), "w.test", 1, 2) for u in rows], NOW
                )
                batches += 1
                if batches == 5:
                    started.set()

        writer = asyncio.create_task(crawl_writes())
        await started.wait()
        before = batches
        report = await asyncio.to_thread(backup_sqlite, db, copy)
        after = batches
        writing = False
        await writer

    assert after - before >= 2  # the crawl kept writing while the copy was made
    assert report.path == copy
    assert report.bytes == copy.stat().st_size
    assert report.revision == migrate.head_revision(stored(db))
    check = sqlite3.connect(copy)
    assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert check.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    got = {u for (u,) in check.execute("SELECT url FROM urls WHERE host = 'w.test'")}
    assert check.execute("SELECT count(*) FROM crawled_pages").fetchone() == (20_001,)
    check.close()
    whole = len(got) // 10
    assert got == {f"http://w.test/{i}/{j}" for i in range(whole) for j in range(10)}
    assert before <= whole <= after + 1  # one batch may have committed but not counted yet
    assert not (copy.parent / "crawl-copy.db.partial").exists()


def test_a_restore_brings_back_every_row_as_it_was(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "copy.db"
    engine = stored(db)
    fill(engine)
    at_backup = snapshot(engine)
    backup_sqlite(db, copy)
    add_url(engine, 1, "http://a.test/after", "pending", 0)
    with engine.begin() as conn:
        conn.execute(crawled_pages.delete())
    engine.dispose()

    report = restore_sqlite(copy, db, force=True)

    restored = stored(db)
    assert snapshot(restored) == at_backup
    assert report.revision == migrate.current_revision(restored)
    migrate.check_current(restored)
    restored.dispose()


def test_a_restore_to_a_new_place_needs_no_force(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "copy.db"
    engine = stored(db)
    fill(engine)
    backup_sqlite(db, copy)

    restore_sqlite(copy, tmp_path / "elsewhere" / "new.db")

    assert snapshot(stored(tmp_path / "elsewhere" / "new.db")) == snapshot(engine)


def test_a_restore_over_an_existing_store_needs_force(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "copy.db"
    engine = stored(db)
    fill(engine)
    backup_sqlite(db, copy)
    add_url(engine, 1, "http://a.test/after", "pending", 0)
    engine.dispose()

    with pytest.raises(RestoreRefused, match="exists: pass force"):
        restore_sqlite(copy, db)

    assert url_count(db) == 4


def test_a_restore_into_a_store_another_process_has_open_is_refused(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "copy.db"
    engine = stored(db)
    fill(engine)
    backup_sqlite(db, copy)
    add_url(engine, 1, "http://a.test/after", "pending", 0)
    engine.dispose()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]);"
         " db.execute('SELECT count(*) FROM urls').fetchall(); print('open', flush=True);"
         " sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(RestoreRefused, match="open by another connection"):
            restore_sqlite(copy, db, force=True)
    finally:
        holder.communicate("")

    assert url_count(db) == 4  # untouched
    restore_sqlite(copy, db, force=True)  # the crawl is gone: now it may
    assert url_count(db) == 3


def test_a_backup_never_replaces_a_file_unless_asked(tmp_path: Path) -> None:
    db, copy = tmp_path / "crawl.db", tmp_path / "copy.db"
    fill(stored(db))
    copy.write_bytes(b"older backup")

    with pytest.raises(FileExistsError):
        backup_sqlite(db, copy)
    assert copy.read_bytes() == b"older backup"

    backup_sqlite(db, copy, overwrite=True)
    assert url_count(copy) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a database at all" * 300, "restore into .* failed: DatabaseError"),
        (None, "is not a Harvestman store"),
    ],
)
def test_a_file_that_is_no_store_backup_is_refused(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    bogus, db = tmp_path / "bogus.db", tmp_path / "crawl.db"
    if content is None:
        sqlite3.connect(bogus).execute("CREATE TABLE t (x)").connection.close()
    else:
        bogus.write_bytes(content)

    with pytest.raises(StoreError, match=message):
        restore_sqlite(bogus, db)
    assert not db.exists()


def test_a_backup_of_a_missing_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is not a file"):
        backup_sqlite(tmp_path / "nothing.db", tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()
