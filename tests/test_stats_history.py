"""The stats history on real stores: the migration, additive writes from many writers, the
crawler's per-minute counts, the time series read and the roll-up into days."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, inspect, select

from conftest import SettingsFactory
from harvestman.crawl.crawler import Crawler
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.stats import StatsHistory
from harvestman.store import SqlStore, migrate
from harvestman.store.crawl.admin import timeseries
from harvestman.store.history import COUNTERS, add_counts
from harvestman.store.lifecycle.retention import RetentionRules, apply_retention
from harvestman.store.schema import crawled_pages, error_logs, stats_history, urls
from harvestman.store.transaction import transaction as write_transaction
from storerows import DAY, NOW, add_crawl, add_page, open_store, store_url
from testsite import TestSite

MINUTE = 60.0
START = NOW - NOW % DAY  # a UTC midnight


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = open_store(store_url(request, tmp_path))
    yield opened
    opened.dispose()


def history_rows(engine: Engine, *columns: str) -> list[tuple[Any, ...]]:
    table = stats_history.c
    with engine.connect() as conn:
        query = select(*(table[name] for name in columns)).order_by(
            table.crawl_id, table.resolution, table.bucket_start
        )
        return [tuple(row) for row in conn.execute(query)]


def add(
    engine: Engine, crawl: int, resolution: str, buckets: Mapping[float, dict[str, int]]
) -> None:
    with write_transaction(engine) as conn:
        add_counts(conn, crawl, resolution, buckets)


def test_the_migration_goes_down_and_up_again(engine: Engine) -> None:
    assert "stats_history" in inspect(engine).get_table_names()
    migrate.downgrade(engine, "0009")
    assert "stats_history" not in inspect(engine).get_table_names()
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    crawl = add_crawl(engine, "c")
    add(engine, crawl, "minute", {START: {"pages": 3}})
    assert history_rows(engine, "resolution", "bucket_start", "pages") == [("minute", START, 3)]


def test_writes_add_up_and_never_replace(engine: Engine) -> None:
    crawl = add_crawl(engine, "c")
    add(engine, crawl, "minute", {START: {"pages": 2, "bytes": 100}, START + 60: {"errors": 1}})
    add(engine, crawl, "minute", {START: {"pages": 1, "status_2xx": 1}})
    assert history_rows(engine, "bucket_start", "pages", "bytes", "errors", "status_2xx") == [
        (START, 3, 100, 0, 1),
        (START + 60, 0, 0, 1, 0),
    ]
    with pytest.raises(KeyError, match="nonsense"):
        add(engine, crawl, "minute", {START: {"nonsense": 1}})


def test_many_writers_adding_to_one_row_lose_nothing(engine: Engine) -> None:
    crawl = add_crawl(engine, "c")
    writers, writes = 6, 25
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def write() -> None:
        try:
            start.wait()
            for _ in range(writes):
                # Two buckets a write, as a crawler crossing a minute sends them.
                add(engine, crawl, "minute", {START: {"pages": 1}, START + 60: {"bytes": 10}})
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert history_rows(engine, "bucket_start", "pages", "bytes") == [
        (START, writers * writes, 0),
        (START + 60, 0, writers * writes * 10),
    ]


def _outcome(status: UrlStatus, code: int | None, error: str | None, size: int | None) -> Outcome:
    request = CrawlRequest(1, "http://a.test/", "h", "a.test", 0, 2, 0)
    page = None
    if size is not None:
        page = PageRecord("http://a.test/", "http://a.test/", "a.test", code, None, size, 0.0, 1)
    return Outcome(request, status, 0.0, 0, status_code=code, error_class=error, page=page)


def test_the_counts_of_written_batches_per_minute() -> None:
    history = StatsHistory(interval=60.0)
    assert not history.is_due(START, closing=True)  # nothing pending: nothing to write
    new = [NewUrl(f"http://a.test/{i}", f"h{i}", "a.test", 1, 2) for i in range(3)]
    history.add(
        [
            _outcome(UrlStatus.COMPLETED, 200, None, 1000),
            _outcome(UrlStatus.COMPLETED, 304, None, None),
            _outcome(UrlStatus.PENDING, 503, "HttpStatusError", None),  # a retry
            _outcome(UrlStatus.FAILED, 404, "HttpStatusError", 50),
            _outcome(UrlStatus.FAILED, None, "FetchTimeout", 0),
            _outcome(UrlStatus.BLOCKED, None, "RobotsDenied", None),
        ],
        new,
        now=START + 10,
    )
    history.add([_outcome(UrlStatus.COMPLETED, 200, None, 5)], [], now=START + 65)
    assert not history.is_due(START + 69)
    assert history.is_due(START + 69, closing=True)
    assert history.is_due(START + 70)
    assert history.take(START + 70) == {
        START: {
            "new_urls": 3, "pages": 3, "bytes": 1050, "status_2xx": 1, "status_3xx": 1,
            "status_4xx": 1, "status_5xx": 1, "failed": 2, "errors": 3, "robots_denied": 1,
        },
        START + 60: {"pages": 1, "bytes": 5, "status_2xx": 1},
    }  # fmt: skip
    history.add([_outcome(UrlStatus.COMPLETED, 200, None, 1)], [], now=START + 100)
    assert not history.is_due(START + 129)  # an interval after the last take
    taken = history.take(START + 130)
    history.give_back(taken)  # the write failed: the counts go with the next one
    history.add([_outcome(UrlStatus.COMPLETED, 200, None, 1)], [], now=START + 131)
    assert history.take(START + 200) == {
        START + 60: {"pages": 1, "bytes": 1, "status_2xx": 1},
        START + 120: {"pages": 1, "bytes": 1, "status_2xx": 1},
    }


class CountingStore(SqlStore):
    """The real store, counting the stats history writes."""

    writes: list[Mapping[float, Mapping[str, int]]]

    async def add_stats(self, crawl_id: int, buckets: Mapping[float, Mapping[str, int]]) -> None:
        self.writes.append(buckets)
        await super().add_stats(crawl_id, buckets)


def _count(engine: Engine, table: Any, *where: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar())


async def test_a_crawl_writes_its_counts_once_and_they_match_the_store(
    site: TestSite, make_settings: SettingsFactory
) -> None:
    settings = make_settings()
    async with CountingStore(settings.database_url) as store:
        store.writes = []
        await store.upgrade()
        crawler = Crawler(settings, store, [site.url("/")])
        await crawler.run()
        crawl, db = crawler.crawl_id, store.engine
        # A crawl shorter than the interval: one upsert, when it closes.
        assert len(store.writes) == 1
        assert all(start % MINUTE == 0 for start in store.writes[0])
        with db.connect() as conn:
            sums = conn.execute(
                select(*(func.sum(stats_history.c[name]) for name in COUNTERS)).where(
                    stats_history.c.crawl_id == crawl
                )
            ).one()
        totals = dict(zip(COUNTERS, (int(n or 0) for n in sums), strict=True))
        pages = crawled_pages.c
        with db.connect() as conn:
            stored_bytes = conn.execute(select(func.sum(pages.content_length))).scalar()
        ours = urls.c.crawl_id == crawl
        assert totals["pages"] == _count(db, crawled_pages) > 10
        assert totals["bytes"] == stored_bytes
        assert totals["status_2xx"] == _count(
            db, crawled_pages, pages.status_code.between(200, 299)
        )
        assert totals["failed"] == _count(db, urls, ours, urls.c.status == "failed") > 0
        assert totals["errors"] == _count(db, error_logs) > 0
        denied = _count(db, urls, ours, urls.c.error_class == "RobotsDenied")
        assert totals["robots_denied"] == denied > 0
        assert totals["new_urls"] == _count(db, urls, ours) - 1  # all but the seed
        # Every response counts, retried ones too: /status/500 four times, 503-once once;
        # 429-once once and /status/404 (testsite.EXPECTED_HITS).
        assert (totals["status_5xx"], totals["status_4xx"], totals["status_3xx"]) == (5, 2, 0)


def test_the_time_series_sums_minutes_and_takes_days_whole(engine: Engine) -> None:
    one, two = add_crawl(engine, "one"), add_crawl(engine, "two")
    add(engine, one, "minute", {
        START + 60: {"pages": 6, "status_2xx": 3, "status_5xx": 1},
        START + 120: {"pages": 4, "status_2xx": 1},
        START + 3600: {"pages": 1},
    })  # fmt: skip
    add(engine, two, "minute", {START + 60: {"pages": 100}})
    add(engine, one, "day", {START - DAY: {"pages": 500, "status_4xx": 5}})

    assert [
        (p["t"], p["pages"], p["status_2xx"], p["success_rate"], p["pages_per_second"])
        for p in timeseries(engine, one, START, 600.0)
    ] == [
        (START, 10, 4, 0.8, round(10 / 600, 3)),
        (START + 3600, 1, 0, None, round(1 / 600, 3)),
    ]
    # Over two days: the rolled-up day is one point; both crawls when none is named.
    assert [(p["t"], p["pages"]) for p in timeseries(engine, None, START - DAY, DAY)] == [
        (START - DAY, 500),
        (START, 111),
    ]
    # A minute overlapping `since` counts; one ending at it does not.
    assert [p["pages"] for p in timeseries(engine, one, START + 90, 60.0)] == [6, 4, 1]
    assert [p["pages"] for p in timeseries(engine, one, START + 120, 60.0)] == [4, 1]


def test_a_crawl_without_history_gets_its_series_from_the_pages(engine: Engine) -> None:
    crawl = add_crawl(engine, "old")
    add_page(engine, crawl, "http://a.test/1", 0.5, content_length=100)
    add_page(engine, crawl, "http://a.test/2", 0.5, status_code=404, content_length=20,
             error_class="HttpStatusError")  # fmt: skip
    add_page(engine, crawl, "http://a.test/3", 5)
    [point] = timeseries(engine, crawl, NOW - DAY, DAY)
    assert point["t"] == (NOW - 0.5 * DAY) // DAY * DAY
    assert {k: point[k] for k in ("pages", "bytes", "errors", "status_2xx", "status_4xx")} == {
        "pages": 2, "bytes": 120, "errors": 1, "status_2xx": 1, "status_4xx": 1,
    }  # fmt: skip
    assert (point["robots_denied"], point["new_urls"], point["success_rate"]) == (None, None, 0.5)


def test_maintenance_rolls_minutes_older_than_a_week_into_days(
    engine: Engine, tmp_path: Path
) -> None:
    one, two = add_crawl(engine, "one"), add_crawl(engine, "two")
    old_day = START - 9 * DAY
    add(engine, one, "minute", {
        old_day + 60: {"pages": 1, "bytes": 10},
        old_day + DAY - 60: {"pages": 2, "errors": 1},
        old_day + DAY + 60: {"pages": 4},  # the next day
        NOW - 7 * DAY + 60: {"pages": 8},  # younger than the rule: kept
    })  # fmt: skip
    add(engine, two, "minute", {old_day + 120: {"pages": 16}})
    add(engine, one, "day", {old_day: {"pages": 32}})  # rolled up before
    rules = RetentionRules(
        completed_after=None,
        failed_after=None,
        pages_after=None,
        errors_after=None,
        batch_size=2,
        compact=False,
    )

    report = apply_retention(engine, rules, NOW)

    assert (report.stats_minutes_rolled, report.stats_days_added) == (4, 3)
    assert history_rows(engine, "crawl_id", "resolution", "bucket_start", "pages", "errors") == [
        (one, "day", old_day, 35, 1),
        (one, "day", old_day + DAY, 4, 0),
        (one, "minute", NOW - 7 * DAY + 60, 8, 0),
        (two, "day", old_day, 16, 0),
    ]
    again = apply_retention(engine, rules, NOW)
    assert again.stats_minutes_rolled == 0
    assert history_rows(engine, "pages") == [(35,), (4,), (8,), (16,)]
    kept = apply_retention(engine, RetentionRules(
        completed_after=None, failed_after=None, pages_after=None, errors_after=None,
        stats_minutes_after=None, compact=False,
    ), NOW + 30 * DAY)  # fmt: skip
    assert "stats: minute rows kept (no rule)" in kept.skipped
    assert history_rows(engine, "pages") == [(35,), (4,), (8,), (16,)]
