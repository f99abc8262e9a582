"""The job runner's start pages on the crawl tables, on real SQLite and PostgreSQL: made due
again before a run, their content hashes read after it."""

from __future__ import annotations

import pytest

from harvestman.records import NewUrl, Outcome, UrlStatus
from harvestman.store import SqlStore
from harvestman.store.jobs.start_pages import StartPages
from harvestman.urls import host_key, url_hash

NOW = 1_000_000.0


def new(url: str) -> NewUrl:
    return NewUrl(url, url_hash(url), host_key(url), 0, 2)


@pytest.fixture
def store(store_on_each_database: SqlStore) -> SqlStore:
    return store_on_each_database


async def _rows(store: SqlStore, crawl_id: int) -> dict[str, tuple[str, float, int]]:
    """url -> (status, next_crawl_at, attempts)."""
    return {
        row["url"]: (row["status"], row["next_crawl_at"], row["attempts"])
        for row in store.iter_urls(crawl_id)
    }


async def test_finished_start_pages_are_due_again_and_the_rest_left_alone(
    store: SqlStore,
) -> None:
    crawl = await store.ensure_crawl("source-1")
    other = await store.ensure_crawl("source-2")
    names = ["done", "failed", "blocked", "leased", "pending"]
    urls = {name: f"http://a.test/{name}" for name in names}
    await store.add_urls(crawl, [new(urls[name]) for name in names[:4]], NOW)
    await store.add_urls(crawl, [new(urls["pending"])], NOW + 100)  # not due at the lease
    await store.add_urls(other, [new(urls["done"])], NOW)
    leased, _ = await store.lease(crawl, {"a.test": 5}, NOW, NOW + 300, "w1")
    by_url = {request.url: request for request in leased}
    assert set(by_url) == {urls[name] for name in names[:4]}
    [elsewhere], _ = await store.lease(other, {"a.test": 1}, NOW, NOW + 300, "w1")
    finished = [
        Outcome(by_url[urls["done"]], UrlStatus.COMPLETED, NOW + 3600, 1, content_hash="h1"),
        Outcome(by_url[urls["failed"]], UrlStatus.FAILED, NOW + 3600, 3),
        Outcome(by_url[urls["blocked"]], UrlStatus.BLOCKED, NOW + 3600, 1),
    ]
    await store.record(crawl, finished, [], NOW)
    await store.record(other, [Outcome(elsewhere, UrlStatus.COMPLETED, NOW + 3600, 1)], [], NOW)
    pages = StartPages(store.engine)

    made_due = await pages.make_due(crawl, [url_hash(url) for url in urls.values()], NOW + 10)

    assert made_due == 3
    assert await _rows(store, crawl) == {
        urls["done"]: ("pending", NOW + 10, 0),
        urls["failed"]: ("pending", NOW + 10, 0),
        urls["blocked"]: ("pending", NOW + 10, 0),
        urls["leased"]: ("in_progress", NOW, 0),
        urls["pending"]: ("pending", NOW + 100, 0),
    }
    assert await _rows(store, other) == {urls["done"]: ("completed", NOW + 3600, 1)}
    assert await pages.make_due(crawl, [], NOW + 20) == 0


async def test_content_hashes_are_those_stored_for_the_asked_rows(store: SqlStore) -> None:
    crawl = await store.ensure_crawl("source-1")
    await store.add_urls(crawl, [new("http://a.test/"), new("http://a.test/b")], NOW)
    leased, _ = await store.lease(crawl, {"a.test": 2}, NOW, NOW + 300, "w1")
    await store.record(
        crawl,
        [
            Outcome(r, UrlStatus.COMPLETED, NOW + 3600, 1, content_hash=f"hash-of-{r.url}")
            for r in leased
        ],
        [],
        NOW,
    )
    pages = StartPages(store.engine)
    home, unknown = url_hash("http://a.test/"), url_hash("http://a.test/never")

    assert await pages.content_hashes(crawl, [home, unknown]) == {home: "hash-of-http://a.test/"}
    assert await pages.content_hashes(crawl, []) == {}


async def test_the_states_of_start_pages_include_a_host_given_up_in_one_write(
    store: SqlStore,
) -> None:
    crawl = await store.ensure_crawl("source-1")
    urls = ["http://a.test/", "http://b.test/", "http://a.test/never-added"]
    await store.add_urls(crawl, [new(url) for url in urls[:2]], NOW)
    await store.give_up_host(crawl, "a.test", "HostUnavailable", "a.test gone", NOW, NOW + 60)

    states = await StartPages(store.engine).states(crawl, [url_hash(url) for url in urls])

    assert states == {
        url_hash(urls[0]): (UrlStatus.FAILED, "HostUnavailable", "a.test gone"),
        url_hash(urls[1]): (UrlStatus.PENDING, None, None),
    }
