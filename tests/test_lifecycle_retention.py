"""Retention on real stores: rows of known ages, exact counts, the exported files, compaction."""

from __future__ import annotations

import csv
import doctest
import gzip
import io
import sqlite3
import zlib
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine, insert

from harvestman.store.lifecycle import retention as retention_module
from harvestman.store.lifecycle.compaction import compact
from harvestman.store.lifecycle.retention import RetentionRules, apply_retention
from harvestman.store.schema import crawled_pages, error_logs, urls, workers
from storerows import DAY, NOW, add_crawl, add_page, add_url, open_store, store_url, table_rows


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = open_store(store_url(request, tmp_path))
    yield opened
    opened.dispose()


def arrange_ages(engine: Engine) -> None:
    """Two crawls; completed, failed and other rows on both sides of each rule's age."""
    one, two = add_crawl(engine, "one"), add_crawl(engine, "two")
    add_url(engine, one, "http://a.test/c1", "completed", 1)
    add_url(engine, one, "http://a.test/c6", "completed", 6.9)
    add_url(engine, one, "http://a.test/c8", "completed", 7.1)
    add_url(
        engine,
        one,
        "http://a.test/f29",
        "failed",
        29,
        status_code=404,
        error_class="HttpStatusError",
        error="HTTP 404",
    )
    add_url(
        engine,
        one,
        "http://a.test/f31",
        "failed",
        31,
        attempts=3,
        error_class="NetworkError",
        error='refused, "twice"',
    )
    add_url(engine, one, "http://a.test/p100", "pending", 100)
    add_url(engine, one, "http://a.test/b100", "blocked", 100)
    add_url(engine, two, "http://b.test/c40", "completed", 40)
    add_url(
        engine,
        two,
        "http://b.test/f100",
        "failed",
        100,
        status_code=500,
        error_class="HttpStatusError",
        error="HTTP 500",
        last_fetched_at=NOW - 100 * DAY,
    )
    add_page(engine, one, "http://a.test/c1", 1)
    add_page(engine, one, "http://a.test/old89", 89)
    add_page(engine, one, "http://a.test/old91", 91, description="kept in the archive")
    add_page(engine, two, "http://b.test/old400", 400, simhash=-5)
    for crawl, task, age in ((one, "http://a.test/e29", 29), (two, "http://b.test/e31", 31),
                             (None, "job 7", 45)):  # fmt: skip
        with engine.begin() as conn:
            conn.execute(insert(error_logs).values(
                crawl_id=crawl, category="network", error_class="ConnectError",
                message=f"refused {task}", task=task, created_at=NOW - age * DAY,
            ))  # fmt: skip


def rules(tmp_path: Path, **overrides: object) -> RetentionRules:
    values: dict[str, object] = {"export_dir": tmp_path / "retention", "batch_size": 2}
    values.update(overrides)
    return RetentionRules(**values)  # type: ignore[arg-type]


def test_each_rule_deletes_exactly_the_rows_past_its_age(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)

    report = apply_retention(engine, rules(tmp_path), NOW)

    assert (report.completed_deleted, report.failed_exported, report.failed_deleted) == (2, 2, 2)
    assert (report.pages_exported, report.pages_deleted) == (2, 2)
    assert (report.errors_exported, report.errors_deleted) == (2, 2)
    assert table_rows(engine, error_logs, "task") == [("http://a.test/e29",)]
    assert table_rows(engine, urls, "url", "status") == [
        ("http://a.test/c1", "completed"),
        ("http://a.test/c6", "completed"),
        ("http://a.test/f29", "failed"),
        ("http://a.test/p100", "pending"),
        ("http://a.test/b100", "blocked"),
    ]
    assert table_rows(engine, crawled_pages, "url") == [
        ("http://a.test/c1",),
        ("http://a.test/old89",),
    ]
    assert report.skipped == []


def test_failed_rows_are_in_the_gzip_csv_before_they_go(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)

    report = apply_retention(engine, rules(tmp_path), NOW)

    assert report.failed_file == tmp_path / "retention" / "failed-urls-20231114T221320Z.csv.gz"
    with gzip.open(report.failed_file, "rt", newline="") as text:
        assert list(csv.reader(text)) == [
            ["crawl", "url", "host", "kind", "depth", "status_code", "error_class", "error",
             "attempts", "discovered_at", "last_fetched_at", "updated_at"],
            ["one", "http://a.test/f31", "a.test", "page", "1", "", "NetworkError",
             'refused, "twice"', "3", str(NOW - 32 * DAY), "", str(NOW - 31 * DAY)],
            ["two", "http://b.test/f100", "b.test", "page", "1", "500", "HttpStatusError",
             "HTTP 500", "0", str(NOW - 101 * DAY), str(NOW - 100 * DAY), str(NOW - 100 * DAY)],
        ]  # fmt: skip


def test_old_pages_are_archived_whole_as_gzip_jsonl(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)

    report = apply_retention(engine, rules(tmp_path), NOW)

    assert report.pages_file == tmp_path / "retention" / "pages-20231114T221320Z.jsonl.gz"
    records = [
        orjson.loads(line) for line in gzip.decompress(report.pages_file.read_bytes()).splitlines()
    ]
    assert [(r["crawl"], r["url"], r["fetched_at"]) for r in records] == [
        ("one", "http://a.test/old91", NOW - 91 * DAY),
        ("two", "http://b.test/old400", NOW - 400 * DAY),
    ]
    assert records[0]["description"] == "kept in the archive"
    assert records[1]["simhash"] == -5
    assert set(records[0]) == {"crawl", *crawled_pages.c.keys()}


def test_old_error_logs_are_archived_whole_as_gzip_jsonl(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)

    report = apply_retention(engine, rules(tmp_path), NOW)

    assert report.errors_file == tmp_path / "retention" / "errors-20231114T221320Z.jsonl.gz"
    records = [
        orjson.loads(line) for line in gzip.decompress(report.errors_file.read_bytes()).splitlines()
    ]
    assert [(r["crawl"], r["task"], r["created_at"]) for r in records] == [
        ("two", "http://b.test/e31", NOW - 31 * DAY),
        (None, "job 7", NOW - 45 * DAY),
    ]
    assert set(records[0]) == {"crawl", *error_logs.c.keys()}


def test_a_second_run_finds_nothing_and_writes_no_file(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)
    first = apply_retention(engine, rules(tmp_path), NOW)

    again = apply_retention(engine, rules(tmp_path), NOW + 60)

    # The service logs each run as one line of what went where, not the report's fields.
    said = first.summary()
    assert said.startswith("2 completed URLs deleted; 2 failed URLs deleted (2 exported to "), said
    assert f"pages deleted ({first.pages_exported} exported to {first.pages_file})" in said
    assert again.summary().startswith("nothing past its retention (")

    assert (again.completed_deleted, again.failed_deleted, again.pages_deleted) == (0, 0, 0)
    assert (again.failed_file, again.pages_file, again.errors_file) == (None, None, None)
    assert len(list((tmp_path / "retention").iterdir())) == 3


def test_an_export_of_the_same_stamp_is_never_overwritten(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)
    (tmp_path / "retention").mkdir()
    (tmp_path / "retention" / "pages-20231114T221320Z.jsonl.gz").write_bytes(b"earlier")

    with pytest.raises(FileExistsError):
        apply_retention(engine, rules(tmp_path), NOW)

    assert len(table_rows(engine, urls)) == 9  # nothing was deleted
    assert (tmp_path / "retention" / "pages-20231114T221320Z.jsonl.gz").read_bytes() == b"earlier"


def test_rules_set_to_none_keep_their_rows(engine: Engine, tmp_path: Path) -> None:
    arrange_ages(engine)

    report = apply_retention(
        engine,
        RetentionRules(failed_after=None, pages_after=None, errors_after=None, compact=False),
        NOW,
    )

    assert report.completed_deleted == 2
    assert report.skipped == [
        "failed: kept (no rule)", "pages: kept (no rule)", "errors: kept (no rule)"
    ]  # fmt: skip
    assert len(table_rows(engine, urls)) == 7
    assert len(table_rows(engine, crawled_pages)) == 4
    assert len(table_rows(engine, error_logs)) == 3


def test_rules_that_delete_exported_rows_need_an_export_dir() -> None:
    with pytest.raises(ValueError, match="need export_dir"):
        RetentionRules()
    with pytest.raises(ValueError, match="negative"):
        RetentionRules(completed_after=-1, failed_after=None, pages_after=None, errors_after=None)


def test_postgresql_vacuums_what_lost_rows_and_analyzes_the_rest(
    tmp_path: Path, pg_schema_url: str
) -> None:
    engine = open_store(pg_schema_url)
    try:
        arrange_ages(engine)
        report = apply_retention(engine, rules(tmp_path, pages_after=None), NOW)
    finally:
        engine.dispose()

    assert report.compaction is not None
    assert report.compaction.actions == ["VACUUM (ANALYZE) urls", "ANALYZE crawled_pages"]


# -- SQLite space ------------------------------------------------------------------------------


@pytest.fixture
def big_sqlite(tmp_path: Path) -> Iterator[Engine]:
    """A SQLite store whose pages are mostly past 90 days and hold a few KiB each."""
    engine = open_store(f"sqlite:///{tmp_path / 'big.db'}")
    crawl = add_crawl(engine, "big")
    rows = [
        {"crawl_id": crawl, "url_hash": f"{i:064x}", "url": f"http://a.test/{i}",
         "final_url": f"http://a.test/{i}", "host": "a.test", "links_count": 0,
         "fetched_at": NOW - (200 if i % 5 else 1) * DAY, "description": "x" * 3000}
        for i in range(2000)
    ]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(crawled_pages), rows)
    yield engine
    engine.dispose()


def sqlite_file(engine: Engine) -> sqlite3.Connection:
    return sqlite3.connect(str(engine.url.database))


def test_sqlite_vacuums_when_a_quarter_is_free_and_then_stays_incremental(
    big_sqlite: Engine, tmp_path: Path
) -> None:
    report = apply_retention(big_sqlite, rules(tmp_path, batch_size=500), NOW)

    assert report.pages_deleted == 1600
    assert report.compaction is not None
    assert report.compaction.vacuum == "full"
    assert report.compaction.free_bytes_before > 0
    assert report.compaction.free_bytes_after == 0
    db = sqlite_file(big_sqlite)
    assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental from now on
    db.close()

    with big_sqlite.begin() as conn:
        conn.execute(crawled_pages.delete().where(crawled_pages.c.id <= 1000))
    later = compact(big_sqlite, now=NOW)

    assert later.vacuum.startswith("incremental")
    assert later.free_bytes_before > 0
    assert later.free_bytes_after == 0


def test_sqlite_leaves_full_vacuum_alone_while_a_worker_is_alive(
    big_sqlite: Engine, tmp_path: Path
) -> None:
    with big_sqlite.begin() as conn:
        conn.execute(
            insert(workers).values(
                id="w1", hostname="h", pid=1, started_at=NOW, heartbeat_at=NOW - 5
            )
        )

    report = apply_retention(big_sqlite, rules(tmp_path, batch_size=500), NOW)

    assert report.compaction is not None
    assert report.compaction.vacuum == "skipped: 1 live worker(s) would wait on the write lock"
    assert report.compaction.free_bytes_after == report.compaction.free_bytes_before


def test_sqlite_maintenance_creates_no_planner_statistics(
    big_sqlite: Engine, tmp_path: Path
) -> None:
    report = apply_retention(big_sqlite, rules(tmp_path, batch_size=500), NOW)

    assert report.compaction is not None
    assert report.compaction.actions == ["PRAGMA auto_vacuum=INCREMENTAL; VACUUM"]
    db = sqlite_file(big_sqlite)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchall() == []
    db.close()


def test_many_gzip_members_read_as_one_file(big_sqlite: Engine, tmp_path: Path) -> None:
    report = apply_retention(big_sqlite, rules(tmp_path, batch_size=100), NOW)

    assert report.pages_file is not None
    data = report.pages_file.read_bytes()
    members, rest = 0, data
    while rest:
        stream = zlib.decompressobj(31)
        stream.decompress(rest)
        rest, members = stream.unused_data, members + 1
    assert members == 20  # one per batch of 100 ids
    lines = io.BytesIO(gzip.decompress(data)).read().splitlines()
    assert len(lines) == 1600


def test_the_summary_examples_hold() -> None:
    failures, tried = doctest.testmod(retention_module)
    assert (failures, tried > 0) == (0, True)
