"""The store's doors by purpose (``store.doors``): each holds exactly its protocol's methods,
async ones on one side and blocking ones on the other, and together they reach every query."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from harvestman.records import NewUrl
from harvestman.store import SqlStore
from harvestman.store.doors import ASYNC_DOORS, BLOCKING_DOORS, Door, protocol_methods
from harvestman.urls import host_key, url_hash

ALL_DOORS = {**ASYNC_DOORS, **BLOCKING_DOORS}
# What the owner of a store calls on the store itself, not through a door: its lifecycle, its
# schema, the thread a blocking door is called in, the jobs domain on its pool.
OWNER_METHODS = {
    "dispose",
    "upgrade",
    "check_schema",
    "prepare_schema",
    "in_thread",
    "is_embedded",
    "jobs",
    "start_pages",
}


def held(door: object) -> list[str]:
    return sorted(name for name in vars(door) if not name.startswith("_"))


@pytest.fixture
def store(tmp_path: Path) -> SqlStore:
    return SqlStore(f"sqlite:///{tmp_path / 'doors.db'}")


@pytest.mark.parametrize("name", sorted(ALL_DOORS))
def test_a_door_holds_exactly_its_protocols_methods(store: SqlStore, name: str) -> None:
    door = getattr(store, name)
    assert isinstance(door, Door)
    assert held(door) == protocol_methods(ALL_DOORS[name])
    assert getattr(store, name) is door  # opened once
    for method in held(door):  # the store's own bound methods: no wrapper on the hot path
        assert getattr(door, method).__self__ is store


@pytest.mark.parametrize("name", sorted(ASYNC_DOORS))
def test_an_async_door_holds_coroutines_only(store: SqlStore, name: str) -> None:
    door = getattr(store, name)
    for method in held(door):
        assert inspect.iscoroutinefunction(getattr(door, method)), f"{name}.{method}"


@pytest.mark.parametrize("name", sorted(BLOCKING_DOORS))
def test_a_blocking_door_holds_no_coroutine(store: SqlStore, name: str) -> None:
    door = getattr(store, name)
    assert ALL_DOORS[name].__name__.startswith("Blocking")
    for method in held(door):
        assert not inspect.iscoroutinefunction(getattr(door, method)), f"{name}.{method}"


def test_each_query_is_behind_exactly_one_door() -> None:
    doors_of: dict[str, list[str]] = {}
    for name, protocol in ALL_DOORS.items():
        for method in protocol_methods(protocol):
            doors_of.setdefault(method, []).append(name)
    assert {m: d for m, d in doors_of.items() if len(d) > 1} == {}
    public = {
        name
        for cls in SqlStore.__mro__
        if cls.__module__.startswith("harvestman.store") and cls is not SqlStore
        for name in vars(cls)
        if not name.startswith("_")
    }
    assert public - OWNER_METHODS == set(doors_of)


def test_a_door_refuses_what_is_not_its_purpose(store: SqlStore) -> None:
    with pytest.raises(AttributeError):
        store.reports.lease  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        store.frontier.report  # type: ignore[attr-defined]  # noqa: B018


async def test_doors_read_and_write_the_same_store(store: SqlStore) -> None:
    url = "https://example.com/a"
    async with store:
        await store.upgrade()
        crawl_id = await store.crawls.ensure_crawl("doors", [url])
        await store.frontier.add_urls(
            crawl_id, [NewUrl(url, url_hash(url), host_key(url), depth=0, priority=1)], 10.0
        )
        assert await store.crawls.find_crawl("doors") == crawl_id
        assert await store.in_thread(store.reports.crawl_ids) == {"doors": crawl_id}
        assert await store.in_thread(store.rows.url_hashes, crawl_id) == [url_hash(url)]
        assert (await store.crawls.counts(crawl_id)).by_status == {"pending": 1}
