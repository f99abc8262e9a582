"""A host that drains its leased buffer before the next lease comes back leases more at a time
(crawl/frontier.py, MAX_LEASE_GROWTH); a polite host stays within its politeness bound."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harvestman.crawl.frontier import MAX_LEASE_GROWTH, Frontier
from harvestman.records import CrawlRequest, NewUrl
from harvestman.store import SqlStore
from harvestman.urls import url_hash

NOW = 1_700_000_000.0
HOST = "fast.example"


class CountedLeases:
    """The store's frontier, with the size of each lease asked of it. While ``holding``, a
    lease waits for ``go`` before it reaches the store (``held`` says one is waiting): the
    test decides what happens while a lease is on the way, whatever the machine's speed."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.asked: list[int] = []
        self.holding = False
        self.held = asyncio.Event()
        self.go = asyncio.Event()
        self.returned = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def lease(self, crawl_id: int, wanted: dict[str, int], *args: Any) -> Any:
        self.asked.append(wanted[HOST])
        if self.holding:
            self.held.set()
            await self.go.wait()
            self.go.clear()
        try:
            return await self.store.lease(crawl_id, wanted, *args)
        finally:
            self.returned.set()


async def seeded(store: SqlStore, count: int) -> int:
    await store.upgrade()
    crawl_id = await store.ensure_crawl("leases")
    rows = [
        NewUrl(f"http://{HOST}/{n}", url_hash(f"http://{HOST}/{n}"), HOST, 1, 2)
        for n in range(count)
    ]
    await store.add_urls(crawl_id, rows, NOW)
    return crawl_id


async def fast_host(store: SqlStore, count: int) -> tuple[Frontier, CountedLeases]:
    """A frontier over ``count`` pending rows of one host without a delay, leasing 8 at a time,
    whose requests never wait for a free slot; started."""
    crawl_id = await seeded(store, count)
    counted = CountedLeases(store.frontier)
    frontier = Frontier(
        counted, crawl_id, "w1", delay=0.0, per_host_concurrency=10_000, lease_batch=8,
        clock=lambda: NOW,
    )  # fmt: skip
    await frontier.start()
    return frontier, counted


async def drain_while_leasing(frontier: Frontier, counted: CountedLeases) -> list[CrawlRequest]:
    """Take the first request, hold the lease that asks for more, take the whole buffer, then
    let that lease go (no request is released: the host's slots stay free)."""
    async with asyncio.timeout(30):
        taken = [await frontier.next()]  # the lease on its way (if any) comes back first
        counted.holding = True
        counted.held.clear()
        await counted.held.wait()  # the next lease is asked for, and held
        while frontier.hosts[HOST].buffer:
            taken.append(await frontier.next())
    counted.holding = False
    counted.go.set()
    return [request for request in taken if request is not None]


async def test_a_host_drained_before_its_lease_returns_leases_twice_as_many(
    tmp_path: Path,
) -> None:
    async with SqlStore(f"sqlite:///{tmp_path / 'leases.db'}") as store:
        frontier, counted = await fast_host(store, 2_000)
        try:
            taken: list[CrawlRequest] = []
            for _ in range(6):
                taken += await drain_while_leasing(frontier, counted)
        finally:
            await frontier.close()
    # The first lease found an empty buffer (nothing was drained: no growth); each later one
    # came back to a drained host, up to MAX_LEASE_GROWTH times the batch.
    assert MAX_LEASE_GROWTH == 8  # the sizes below
    assert counted.asked[:7] == [8, 8, 16, 32, 64, 64, 64]
    assert len({request.url for request in taken}) == len(taken)


async def test_a_host_that_keeps_rows_buffered_keeps_its_lease_size(tmp_path: Path) -> None:
    async with SqlStore(f"sqlite:///{tmp_path / 'leases.db'}") as store:
        frontier, counted = await fast_host(store, 200)
        try:
            for _ in range(20):  # one at a time, each lease back before the buffer empties
                counted.returned.clear()
                request = await asyncio.wait_for(frontier.next(), 30)
                assert request is not None
                await asyncio.wait_for(counted.returned.wait(), 30)
        finally:
            await frontier.close()
    assert len(counted.asked) >= 20
    assert set(counted.asked) == {8}


async def test_growth_stays_within_the_politeness_bound(tmp_path: Path) -> None:
    async with SqlStore(f"sqlite:///{tmp_path / 'leases.db'}") as store:
        crawl_id = await seeded(store, 10)
        frontier = Frontier(
            store.frontier, crawl_id, "w1", delay=10.0, per_host_concurrency=1,
            lease_seconds=300.0, lease_batch=8, clock=lambda: NOW,
        )  # fmt: skip
        hq = frontier._host(HOST)
        hq.lease_growth = MAX_LEASE_GROWTH
        # 300 s leases, 10 s between requests: 15 fetchable in half a lease, not 64.
        assert frontier._lease_size(hq) == 15
        frontier.set_delay(HOST, 0.0)
        assert frontier._lease_size(hq) == 8 * MAX_LEASE_GROWTH
