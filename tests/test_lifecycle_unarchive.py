"""Retention's archives load back: pages, products with their images and error logs return as
they were (new ids), filtered by time and domain, and loading twice adds nothing. Minute rows
of the stats history are archived before the roll-up drops them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine, insert

from harvestman.errors import StoreError
from harvestman.store.history import add_counts
from harvestman.store.lifecycle.retention import RetentionRules, apply_retention
from harvestman.store.lifecycle.unarchive import restore_archive
from harvestman.store.schema import crawled_pages, crawls, error_logs, images, products
from harvestman.store.transaction import transaction
from harvestman.urls import url_hash
from storerows import DAY, NOW, add_crawl, add_page, open_store, store_url, table_rows
from support.cli import invoke_cli

STAMP = "20231114T221320Z"
PAGE_FIELDS = ("crawl_id", "url", "host", "status_code", "title", "description", "fetched_at",
               "simhash", "archive_path", "text")  # fmt: skip


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = open_store(store_url(request, tmp_path))
    yield opened
    opened.dispose()


def arrange(engine: Engine) -> None:
    one, two = add_crawl(engine, "one"), add_crawl(engine, "two")
    add_page(engine, one, "http://a.test/old", 95, description="kept in the archive",
             simhash=-5, archive_path="ab/cd/x.html.gz", text="some words")  # fmt: skip
    add_page(engine, one, "http://shop.a.test/older", 120)
    add_page(engine, two, "http://b.test/old", 100)
    add_page(engine, two, "http://b.test/young", 3)
    with engine.begin() as conn:
        product = conn.execute(insert(products).values(
            crawl_id=one, url_hash=url_hash("http://a.test/old"), position=0,
            page_url="http://a.test/old", name="kettle", price=Decimal("12.5000"),
            currency="EUR", source="json-ld", parser="json-ld@1", content_hash="c" * 64,
            created_at=NOW - 95 * DAY, updated_at=NOW - 95 * DAY,
        ).returning(products.c.id)).scalar_one()  # fmt: skip
        conn.execute(insert(images), [
            {"product_id": product, "position": n, "url": f"http://a.test/{n}.jpg", "alt": None}
            for n in range(2)
        ])  # fmt: skip
        conn.execute(insert(error_logs), [
            {"crawl_id": one, "category": "network", "error_class": "NetworkError",
             "message": "refused", "task": "http://a.test/x", "created_at": NOW - 40 * DAY},
            {"crawl_id": None, "category": "parse", "error_class": "KeyError",
             "message": "job 7", "task": "job 7", "created_at": NOW - 50 * DAY},
        ])  # fmt: skip


def retain(engine: Engine, tmp_path: Path) -> Path:
    rules = RetentionRules(completed_after=None, failed_after=None, stats_minutes_after=None,
                           export_dir=tmp_path / "retention", compact=False)  # fmt: skip
    report = apply_retention(engine, rules, NOW)
    assert (report.pages_deleted, report.products_deleted, report.errors_deleted) == (3, 1, 2)
    return tmp_path / "retention"


def test_archived_rows_come_back_as_they_were_and_only_once(engine: Engine, tmp_path: Path) -> None:
    arrange(engine)
    pages_before = table_rows(engine, crawled_pages, *PAGE_FIELDS)
    errors_before = table_rows(engine, error_logs, "crawl_id", "message", "task", "created_at")
    images_before = table_rows(engine, images, "position", "url")
    exports = retain(engine, tmp_path)

    for kind in ("pages", "products", "errors"):
        report = restore_archive(engine, exports / f"{kind}-{STAMP}.jsonl.gz", now=NOW)
        assert (report.kind, report.rejected, report.crawls_created) == (kind, 0, [])

    assert sorted(table_rows(engine, crawled_pages, *PAGE_FIELDS)) == sorted(pages_before)
    assert sorted(
        table_rows(engine, error_logs, "crawl_id", "message", "task", "created_at"), key=str
    ) == sorted(errors_before, key=str)
    assert table_rows(engine, products, "name", "price") == [("kettle", Decimal("12.5000"))]
    assert table_rows(engine, images, "position", "url") == images_before

    for kind, present in (("pages", 3), ("products", 1), ("errors", 2)):
        again = restore_archive(engine, exports / f"{kind}-{STAMP}.jsonl.gz", now=NOW)
        assert (again.added, again.present, again.images_added) == (0, present, 0)
    assert len(table_rows(engine, crawled_pages)) == 4
    assert len(table_rows(engine, error_logs)) == 2
    assert len(table_rows(engine, images)) == 2


def test_since_and_domain_choose_what_comes_back(engine: Engine, tmp_path: Path) -> None:
    arrange(engine)
    pages = retain(engine, tmp_path) / f"pages-{STAMP}.jsonl.gz"

    report = restore_archive(engine, pages, domain="A.test", since=NOW - 110 * DAY, now=NOW)
    assert (report.read, report.matched, report.added) == (3, 1, 1)
    report = restore_archive(engine, pages, domain="a.test", now=NOW)
    assert (report.matched, report.added, report.present) == (2, 1, 1)

    assert sorted(table_rows(engine, crawled_pages, "url")) == [
        ("http://a.test/old",), ("http://b.test/young",), ("http://shop.a.test/older",),
    ]  # fmt: skip


def test_a_crawl_missing_from_the_store_is_created(tmp_path: Path) -> None:
    source = open_store(f"sqlite:///{tmp_path / 'old.db'}")
    target = open_store(f"sqlite:///{tmp_path / 'new.db'}")
    try:
        arrange(source)
        exports = retain(source, tmp_path)
        add_crawl(target, "two")  # there already, under another id
        report = restore_archive(target, exports / f"pages-{STAMP}.jsonl.gz", now=NOW)
        assert (report.added, report.crawls_created) == (3, ["one"])
        assert table_rows(target, crawls, "name") == [("two",), ("one",)]
        assert sorted(table_rows(target, crawled_pages, "crawl_id", "url")) == [
            (1, "http://b.test/old"), (2, "http://a.test/old"), (2, "http://shop.a.test/older"),
        ]  # fmt: skip
    finally:
        source.dispose()
        target.dispose()


def test_bad_lines_are_counted_and_a_file_that_is_no_archive_is_refused(
    engine: Engine, tmp_path: Path
) -> None:
    add_crawl(engine, "one")
    good = {"crawl": "one", "url_hash": "f" * 64, "url": "http://a.test/", "final_url":
            "http://a.test/", "host": "a.test", "links_count": 0, "fetched_at": NOW}  # fmt: skip
    lines = [orjson.dumps(good), b"{not json", b"[1, 2]",
             orjson.dumps({**good, "url_hash": "e" * 64, "url": None})]  # fmt: skip
    path = tmp_path / "pages-x.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))

    report = restore_archive(engine, path, now=NOW)
    assert (report.read, report.added, report.rejected) == (4, 1, 3)

    junk = tmp_path / "pages-junk.jsonl.gz"
    junk.write_bytes(b"plain text, not gzip")
    with pytest.raises(StoreError, match="is not a readable gzip archive"):
        restore_archive(engine, junk, now=NOW)
    unknown = tmp_path / "mystery.jsonl.gz"
    unknown.write_bytes(gzip.compress(b'{"a": 1}\n'))
    with pytest.raises(StoreError, match="is not a pages, products or errors archive"):
        restore_archive(engine, unknown, now=NOW)


def test_minute_rows_are_archived_before_the_roll_up_drops_them(
    engine: Engine, tmp_path: Path
) -> None:
    crawl = add_crawl(engine, "one")
    start = NOW - NOW % DAY - 9 * DAY
    with transaction(engine) as conn:
        add_counts(conn, crawl, "minute", {start + 60: {"pages": 1, "bytes": 10},
                                           start + 120: {"pages": 2}})  # fmt: skip
        add_counts(conn, crawl, "minute", {NOW - 60: {"pages": 5}})  # younger: stays
    rules = RetentionRules(completed_after=None, failed_after=None, pages_after=None,
                           errors_after=None, export_dir=tmp_path / "retention",
                           batch_size=1, compact=False)  # fmt: skip

    report = apply_retention(engine, rules, NOW)

    assert report.stats_file == tmp_path / "retention" / f"stats-minutes-{STAMP}.jsonl.gz"
    archived = [orjson.loads(line) for line in gzip.decompress(
        report.stats_file.read_bytes()).splitlines()]  # fmt: skip
    assert [(r["crawl"], r["resolution"], r["bucket_start"], r["pages"], r["bytes"])
            for r in archived] == [("one", "minute", start + 60, 1, 10),
                                   ("one", "minute", start + 120, 2, 0)]  # fmt: skip


async def test_the_command_loads_an_archive_with_its_filters(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    engine = open_store(f"sqlite:///{db}")
    arrange(engine)
    pages = retain(engine, tmp_path) / f"pages-{STAMP}.jsonl.gz"
    engine.dispose()

    code, out, err = await invoke_cli("restore-archive", str(pages), "--db", str(db),
                                   "--domain", "b.test", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["added"] == 1
    code, _, err = await invoke_cli("restore-archive", str(pages), "--db", str(db), "--since", "x")
    assert code == 2
    assert "--since" in err
    engine = open_store(f"sqlite:///{db}")
    try:
        assert sorted(table_rows(engine, crawled_pages, "url")) == [
            ("http://b.test/old",),
            ("http://b.test/young",),
        ]
    finally:
        engine.dispose()


def test_rows_whose_values_do_not_fit_their_columns_are_rejected(
    engine: Engine, tmp_path: Path
) -> None:
    """A crafted archive: an archive_path outside the archive (absolute, ``..``), text where a
    number goes, a NUL, a key longer than its column. Only the sound row comes back."""
    add_crawl(engine, "one")
    good = {"crawl": "one", "url_hash": "f" * 64, "url": "http://a.test/", "final_url":
            "http://a.test/", "host": "a.test", "links_count": 0, "fetched_at": NOW,
            "archive_path": "ab/cd/x.html.gz"}  # fmt: skip
    bad = [
        {"archive_path": str(tmp_path / "victim")},
        {"archive_path": "../../victim"},
        {"archive_path": "ab/../../victim"},
        {"archive_path": "ab\\..\\victim"},
        {"status_code": "200; DROP TABLE"},
        {"title": "a\x00b"},
        {"url_hash": "e" * 500},
    ]
    lines = [orjson.dumps(good)] + [
        orjson.dumps({**good, "url_hash": f"{n:064x}", **change})
        if "url_hash" not in change
        else orjson.dumps({**good, **change})
        for n, change in enumerate(bad)
    ]
    path = tmp_path / "pages-crafted.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))

    report = restore_archive(engine, path, now=NOW)

    assert (report.read, report.added, report.rejected) == (8, 1, 7)
    assert table_rows(engine, crawled_pages, "archive_path") == [("ab/cd/x.html.gz",)]
    assert report.reasons["archive_path"] == 4
