"""Circuit breakers and the stall watchdog, against real servers on 127.0.0.1 and real SQLite."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from harvestman.resilience import (
    STALL_EXIT_CODE,
    BreakerRecord,
    BreakerState,
    CircuitBreakers,
    MemoryBreakerStore,
    NetworkState,
    StallWatchdog,
    StoreUnavailable,
    WatchdogState,
    is_breaker_failure,
    network_check,
)

CLOSED, OPEN, HALF_OPEN = BreakerState.CLOSED, BreakerState.OPEN, BreakerState.HALF_OPEN


class Clock:
    """A hand-driven clock."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class JsonBreakerStore:
    """A BreakerStore that keeps only serialized copies, as a Redis-backed one would."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, object]] = {}

    def get(self, host: str) -> BreakerRecord | None:
        row = self.rows.get(host)
        return None if row is None else BreakerRecord.from_dict(dict(row))

    def set(self, host: str, record: BreakerRecord) -> None:
        self.rows[host] = record.to_dict()

    def delete(self, host: str) -> None:
        self.rows.pop(host, None)

    def items(self) -> Iterable[tuple[str, BreakerRecord]]:
        return [(host, BreakerRecord.from_dict(dict(row))) for host, row in self.rows.items()]


class FlakyHost:
    """A real server whose pages answer ``status`` (settable) and that counts its hits."""

    def __init__(self) -> None:
        self.status = 200
        self.hits = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.hits += 1
        return web.Response(status=self.status, text="page")

    async def __aenter__(self) -> FlakyHost:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def fetch_through(
    breakers: CircuitBreakers, session: aiohttp.ClientSession, url: str
) -> int | None:
    """What the engine does around a fetch: ask, fetch, classify, record. None: not allowed."""
    host = url.split("/")[2]
    if not breakers.allow(host):
        return None
    try:
        async with session.get(url) as response:
            status, error_class = response.status, None
    except aiohttp.ClientConnectionError:
        status, error_class = None, "NetworkError"
    breakers.record(host, success=not is_breaker_failure(status, error_class))
    return status if status is not None else -1


# -- circuit breakers ---------------------------------------------------------------------------


@pytest.mark.parametrize("store_class", [MemoryBreakerStore, JsonBreakerStore])
async def test_a_failing_host_opens_its_breaker_and_closes_after_recovery(
    store_class: type,
) -> None:
    clock = Clock()
    transitions: list[tuple[str, str, str]] = []
    breakers = CircuitBreakers(
        clock=clock,
        store=store_class(),
        on_transition=lambda host, old, new: transitions.append((host, old, new)),
    )
    async with FlakyHost() as site, aiohttp.ClientSession() as session:
        host = site.url.split("/")[2]
        site.status = 503
        results = [await fetch_through(breakers, session, site.url) for _ in range(8)]
        assert results == [503] * 5 + [None] * 3  # the host saw only the first 5
        assert site.hits == 5
        assert breakers.state(host) is OPEN
        assert breakers.retry_at(host) == 1060.0

        clock.now = 1059.9
        assert await fetch_through(breakers, session, site.url) is None
        clock.now = 1060.0
        site.status = 200
        assert breakers.state(host) is HALF_OPEN
        assert breakers.allow(host) is True  # the probe
        assert breakers.allow(host) is False  # one probe at a time
        assert breakers.retry_at(host) == 1120.0
        assert breakers.record(host, success=True) is HALF_OPEN
        assert await fetch_through(breakers, session, site.url) == 200
        assert breakers.state(host) is CLOSED
        assert [await fetch_through(breakers, session, site.url) for _ in range(3)] == [200] * 3
    assert site.hits == 9
    assert transitions == [
        (host, CLOSED, OPEN),
        (host, OPEN, HALF_OPEN),
        (host, HALF_OPEN, CLOSED),
    ]
    assert breakers.snapshot() == {}


async def test_refused_connections_open_the_breaker() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    breakers = CircuitBreakers(failure_threshold=3, clock=Clock())
    async with aiohttp.ClientSession() as session:
        results = [await fetch_through(breakers, session, url) for _ in range(4)]
    assert results == [-1, -1, -1, None]
    assert breakers.state(url.split("/")[2]) is OPEN


def test_a_failure_while_half_open_reopens_for_another_period() -> None:
    clock = Clock()
    breakers = CircuitBreakers(failure_threshold=2, open_seconds=60, clock=clock)
    for _ in range(2):
        breakers.record("a.org", success=False)
    clock.now = 1060.0
    assert breakers.allow("a.org") is True
    assert breakers.record("a.org", success=True) is HALF_OPEN
    assert breakers.allow("a.org") is True
    assert breakers.record("a.org", success=False) is OPEN
    assert breakers.retry_at("a.org") == 1120.0
    assert breakers.snapshot() == {
        "a.org": {
            "state": "open",
            "failures": 3,
            "successes": 0,
            "opened_at": 1060.0,
            "retry_at": 1120.0,
        }
    }


def test_only_consecutive_failures_count() -> None:
    breakers = CircuitBreakers(clock=Clock())
    for success in [False] * 4 + [True] + [False] * 4:
        assert breakers.record("a.org", success=success) is CLOSED
    assert breakers.snapshot()["a.org"]["failures"] == 4
    assert breakers.record("a.org", success=False) is OPEN


def test_results_of_requests_sent_before_opening_are_ignored() -> None:
    breakers = CircuitBreakers(failure_threshold=1, clock=Clock())
    breakers.record("a.org", success=False)
    assert breakers.record("a.org", success=True) is OPEN
    assert breakers.record("a.org", success=False) is OPEN
    assert breakers.snapshot()["a.org"]["failures"] == 1


def test_a_lost_probe_frees_its_slot_after_the_probe_timeout() -> None:
    clock = Clock()
    breakers = CircuitBreakers(failure_threshold=1, open_seconds=60, clock=clock, probe_timeout=30)
    breakers.record("a.org", success=False)
    clock.now = 1060.0
    assert breakers.allow("a.org") is True  # this probe is never recorded
    clock.now = 1089.0
    assert breakers.allow("a.org") is False
    assert breakers.retry_at("a.org") == 1090.0
    clock.now = 1090.0
    assert breakers.allow("a.org") is True


def test_reset_closes_a_breaker_and_hosts_are_independent() -> None:
    breakers = CircuitBreakers(failure_threshold=1, clock=Clock())
    breakers.record("a.org", success=False)
    breakers.record("b.org", success=False)
    breakers.reset("a.org")
    assert (breakers.allow("a.org"), breakers.allow("b.org"), breakers.allow("c.org")) == (
        True,
        False,
        True,
    )
    assert list(breakers.snapshot()) == ["b.org"]


@pytest.mark.parametrize(
    ("status", "error_class", "expected"),
    [
        (500, None, True),
        (503, "HttpStatusError", True),
        (403, "HttpStatusError", True),
        (429, "HttpStatusError", True),
        (404, "HttpStatusError", False),
        (401, None, False),
        (200, None, False),
        (304, None, False),
        (None, "NetworkError", True),
        (None, "FetchTimeout", True),
        (None, "TooManyRedirects", False),
        (None, "BodyTooLarge", False),
        (None, "RobotsDenied", False),
        (None, None, False),
    ],
)
def test_what_counts_as_a_breaker_failure(
    status: int | None, error_class: str | None, expected: bool
) -> None:
    assert is_breaker_failure(status, error_class) is expected


# -- network check ------------------------------------------------------------------------------


class Server:
    """A real server on 127.0.0.1 that can be stopped and started again on the same port."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.port = 0
        self.runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        await asyncio.sleep(self.delay)
        return web.Response(status=404)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/generate_204"


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    running = Server()
    await running.start()
    yield running
    await running.stop()


async def test_network_check_up_down_and_unknown(server: Server) -> None:
    assert await network_check(server.url, 2.0) is NetworkState.UP  # any response will do
    await server.stop()
    assert await network_check(server.url, 2.0) is NetworkState.DOWN
    assert await network_check(None, 2.0) is NetworkState.UNKNOWN
    assert await network_check("", 2.0) is NetworkState.UNKNOWN


async def test_network_check_that_gets_no_answer_in_time_is_down() -> None:
    silent = Server(delay=5.0)
    await silent.start()
    try:
        async with asyncio.timeout(2):
            assert await network_check(silent.url, 0.2) is NetworkState.DOWN
    finally:
        await silent.stop()


# -- stall watchdog -----------------------------------------------------------------------------


class Crawl:
    """What the watchdog watches: pending work, pause/resume calls, store checks."""

    def __init__(self) -> None:
        self.pending = True
        self.events: list[str] = []
        self.paused = asyncio.Event()
        self.resumed = asyncio.Event()
        self.store_checks = 0

    def pause(self) -> None:
        self.events.append("pause")
        self.paused.set()

    def resume(self) -> None:
        self.events.append("resume")
        self.resumed.set()

    async def store_ok(self) -> None:
        self.store_checks += 1


def watchdog(crawl: Crawl, clock: Clock, **overrides: object) -> StallWatchdog:
    options: dict[str, object] = {
        "has_pending_work": lambda: crawl.pending,
        "check_store": crawl.store_ok,
        "check_network": functools.partial(network_check, None, 1.0),
        "pause": crawl.pause,
        "resume": crawl.resume,
        "stall_seconds": 300.0,
        "check_interval": 0.005,
        "network_retry": 0.02,
        "check_timeout": 0.5,
        "clock": clock,
    }
    options.update(overrides)
    return StallWatchdog(**options)  # type: ignore[arg-type]


async def eventually(condition: Callable[[], bool]) -> None:
    """Wait (at most 5 s) until ``condition()`` holds: the watchdog runs on its own schedule."""
    async with asyncio.timeout(5):
        for _ in iter(condition, True):
            await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def running(dog: StallWatchdog) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(dog.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, StoreUnavailable):
            await task


async def test_no_stall_while_active_or_without_pending_work() -> None:
    clock, crawl = Clock(), Crawl()
    dog = watchdog(crawl, clock)
    async with running(dog):
        for _ in range(5):
            clock.now += 299.0
            dog.touch()
            await asyncio.sleep(0.02)
        crawl.pending = False
        clock.now += 1000.0
        await asyncio.sleep(0.05)
    assert crawl.store_checks == 0
    assert dog.status.state is WatchdogState.OK
    assert dog.status.stalls == 0
    assert dog.status.last_activity == 2495.0


async def test_an_unexplained_stall_is_diagnosed_once_per_stall_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, crawl = Clock(), Crawl()
    dog = watchdog(crawl, clock)
    async with running(dog):
        clock.now += 300.0
        await eventually(lambda: dog.status.checked_at is not None)
        assert crawl.store_checks == 1
        status = dog.status
        assert (status.state, status.store, status.network) == (
            WatchdogState.STALLED,
            "ok",
            NetworkState.UNKNOWN,
        )
        assert status.detail == "no cause found (store ok, network unknown)"
        assert (status.stalled_since, status.checked_at, status.stalls) == (1000.0, 1300.0, 1)
        clock.now += 299.0
        await asyncio.sleep(0.05)
        assert crawl.store_checks == 1
        clock.now += 1.0
        await eventually(lambda: dog.status.stalls == 2)
        assert crawl.store_checks == 2
        clock.now += 1.0
        dog.touch()  # the crawl moves again
        assert dog.status.state is WatchdogState.OK
        assert dog.status.stalls == 2
    assert "stall detected: no activity for 300 s while work is pending" in caplog.text
    assert crawl.events == []


async def test_a_removed_sqlite_store_ends_the_run_with_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY)")
        db.commit()
    uri = f"file:{path}?mode=rw"  # never creates an empty database in place of a lost one

    async def check_store() -> None:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            db.execute("SELECT count(*) FROM urls").fetchone()

    reconnects: list[str] = []

    async def reconnect() -> None:
        reconnects.append("reconnect")

    clock, crawl = Clock(), Crawl()
    dog = watchdog(crawl, clock, check_store=check_store, reconnect_store=reconnect)
    await dog.diagnose()  # a healthy store
    assert dog.status.store == "ok"

    path.unlink()
    clock.now += 300.0
    async with asyncio.timeout(5), running(dog) as task:
        with pytest.raises(StoreUnavailable, match="unable to open database file"):
            await task
    assert reconnects == ["reconnect"]
    status = dog.status
    assert (status.state, status.store, status.stalls) == (
        WatchdogState.STORE_UNAVAILABLE,
        "unavailable",
        2,
    )
    assert status.detail == "store unavailable: OperationalError: unable to open database file"
    assert STALL_EXIT_CODE == 75


async def test_a_lost_store_connection_is_reconnected(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    connection = [sqlite3.connect(path)]

    async def check_store() -> None:
        connection[0].execute("SELECT 1").fetchone()

    async def reconnect() -> None:
        connection[0] = sqlite3.connect(path)

    connection[0].close()  # the connection is gone, the database is fine
    clock, crawl = Clock(), Crawl()
    dog = watchdog(crawl, clock, check_store=check_store, reconnect_store=reconnect)
    clock.now += 300.0
    status = await dog.diagnose()
    connection[0].close()
    assert (status.state, status.store, status.detail) == (
        WatchdogState.STALLED,
        "reconnected",
        "store reconnected",
    )


async def test_a_hanging_store_check_counts_as_a_failure() -> None:
    async def hang() -> None:
        await asyncio.sleep(3600)

    clock, crawl = Clock(), Crawl()
    dog = watchdog(crawl, clock, check_store=hang, reconnect_store=hang, check_timeout=0.05)
    with pytest.raises(StoreUnavailable, match="no answer within the check timeout"):
        await dog.diagnose()


async def test_without_reconnect_a_failing_store_is_unavailable_at_once() -> None:
    async def broken() -> None:
        raise OSError("disk I/O error")

    dog = watchdog(Crawl(), Clock(), check_store=broken)
    with pytest.raises(StoreUnavailable, match="OSError: disk I/O error"):
        await dog.diagnose()


async def test_a_network_outage_pauses_the_crawl_until_the_check_url_answers(
    server: Server,
) -> None:
    clock, crawl = Clock(), Crawl()
    check = functools.partial(network_check, server.url, 0.5)
    dog = watchdog(crawl, clock, check_network=check)
    await server.stop()
    async with asyncio.timeout(5), running(dog):
        clock.now += 300.0
        await crawl.paused.wait()
        assert dog.status.state is WatchdogState.WAITING_FOR_NETWORK
        assert dog.status.network is NetworkState.DOWN
        await asyncio.sleep(0.1)  # several re-checks, all down
        assert crawl.events == ["pause"]
        await server.start()  # same port
        await crawl.resumed.wait()
        await eventually(lambda: dog.status.state is WatchdogState.STALLED)
    assert crawl.events == ["pause", "resume"]
    status = dog.status
    assert (status.state, status.store, status.network, status.detail) == (
        WatchdogState.STALLED,
        "ok",
        NetworkState.UP,
        "network was down; resumed",
    )
    assert status.as_dict() == {
        "state": "stalled",
        "last_activity": 1000.0,
        "stalls": 1,
        "stalled_since": 1000.0,
        "checked_at": 1300.0,
        "store": "ok",
        "network": "up",
        "detail": "network was down; resumed",
    }


async def test_a_broken_network_check_does_not_pause_the_crawl() -> None:
    async def broken() -> NetworkState:
        raise RuntimeError("bug")

    crawl = Crawl()
    status = await watchdog(crawl, Clock(), check_network=broken).diagnose()
    assert status.network is NetworkState.UNKNOWN
    assert crawl.events == []


def test_a_breaker_record_with_fields_of_a_newer_version_is_read() -> None:
    record = BreakerRecord.from_dict(
        {"state": "open", "failures": 3, "opened_at": 10.0, "a_field_of_a_newer_version": 1}
    )

    assert (record.state, record.failures, record.opened_at) == (BreakerState.OPEN, 3, 10.0)
