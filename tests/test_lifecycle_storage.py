"""The storage report: bytes per table and index as the database counts them, the raw archive's
size, growth per day from the stats history, and the day the disk is full at that rate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from sqlalchemy import Engine, text, update

from apiclient import running_api
from conftest import SettingsFactory
from harvestman.archive.raw import LocalBlobs, RawArchive
from harvestman.config import Settings
from harvestman.lifecycle.storage import DAY, storage_report
from harvestman.store import SqlStore
from harvestman.store.history import add_counts
from harvestman.store.schema import crawls
from harvestman.store.transaction import transaction
from storerows import add_crawl, add_page, open_store, store_url
from support.cli import invoke_cli

NOW = time.time()
TODAY = NOW // DAY * DAY


def fill(engine: Engine, archive_dir: Path) -> tuple[int, int]:
    """Six pages, two with archived bodies; 30 pages over the last three days in the history.
    Returns the archive's objects and bytes."""
    crawl = add_crawl(engine, "site")
    archive = RawArchive(LocalBlobs(archive_dir))
    keys = [archive.put(f"<p>body {n}".encode() * 50, "text/html") for n in range(2)]
    with engine.begin() as conn:
        conn.execute(update(crawls).values(archive_location=str(archive_dir)))
    for n in range(6):
        add_page(engine, crawl, f"http://a.test/{n}", 0.1, description="x" * 500,
                 archive_path=keys[n] if n < 2 else None)  # fmt: skip
    with transaction(engine) as conn:
        add_counts(conn, crawl, "day", {TODAY - 2 * DAY: {"pages": 10}})
        add_counts(conn, crawl, "minute", {TODAY - DAY + 60: {"pages": 5},
                                           TODAY - DAY + 120: {"pages": 5}})  # fmt: skip
        add_counts(conn, crawl, "minute", {TODAY + 60: {"pages": 10}})
        add_counts(conn, crawl, "day", {TODAY - 40 * DAY: {"pages": 999}})  # outside 30 days
    files = [p for p in archive_dir.rglob("*.gz")]
    return len(files), sum(p.stat().st_size for p in files)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_url(request, tmp_path)


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    opened = open_store(url)
    yield opened
    opened.dispose()


def report_of(url: str) -> object:
    store = SqlStore(url)
    try:
        return storage_report(store.maintenance, Settings(database_url=url), NOW)
    finally:
        store.dispose()


def test_growth_and_the_archive_are_measured_and_the_disk_date_follows(
    url: str, engine: Engine, tmp_path: Path
) -> None:
    objects, archive_bytes = fill(engine, tmp_path / "raw")

    report = report_of(url)

    day = lambda t: datetime.fromtimestamp(t, UTC).date().isoformat()  # noqa: E731
    assert report.pages_per_day == {  # type: ignore[attr-defined]
        day(TODAY - 2 * DAY): 10, day(TODAY - DAY): 10, day(TODAY): 10,
    }  # fmt: skip
    [archive] = report.archives  # type: ignore[attr-defined]
    assert (archive.location, archive.objects, archive.bytes) == (
        str(tmp_path / "raw"), objects, archive_bytes,
    )  # fmt: skip
    total = report.store.total_bytes  # type: ignore[attr-defined]
    # 30 pages over 3 days; a page costs the store total / 6 pages, the archive its bytes / 6.
    assert report.store_growth_bytes_per_day == pytest.approx(10 * total / 6)  # type: ignore[attr-defined]
    assert report.archive_growth_bytes_per_day == pytest.approx(10 * archive_bytes / 6)  # type: ignore[attr-defined]
    [disk] = [d for d in report.disks if "archive" in d.holds]  # type: ignore[attr-defined]
    days_left = disk.free_bytes / disk.growth_bytes_per_day
    assert disk.full_on == day(NOW + days_left * DAY)


def test_postgresql_figures_are_the_servers_own(pg_schema_url: str, tmp_path: Path) -> None:
    engine = open_store(pg_schema_url)
    try:
        with engine.begin() as conn:  # the planner's estimates, taken while it was empty
            conn.execute(text("ANALYZE"))
        fill(engine, tmp_path / "raw")
        report = report_of(pg_schema_url)
        tables = {t.name: t for t in report.store.tables}  # type: ignore[attr-defined]
        with engine.connect() as conn:
            for name in ("crawled_pages", "crawls", "stats_history", "urls", "backups"):
                total, own, indexes, rows = conn.execute(text(
                    f"SELECT pg_total_relation_size('{name}'), pg_relation_size('{name}'),"
                    f" pg_indexes_size('{name}'), (SELECT count(*) FROM {name})"
                )).one()  # fmt: skip
                found = tables[name]
                assert (found.total_bytes, found.table_bytes, found.index_bytes) == (
                    total, own, indexes,
                )  # fmt: skip
                assert found.rows == rows
            for index in report.store.indexes:  # type: ignore[attr-defined]
                assert (
                    index.bytes
                    == conn.execute(text(f"SELECT pg_relation_size('{index.name}')")).scalar_one()
                )
            everything = conn.execute(text(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
                " AND c.relkind IN ('r', 'p')"
            )).scalar_one()  # fmt: skip
        assert report.store.total_bytes == everything  # type: ignore[attr-defined]
        assert tables["crawled_pages"].rows == 6
        assert "ix_crawled_pages_host" in {i.name for i in report.store.indexes}  # type: ignore[attr-defined]
    finally:
        engine.dispose()


def test_sqlite_pages_add_up_to_the_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = open_store(url)
    try:
        fill(engine, tmp_path / "raw")
        with engine.connect() as conn:
            size, pages, free = (
                conn.exec_driver_sql(f"PRAGMA {p}").scalar_one()
                for p in ("page_size", "page_count", "freelist_count")
            )
            schema_bytes = conn.exec_driver_sql(
                "SELECT sum(pgsize) FROM dbstat WHERE name = 'sqlite_schema'"
            ).scalar_one()
    finally:
        engine.dispose()

    report = report_of(url)

    sizes = report.store  # type: ignore[attr-defined]
    assert sizes.total_bytes == size * pages
    tables = {t.name: t for t in sizes.tables}
    assert tables["crawled_pages"].rows == 6
    assert (
        tables["crawled_pages"].index_bytes
        == sum(i.bytes for i in sizes.indexes if i.table == "crawled_pages")
        > 0
    )
    # Every page of the file is a table's, an index's, the schema's, or free.
    assert sum(t.total_bytes for t in sizes.tables) + schema_bytes + free * size == pages * size


async def test_the_admin_route_and_the_command_report_the_same_tables(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings()
    async with running_api(settings) as api:
        fill(api.store.engine, tmp_path / "raw")
        refused = await api.client.get("/api/admin/storage", headers=api.user)
        answered = await api.client.get("/api/admin/storage", headers=api.admin)
    assert refused.status_code == 403
    assert answered.status_code == 200
    body = answered.json()
    assert {t["name"]: t["rows"] for t in body["store"]["tables"]}["crawled_pages"] == 6
    assert body["archives"][0]["objects"] == 2

    code, out, err = await invoke_cli("storage", "--json", "--database-url", settings.database_url)
    assert code == 0, err
    printed = orjson.loads(out)
    assert [t["name"] for t in printed["store"]["tables"]] == [
        t["name"] for t in body["store"]["tables"]
    ]
    code, out, err = await invoke_cli("storage", "--database-url", settings.database_url)
    assert code == 0, err
    assert "crawled_pages" in out
    assert "full on" in out
