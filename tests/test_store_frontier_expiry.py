"""The frontier's two whole-host/whole-crawl writes on SQLite and PostgreSQL: expired completed
rows made due again (``make_expired_due``) and a dead host's pending rows given up
(``give_up_host``)."""

from __future__ import annotations

import doctest
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from conftest import SettingsFactory
from harvestman.records import NewUrl, Outcome, UrlStatus
from harvestman.store import SqlStore
from harvestman.store.crawl import frontier as frontier_store
from harvestman.urls import host_key, url_hash


def new(url: str, depth: int = 1, kind: str = "page") -> NewUrl:
    return NewUrl(url, url_hash(url), host_key(url), depth, 2, kind=kind)


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(
    request: pytest.FixtureRequest, make_settings: SettingsFactory
) -> AsyncIterator[SqlStore]:
    if request.param == "sqlite":
        url = make_settings().database_url
    else:
        url = str(request.getfixturevalue("pg_schema_url"))
    async with SqlStore(url) as opened:
        await opened.upgrade()
        yield opened


async def finish_all(
    store: SqlStore,
    crawl_id: int,
    now: float,
    again: dict[str, float],
    status: dict[str, UrlStatus],
) -> None:
    """Lease every due row and record it as ``status`` says (completed by default), due again
    at ``again[url]``."""
    hosts = await store.pending_hosts(crawl_id)
    leased, _ = await store.lease(crawl_id, dict.fromkeys(hosts, 100), now, now + 60, "w")
    done = [
        Outcome(r, status.get(r.url, UrlStatus.COMPLETED), again[r.url], 0, status_code=200)
        for r in leased
    ]
    await store.record(crawl_id, done, [], now)


async def test_expired_finished_rows_within_depth_become_pending(store: SqlStore) -> None:
    crawl_id = await store.ensure_crawl("c")
    rows = [
        new("http://a.test/", 0),
        new("http://a.test/deep", 4),
        new("http://a.test/sitemap.xml", 5, kind="sitemap"),
        new("http://b.test/later", 1),
        new("http://b.test/was-down", 1),
        new("http://b.test/private", 1),
    ]
    await store.add_urls(crawl_id, rows, 100.0)
    again = {row.url: 200.0 for row in rows} | {"http://b.test/later": 900.0}
    status = {
        "http://b.test/was-down": UrlStatus.FAILED,  # a dead letter: asked for again
        "http://b.test/private": UrlStatus.BLOCKED,  # robots.txt's: left to its start pages
    }
    await finish_all(store, crawl_id, 100.0, again, status)

    assert await store.make_expired_due(crawl_id, 199.0, max_depth=3) == 0
    assert await store.make_expired_due(crawl_id, 200.0, max_depth=3) == 3

    states = {
        row["url"]: (row["status"], row["next_crawl_at"]) for row in store.iter_urls(crawl_id)
    }
    assert states == {
        "http://a.test/": ("pending", 200.0),
        "http://a.test/deep": ("completed", 200.0),  # past the max depth
        "http://a.test/sitemap.xml": ("pending", 200.0),  # listings keep their own depth
        "http://b.test/later": ("completed", 900.0),  # not expired
        "http://b.test/was-down": ("pending", 200.0),
        "http://b.test/private": ("blocked", 200.0),
    }


async def test_giving_up_a_host_fails_its_pending_rows_and_logs_each(store: SqlStore) -> None:
    crawl_id = await store.ensure_crawl("c")
    dead = [new(f"http://dead.test/{n}") for n in range(3)]
    await store.add_urls(crawl_id, [*dead, new("http://alive.test/")], 100.0)
    leased, _ = await store.lease(crawl_id, {"dead.test": 1}, 100.0, 160.0, "w")

    given_up = await store.give_up_host(
        crawl_id, "dead.test", "HostUnavailable", "dead.test unavailable", 700.0, 1700.0
    )

    assert given_up == 2  # the leased row is its worker's to finish
    states = {
        row["url"]: (row["status"], row["error_class"], row["next_crawl_at"])
        for row in store.iter_urls(crawl_id)
    }
    assert states == {
        leased[0].url: ("in_progress", None, 100.0),
        **{
            row.url: ("failed", "HostUnavailable", 1700.0)
            for row in dead
            if row.url != leased[0].url
        },
        "http://alive.test/": ("pending", None, 100.0),
    }
    errors = store.error_rows(crawl_id=crawl_id)
    assert sorted((e["category"], e["task"], e["message"]) for e in errors) == sorted(
        ("network", row.url, "dead.test unavailable") for row in dead if row.url != leased[0].url
    )
    assert await store.give_up_host(crawl_id, "dead.test", "HostUnavailable", "x", 701.0, 0) == 0


async def test_links_met_again_add_the_new_and_make_only_finished_due_rows_pending(
    store: SqlStore,
) -> None:
    crawl_id = await store.ensure_crawl("c")
    # 700 rows: more than one IN list of the lookup (512 values at most).
    done = [new(f"http://h{n % 10}.test/done/{n}") for n in range(600)]
    later = [new(f"http://h{n % 10}.test/later/{n}") for n in range(100)]
    failed = [new(f"http://f.test/{n}") for n in range(4)]
    blocked = new("http://f.test/private")
    await store.add_urls(crawl_id, [*done, *later, *failed, blocked], 100.0)
    again = {row.url: 200.0 for row in [*done, *failed[:2], blocked]} | {
        row.url: 900.0 for row in [*later, *failed[2:]]
    }
    status = {row.url: UrlStatus.FAILED for row in failed} | {blocked.url: UrlStatus.BLOCKED}
    await finish_all(store, crawl_id, 100.0, again, status)
    waiting = new("http://a.test/waiting")
    await store.add_urls(crawl_id, [waiting], 150.0)

    fresh = [new(f"http://a.test/new/{n}") for n in range(30)]
    met = [*done, *later, *failed, blocked, waiting, *fresh, fresh[0]]
    await store.add_urls(crawl_id, met, 300.0)

    states = {
        row["url"]: (row["status"], row["next_crawl_at"]) for row in store.iter_urls(crawl_id)
    }
    assert states == (
        {row.url: ("pending", 300.0) for row in [*done, *failed[:2], *fresh]}
        | {row.url: ("completed", 900.0) for row in later}
        | {row.url: ("failed", 900.0) for row in failed[2:]}  # a dead letter within its TTL
        | {blocked.url: ("blocked", 200.0)}
        | {waiting.url: ("pending", 150.0)}
    )


async def test_a_newer_lastmod_renews_a_fetched_page_and_not_a_dead_letter(
    store: SqlStore,
) -> None:
    """A sitemap's lastmod says a page changed: a fetched one is asked for again at once, a
    failed one waits for its TTL like any dead letter (a 404 listed in a sitemap read at every
    run is not asked for at every run)."""
    crawl_id = await store.ensure_crawl("c")
    page, dead, expired = new("http://a.test/p"), new("http://a.test/d"), new("http://a.test/e")
    await store.add_urls(crawl_id, [page, dead, expired], 100.0)
    again = {page.url: 900.0, dead.url: 900.0, expired.url: 200.0}
    status = {dead.url: UrlStatus.FAILED, expired.url: UrlStatus.FAILED}
    await finish_all(store, crawl_id, 100.0, again, status)

    listed = [replace(row, lastmod=250.0) for row in (page, dead, expired)]
    await store.add_urls(crawl_id, listed, 300.0)

    states = {row["url"]: row["status"] for row in store.iter_urls(crawl_id)}
    assert states == {page.url: "pending", dead.url: "failed", expired.url: "pending"}


async def test_links_met_again_are_looked_up_by_key_not_by_status(tmp_path: Path) -> None:
    """Without statistics, SQLite chose ix_urls_status for a lookup that also filtered on the
    status, and read every completed row of the crawl for each batch of links."""
    async with SqlStore(f"sqlite:///{tmp_path / 'plan.db'}") as store:
        await store.upgrade()
        crawl_id = await store.ensure_crawl("c")
        rows = [new(f"http://a.test/{n}") for n in range(20)]
        await store.add_urls(crawl_id, rows, 100.0)
        await finish_all(store, crawl_id, 100.0, {row.url: 200.0 for row in rows}, {})
        statements: list[tuple[str, Any]] = []

        def keep(conn: Any, cursor: Any, sql: str, params: Any, *_: Any) -> None:
            if sql.lstrip().startswith(("SELECT", "UPDATE")):
                statements.append((sql, params))

        event.listen(store.engine, "before_cursor_execute", keep)
        await store.add_urls(crawl_id, [*rows, new("http://a.test/new")], 300.0)
        event.remove(store.engine, "before_cursor_execute", keep)

        assert statements
        with store.engine.connect() as conn:
            for sql, params in statements:
                plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params).all()
                details = " / ".join(row[-1] for row in plan)
                assert "ix_urls_status" not in details
                assert "ix_urls_lease" not in details
                assert "sqlite_autoindex_urls_1" in details or "PRIMARY KEY" in details


def test_in_lists_come_in_a_few_lengths() -> None:
    assert doctest.testmod(frontier_store).failed == 0
    lengths = {len(chunk) for n in range(1, 2000) for chunk in frontier_store.in_chunks([0] * n)}
    assert lengths == {16, 32, 64, 128, 256, 512}
