"""Replay on real stores: a domain's pages fetched since T are queued again; a dry run only says."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, event

from harvestman.lifecycle.since import parse_since
from harvestman.store import SqlStore
from harvestman.store.lifecycle.replay import replay
from harvestman.store.schema import urls
from storerows import DAY, NOW, add_crawl, add_page, add_url, open_store, store_url, table_rows

SINCE = NOW - 3 * DAY
LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"
STATE = ("url", "status", "next_crawl_at", "attempts", "etag", "last_modified", "depth")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    opened = open_store(store_url(request, tmp_path))
    yield opened
    opened.dispose()


def arrange(engine: Engine) -> int:
    """Pages of a.test fetched before and after SINCE in every frontier state, and others."""
    crawl, other = add_crawl(engine, "shop"), add_crawl(engine, "other")
    for name, status, age, extra in [
        ("done", "completed", 1, {"etag": '"v1"', "last_modified": LAST_MODIFIED, "attempts": 1}),
        ("broken", "failed", 2, {"attempts": 3, "status_code": 500}),
        ("retrying", "pending", 0.5, {"next_crawl_at": NOW + 3600, "attempts": 1}),
        ("leased", "in_progress", 0.1, {"lease_until": NOW + 300, "leased_by": "w1"}),
        ("denied", "blocked", 1, {}),
        ("old", "completed", 10, {"etag": '"v0"'}),
    ]:  # fmt: skip
        url = f"http://a.test/{name}"
        add_url(engine, crawl, url, status, age, **extra)
        add_page(engine, crawl, url, age)
    add_page(engine, crawl, "http://a.test/forgotten", 2)  # its frontier row was deleted
    add_url(engine, crawl, "http://www.a.test/w", "completed", 1)
    add_page(engine, crawl, "http://www.a.test/w", 1)
    add_url(engine, other, "http://a.test/done", "completed", 1)
    add_page(engine, other, "http://a.test/done", 1)
    return crawl


def test_a_dry_run_counts_and_samples_and_changes_nothing(engine: Engine) -> None:
    crawl = arrange(engine)
    before = table_rows(engine, urls)

    plan = replay(engine, crawl, "A.test", SINCE, dry_run=True, now=NOW)

    assert (plan.pages, plan.requeue, plan.in_flight, plan.blocked) == (6, 3, 1, 1)
    assert (plan.missing, plan.recreated) == (1, 0)
    assert plan.sample == ["http://a.test/done", "http://a.test/broken", "http://a.test/retrying"]
    assert (plan.domain, plan.since, plan.until, plan.dry_run) == ("a.test", SINCE, NOW, True)
    assert table_rows(engine, urls) == before


def others(engine: Engine, crawl: int) -> list[tuple[object, ...]]:
    """Frontier rows that are not host a.test of ``crawl``."""
    rows = table_rows(engine, urls, *STATE, "crawl_id", "host")
    return [row for row in rows if (row[-2], row[-1]) != (crawl, "a.test")]


def test_a_run_queues_the_pages_again_due_now_without_validators(engine: Engine) -> None:
    crawl = arrange(engine)
    untouched = others(engine, crawl)

    plan = replay(engine, crawl, "a.test", SINCE, dry_run=False, now=NOW, batch_size=2)

    assert (plan.pages, plan.requeue, plan.in_flight, plan.blocked) == (6, 3, 1, 1)
    assert (plan.missing, plan.recreated) == (1, 0)
    rows = {row[0]: row for row in table_rows(engine, urls, *STATE, "crawl_id") if row[-1] == crawl}
    for name in ("done", "broken", "retrying"):
        url = f"http://a.test/{name}"
        assert rows[url][:-1] == (url, "pending", NOW, 0, None, None, 1)
    assert rows["http://a.test/leased"][1:3] == ("in_progress", NOW - 0.1 * DAY + 7 * DAY)
    assert rows["http://a.test/denied"][1] == "blocked"
    assert rows["http://a.test/old"][1:5] == ("completed", NOW - 3 * DAY, 0, '"v0"')
    assert "http://a.test/forgotten" not in rows
    assert others(engine, crawl) == untouched  # the www host and the other crawl


def test_pages_whose_row_retention_deleted_come_back_at_the_given_depth(engine: Engine) -> None:
    crawl = arrange(engine)

    plan = replay(engine, crawl, "a.test", SINCE, dry_run=False, now=NOW, depth_for_missing=3)

    assert (plan.missing, plan.recreated) == (1, 1)
    assert plan.sample[-1] == "http://a.test/forgotten"
    [row] = [
        r for r in table_rows(engine, urls, *STATE, "host") if r[0] == "http://a.test/forgotten"
    ]
    assert row == ("http://a.test/forgotten", "pending", NOW, 0, None, None, 3, "a.test")


def test_pages_fetched_after_the_replay_began_are_left_out(engine: Engine) -> None:
    crawl = arrange(engine)

    plan = replay(engine, crawl, "a.test", SINCE, dry_run=True, now=NOW - 1.5 * DAY)

    assert plan.sample == ["http://a.test/broken"]  # done, retrying and leased are newer


def test_a_replayed_row_is_leased_again(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'lease.db'}"
    engine = open_store(db)
    crawl = arrange(engine)
    replay(engine, crawl, "a.test", SINCE, dry_run=False, now=NOW)
    engine.dispose()

    async def lease() -> list[tuple[str, str | None]]:
        async with SqlStore(db) as store:
            leased, _ = await store.lease(crawl, {"a.test": 10}, NOW, NOW + 300, "w2")
        return sorted((r.url, r.etag) for r in leased)

    assert asyncio.run(lease()) == [
        ("http://a.test/broken", None),
        ("http://a.test/done", None),
        ("http://a.test/retrying", None),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("36h", NOW - 36 * 3600),
        ("7d", NOW - 7 * DAY),
        ("90m", NOW - 5400),
        ("2w", NOW - 14 * DAY),
        ("2024-05-01", 1_714_521_600.0),
        ("2024-05-01T12:00:00+02:00", 1_714_557_600.0),
        ("1714521600", 1_714_521_600.0),
    ],
)
def test_since_reads_ages_dates_and_epochs(text: str, expected: float) -> None:
    assert parse_since(text, now=NOW) == expected


def test_since_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="use an age"):
        parse_since("last tuesday", now=NOW)


@pytest.mark.parametrize(
    ("domain", "host"),
    [("A.Test", "a.test"), ("a.test.", "a.test"), ("bücher.test", "xn--bcher-kva.test"),
     ("a.test:8080", "a.test:8080")],
)  # fmt: skip
def test_the_domain_is_read_as_the_store_keys_hosts(tmp_path: Path, domain: str, host: str) -> None:
    engine = open_store(f"sqlite:///{tmp_path / 's.db'}")
    crawl = add_crawl(engine, "c")

    plan = replay(engine, crawl, domain, SINCE, dry_run=True, now=NOW)

    assert plan.domain == host
    engine.dispose()


def test_the_page_scan_stays_on_the_host_index_when_the_store_has_statistics(
    tmp_path: Path,
) -> None:
    engine = open_store(f"sqlite:///{tmp_path / 's.db'}")
    crawl = arrange(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
        # What a sampled ANALYZE of a big store wrote: fetched_at looks far more selective.
        conn.exec_driver_sql("DELETE FROM sqlite_stat1")
        conn.exec_driver_sql(
            "INSERT INTO sqlite_stat1 VALUES ('crawled_pages', 'ix_crawled_pages_host',"
            " '81435 1001 334'), ('crawled_pages', 'ix_crawled_pages_fetched_at', '40414 1001 1')"
        )
    engine.dispose()
    statements: list[tuple[str, object]] = []
    event.listen(
        engine,
        "before_cursor_execute",
        lambda _c, _cur, sql, params, _ctx, _many: statements.append((sql, params)),
    )

    replay(engine, crawl, "a.test", SINCE, dry_run=True, now=NOW)

    sql, params = next(s for s in statements if "FROM crawled_pages" in s[0])
    with engine.connect() as conn:
        plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params).all()
    engine.dispose()
    # The host index, walked in id order from the last page seen (``id`` is the rowid, named
    # as the index lists it since it was widened for the API's lists).
    [step] = [row[3] for row in plan]
    assert step in (
        f"SEARCH crawled_pages USING INDEX ix_crawled_pages_host (crawl_id=? AND host=? AND {i}>?)"
        for i in ("rowid", "id")
    )
