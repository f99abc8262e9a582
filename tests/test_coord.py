"""Each coordination concern's contract, run against every implementation with one set of
assertions: in memory (local), Redis on 127.0.0.1:6379, and the store where it applies.

Time: the local and store implementations run on an injected clock that ``advance`` moves;
Redis keeps its own (key expiry), so ``advance`` sleeps there, past the TTLs asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from conftest import POSTGRES_URL, REDIS_URL, pg_schema, require_service
from harvestman.coord import (
    BreakerBoard,
    Coordinator,
    CrawlCounters,
    HostGate,
    LocalCoordinator,
    RobotsShare,
    SeenFilter,
    WorkerBoard,
    WorkerStatus,
)
from harvestman.coord.local import (
    LocalBreakerBoard,
    LocalCrawlCounters,
    LocalHostGate,
    LocalRobotsShare,
    LocalSeenFilter,
    LocalWorkerBoard,
)
from harvestman.coord.redis import RedisCoordinator
from harvestman.coord.store import StoreCoordinator
from harvestman.records import DomainRecord
from harvestman.store import SqlStore

T = TypeVar("T")
HOST = "a.test"
HASH_A, HASH_B = "a" * 64, "b" * 64
# The expiring times asked for: long enough that no stall between two calls outlives them (Redis
# expires keys on its own clock), short enough to wait out; ``LATER`` is past them.
TTL = 1.0
LATER = 1.2


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Case(Generic[T]):
    """One implementation of a concern, and how to let ``seconds`` pass for it."""

    impl: T
    advance: Callable[[float], Awaitable[None]]


def _ticking(clock: FakeClock) -> Callable[[float], Awaitable[None]]:
    async def advance(seconds: float) -> None:
        clock.now += seconds

    return advance


async def _sleeping(seconds: float) -> None:
    await asyncio.sleep(seconds)


@contextlib.asynccontextmanager
async def implementation(
    kind: str, make_local: Callable[[FakeClock], T], tmp_path: Path
) -> AsyncIterator[Case[Any]]:
    """``kind``'s implementation: ``make_local``'s on a fake clock, the store's (a fresh SQLite
    file, or a fresh PostgreSQL schema) on one too, or Redis's under a key prefix of its own,
    deleted afterwards."""
    clock = FakeClock()
    if kind == "postgres":
        require_service("PostgreSQL", "127.0.0.1", 5432)
        with pg_schema(POSTGRES_URL) as url:
            async with SqlStore(url) as store:
                await store.upgrade()
                yield Case(StoreCoordinator(store.hosts, clock), _ticking(clock))
        return
    if kind not in ("redis", "store"):
        yield Case(make_local(clock), _ticking(clock))
        return
    if kind == "redis":
        require_service("Redis", "127.0.0.1", 6379)
    async with SqlStore(f"sqlite:///{tmp_path / 'coord.db'}") as store:
        await store.upgrade()
        if kind == "store":
            yield Case(StoreCoordinator(store.hosts, clock), _ticking(clock))
            return
        prefix = f"test-coord-{uuid.uuid4().hex[:8]}"
        coordinator = RedisCoordinator(REDIS_URL, store.hosts, prefix=prefix, worker_id="w")
        try:
            yield Case(coordinator, _sleeping)
        finally:
            keys = [key async for key in coordinator.redis.scan_iter(f"{prefix}:*")]
            if keys:
                await coordinator.redis.delete(*keys)
            await coordinator.close()


def _maker(kind: str, local: Callable[[FakeClock], object]) -> Callable[[FakeClock], object]:
    """The concern's own local class, or the whole ``LocalCoordinator`` holding it."""
    return LocalCoordinator if kind == "coordinator" else local


@pytest.fixture(params=["local", "coordinator", "redis", "store", "postgres"])
async def gate(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Case[HostGate]]:
    async with implementation(request.param, _maker(request.param, LocalHostGate), tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "redis"])
async def multi_slot_gate(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Case[HostGate]]:
    """The gates that honour ``concurrency`` (the store's allows one request at a time)."""
    async with implementation(request.param, LocalHostGate, tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "coordinator", "redis"])
async def seen(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Case[SeenFilter]]:
    maker = _maker(request.param, lambda _: LocalSeenFilter())
    async with implementation(request.param, maker, tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "coordinator", "redis"])
async def robots(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Case[RobotsShare]]:
    maker = _maker(request.param, LocalRobotsShare)
    async with implementation(request.param, maker, tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "coordinator", "redis"])
async def board(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Case[WorkerBoard]]:
    maker = _maker(request.param, LocalWorkerBoard)
    async with implementation(request.param, maker, tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "coordinator", "redis"])
async def breakers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Case[BreakerBoard]]:
    maker = _maker(request.param, lambda _: LocalBreakerBoard())
    async with implementation(request.param, maker, tmp_path) as c:
        yield c


@pytest.fixture(params=["local", "coordinator", "redis"])
async def counters(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Case[CrawlCounters]]:
    maker = _maker(request.param, lambda _: LocalCrawlCounters())
    async with implementation(request.param, maker, tmp_path) as c:
        yield c


# --- the shared host gate ------------------------------------------------------------------------


async def test_a_host_taken_is_busy_until_released(gate: Case[HostGate]) -> None:
    token, wait = await gate.impl.acquire_host(HOST, 1, 10.0)
    busy, busy_wait = await gate.impl.acquire_host(HOST, 1, 10.0)
    other, other_wait = await gate.impl.acquire_host("b.test", 1, 10.0)

    assert token is not None
    assert wait == 0.0
    assert busy is None
    assert 0 < busy_wait <= 10.0
    assert other is not None  # hosts are gated apart
    assert other_wait == 0.0

    await gate.impl.release_host(HOST, token, 0.0)
    again, again_wait = await gate.impl.acquire_host(HOST, 1, 10.0)
    assert again is not None
    assert again_wait == 0.0


async def test_a_release_closes_the_host_for_its_delay(gate: Case[HostGate]) -> None:
    token, _ = await gate.impl.acquire_host(HOST, 1, 10.0)
    assert token is not None
    await gate.impl.release_host(HOST, token, TTL)

    closed, wait = await gate.impl.acquire_host(HOST, 1, 10.0)
    assert closed is None
    assert 0 < wait <= TTL

    await gate.advance(LATER)
    opened, wait = await gate.impl.acquire_host(HOST, 1, 10.0)
    assert opened is not None
    assert wait == 0.0


async def test_a_slot_never_released_frees_itself_after_its_hold(gate: Case[HostGate]) -> None:
    lost, _ = await gate.impl.acquire_host(HOST, 1, TTL)  # its holder crashed
    assert lost is not None
    assert (await gate.impl.acquire_host(HOST, 1, TTL))[0] is None

    await gate.advance(LATER)
    token, wait = await gate.impl.acquire_host(HOST, 1, TTL)
    assert token is not None
    assert wait == 0.0


async def test_concurrency_slots_are_taken_and_given_back_one_by_one(
    multi_slot_gate: Case[HostGate],
) -> None:
    gate = multi_slot_gate.impl
    first, _ = await gate.acquire_host(HOST, 2, 10.0)
    second, _ = await gate.acquire_host(HOST, 2, 10.0)
    third, wait = await gate.acquire_host(HOST, 2, 10.0)

    assert first is not None
    assert second is not None
    assert first != second
    assert third is None
    assert 0 < wait <= 10.0

    await gate.release_host(HOST, first, 0.0)
    assert (await gate.acquire_host(HOST, 2, 10.0))[0] is not None
    assert (await gate.acquire_host(HOST, 2, 10.0))[0] is None


# --- the seen filter -----------------------------------------------------------------------------


async def test_hashes_are_unseen_until_marked_in_their_namespace(seen: Case[SeenFilter]) -> None:
    assert await seen.impl.unseen("crawl-1", [HASH_A, HASH_B]) == [True, True]

    await seen.impl.mark_seen("crawl-1", [HASH_A])

    assert await seen.impl.unseen("crawl-1", [HASH_A, HASH_B]) == [False, True]
    assert await seen.impl.unseen("crawl-2", [HASH_A]) == [True]
    assert await seen.impl.unseen("crawl-1", []) == []


# --- robots sharing ------------------------------------------------------------------------------


async def test_a_robots_record_is_shared_until_its_ttl(robots: Case[RobotsShare]) -> None:
    record = DomainRecord(
        HOST, robots_txt="User-agent: *\nDisallow: /x\n", robots_status=200,
        robots_fetched_at=1_000.0, crawl_delay=2.0, allowed=True,
    )  # fmt: skip
    assert await robots.impl.get_robots(HOST) is None

    await robots.impl.put_robots(record, TTL)
    await robots.impl.put_robots(DomainRecord("b.test", robots_status=404), 0.0)  # not kept

    assert await robots.impl.get_robots(HOST) == record
    assert await robots.impl.get_robots("b.test") is None
    await robots.advance(LATER)
    assert await robots.impl.get_robots(HOST) is None


# --- the worker board ----------------------------------------------------------------------------


def status(worker_id: str, pages: int) -> WorkerStatus:
    return WorkerStatus(worker_id, "box", 7, "crawl", 100.0, 200.0 + pages, pages=pages)


async def test_workers_are_listed_by_their_last_beat_until_it_expires(
    board: Case[WorkerBoard],
) -> None:
    assert await board.impl.workers() == []

    await board.impl.beat(status("w1", 1), TTL)
    await board.impl.beat(status("w2", 5), 60.0)
    await board.impl.beat(status("w1", 3), TTL)  # the newer beat replaces the older

    listed = sorted(await board.impl.workers(), key=lambda w: w.worker_id)
    assert listed == [status("w1", 3), status("w2", 5)]
    await board.advance(LATER)
    assert await board.impl.workers() == [status("w2", 5)]


async def test_a_worker_that_left_is_listed_no_more(board: Case[WorkerBoard]) -> None:
    await board.impl.beat(status("w1", 1), 60.0)
    await board.impl.beat(status("w2", 2), 60.0)
    await board.impl.leave("w1")
    await board.impl.leave("never-beat")  # nothing to remove: no error
    assert await board.impl.workers() == [status("w2", 2)]


# --- the breaker board ---------------------------------------------------------------------------


async def test_breakers_are_published_until_closed(breakers: Case[BreakerBoard]) -> None:
    opened = {"state": "open", "opened_at": 1_000.0, "failures": 5}
    half = {"state": "half_open", "opened_at": 900.0, "failures": 5}
    assert await breakers.impl.get_breakers() == {}

    await breakers.impl.put_breakers({"a.test": opened, "b.test": half})
    await breakers.impl.put_breakers({})
    assert await breakers.impl.get_breakers() == {"a.test": opened, "b.test": half}

    await breakers.impl.put_breakers({"a.test": None, "c.test": None})
    assert await breakers.impl.get_breakers() == {"b.test": half}


# --- crawl counters ------------------------------------------------------------------------------


async def test_counters_sum_every_addition_by_namespace(counters: Case[CrawlCounters]) -> None:
    assert await counters.impl.counters("crawl-1") == {}

    await counters.impl.add_counters("crawl-1", {"pages": 2})
    await counters.impl.add_counters("crawl-1", {"pages": 3, "failures": 1})
    await counters.impl.add_counters("crawl-2", {"pages": 9})
    await counters.impl.add_counters("crawl-1", {})

    assert await counters.impl.counters("crawl-1") == {"pages": 5, "failures": 1}
    assert await counters.impl.counters("crawl-2") == {"pages": 9}


# --- the union -----------------------------------------------------------------------------------


def test_the_local_coordinator_is_not_shared_and_the_others_are() -> None:
    coordinators: list[type[Coordinator]] = [LocalCoordinator, RedisCoordinator, StoreCoordinator]
    assert [c.shared for c in coordinators] == [False, True, True]
