"""The frontier's two whole-host/whole-crawl writes on SQLite and PostgreSQL: expired completed
rows made due again (``make_expired_due``) and a dead host's pending rows given up
(``give_up_host``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from conftest import SettingsFactory
from harvestman.records import NewUrl, Outcome, UrlStatus
from harvestman.store import SqlStore
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


async def complete_all(store: SqlStore, crawl_id: int, now: float, again: dict[str, float]) -> None:
    """Lease every due row and record it completed, due again at ``again[url]``."""
    hosts = await store.pending_hosts(crawl_id)
    leased, _ = await store.lease(crawl_id, dict.fromkeys(hosts, 100), now, now + 60, "w")
    done = [Outcome(r, UrlStatus.COMPLETED, again[r.url], 0, status_code=200) for r in leased]
    await store.record(crawl_id, done, [], now)


async def test_expired_completed_rows_within_depth_become_pending(store: SqlStore) -> None:
    crawl_id = await store.ensure_crawl("c")
    rows = [
        new("http://a.test/", 0),
        new("http://a.test/deep", 4),
        new("http://a.test/sitemap.xml", 5, kind="sitemap"),
        new("http://b.test/later", 1),
    ]
    await store.add_urls(crawl_id, rows, 100.0)
    again = {row.url: 200.0 for row in rows} | {"http://b.test/later": 900.0}
    await complete_all(store, crawl_id, 100.0, again)

    assert await store.make_expired_due(crawl_id, 199.0, max_depth=3) == 0
    assert await store.make_expired_due(crawl_id, 200.0, max_depth=3) == 2

    states = {
        row["url"]: (row["status"], row["next_crawl_at"]) for row in store.iter_urls(crawl_id)
    }
    assert states == {
        "http://a.test/": ("pending", 200.0),
        "http://a.test/deep": ("completed", 200.0),  # past the max depth
        "http://a.test/sitemap.xml": ("pending", 200.0),  # listings keep their own depth
        "http://b.test/later": ("completed", 900.0),  # not expired
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
