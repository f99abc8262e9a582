"""Several `harvestman worker` processes on one PostgreSQL and one Redis, crawling 150 hosts.

Real servers only: PostgreSQL and Redis on 127.0.0.1 (CI starts them), worker processes, and a
farm of 150 websites on 127.0.0.1 that logs every request. The faults are real too: a worker is
SIGKILLed, PostgreSQL is restarted (alone: no other test runs meanwhile), a Redis of the test's
own is stopped and started again.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from harvestman.store import SqlStore
from hostfarm import HostFarm

CLI = [sys.executable, "-m", "harvestman.cli"]
HOSTS = 150  # more than the workers' 96 connections: hosts wait their turn
DELAY = 0.2
WORKERS = 3
CONCURRENCY = 32

pytestmark = pytest.mark.timeout(240)


def worker_env(database_url: str, redis_url: str, prefix: str) -> dict[str, str]:
    return {
        **os.environ,
        "HARVESTMAN_DATABASE_URL": database_url,
        "HARVESTMAN_REDIS_URL": redis_url,
        "HARVESTMAN_REDIS_PREFIX": prefix,
        "HARVESTMAN_CRAWL_CONCURRENCY": str(CONCURRENCY),
        "HARVESTMAN_WORKER_HEARTBEAT_INTERVAL": "0.5",
        "HARVESTMAN_WORKER_HEARTBEAT_TIMEOUT": "5",
        "HARVESTMAN_FRONTIER_SWEEP_INTERVAL": "1",
        "HARVESTMAN_FRONTIER_REFRESH_INTERVAL": "0.3",
        "HARVESTMAN_FETCH_TIMEOUT": "5",
        "HARVESTMAN_FETCH_RETRY_BACKOFF": "0.05",
        "HARVESTMAN_STORE_FLUSH_INTERVAL": "0.05",
    }


async def seed(env: dict[str, str], farm: HostFarm, tmp_path: Path) -> None:
    url = env["HARVESTMAN_DATABASE_URL"]
    async with SqlStore(url) as store:
        await store.upgrade()
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(farm.roots()))
    process = await asyncio.create_subprocess_exec(
        *CLI, "seed", "--seeds-file", str(seeds), env=env, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()


async def start_workers(env: dict[str, str], tmp_path: Path) -> list[asyncio.subprocess.Process]:
    workers = []
    for i in range(WORKERS):
        log = (tmp_path / f"worker{i}.log").open("wb")
        workers.append(
            await asyncio.create_subprocess_exec(
                *CLI, "worker", "--exit-when-done", env=env, stdout=log, stderr=log
            )
        )
    return workers


async def when_half_done(farm: HostFarm) -> None:
    total = HOSTS * (farm.pages + 3)  # robots.txt, sitemap.xml, home page and pages of a host
    for _ in range(6000):
        if len(farm.log) >= total // 2:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the crawl did not get halfway: {len(farm.log)} requests")


def leased_by_pid(database_url: str, pid: int) -> set[tuple[int, str]]:
    """Pages still leased (in progress) by the worker process ``pid``."""
    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT url FROM urls JOIN workers ON workers.id = urls.leased_by"
                " WHERE urls.status = 'in_progress' AND workers.pid = :pid"
            ),
            {"pid": pid},
        ).all()
    engine.dispose()
    return {_page_of(url) for (url,) in rows}


def _page_of(url: str) -> tuple[int, str]:
    port, _, path = url.removeprefix("http://127.0.0.1:").partition("/")
    return int(port), "/" + path


def crawled(database_url: str) -> dict[str, set[tuple[int, str]]]:
    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT url, status FROM urls WHERE kind = 'page'")).all()
    engine.dispose()
    result: dict[str, set[tuple[int, str]]] = {}
    for url, status in rows:
        result.setdefault(status, set()).add(_page_of(url))
    return result


async def crawl_with(
    fault: Callable[[list[asyncio.subprocess.Process], HostFarm], Awaitable[None]] | None,
    database_url: str,
    redis_url: str,
    tmp_path: Path,
    **settings: str,
) -> HostFarm:
    """Crawl the farm with WORKERS workers; ``settings``: HARVESTMAN_* variables to override."""
    env = worker_env(database_url, redis_url, f"test-{uuid.uuid4().hex[:8]}")
    env.update(settings)
    async with HostFarm(HOSTS, crawl_delay=DELAY) as farm:
        await seed(env, farm, tmp_path)
        workers = await start_workers(env, tmp_path)
        try:
            if fault is not None:
                await when_half_done(farm)
                await fault(workers, farm)
            codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in workers)), 180)
        finally:
            for w in workers:
                if w.returncode is None:
                    w.kill()
        logs = worker_logs(tmp_path, tail=2000)
        if fault is None:
            assert codes == [0] * WORKERS, logs
        states = crawled(database_url)
        assert states.get("completed") == farm.expected_pages(), logs
        assert states.get("blocked") == farm.denied()
        assert set(states) == {"completed", "blocked"}
        return farm


def worker_logs(tmp_path: Path, tail: int = 0) -> str:
    return "\n".join(p.read_text(errors="replace")[-tail:] for p in tmp_path.glob("worker*.log"))


def duplicates(farm: HostFarm) -> int:
    return sum(max(0, farm.hits[page] - 1) for page in farm.expected_pages())


async def test_three_workers_crawl_every_page_once_and_keep_each_hosts_delay(
    pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    farm = await crawl_with(None, pg_schema_url, redis_url, tmp_path)

    assert duplicates(farm) == 0
    assert all(farm.hits[(port, "/robots.txt")] == 1 for port in farm.ports)
    assert all(farm.hits[page] == 0 for page in farm.denied())
    gaps = [gap for _, gap in farm.spacing()]
    # Per host: robots.txt, /sitemap.xml (a 404 here), the home page and its pages.
    assert len(gaps) == HOSTS * (farm.pages + 2)
    assert min(gaps) >= DELAY - 0.05, sorted(gaps)[:5]


async def test_a_sigkilled_worker_loses_nothing(
    pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    in_flight: set[tuple[int, str]] = set()

    async def kill_one(workers: list[asyncio.subprocess.Process], farm: HostFarm) -> None:
        victim = workers[0]
        victim.send_signal(signal.SIGSTOP)  # frozen: what it holds can be read exactly
        await asyncio.sleep(0.2)  # requests already sent reach the farm
        # In flight: rows it holds that the server already answered (requests under way, and
        # pages fetched but not yet written).
        held = leased_by_pid(pg_schema_url, victim.pid)
        in_flight.update(page for page in held if farm.hits[page])
        victim.send_signal(signal.SIGKILL)

    farm = await crawl_with(kill_one, pg_schema_url, redis_url, tmp_path)

    again = {page for page in farm.expected_pages() if farm.hits[page] > 1}
    assert again <= in_flight, sorted(again - in_flight)[:10]
    assert duplicates(farm) == len(again)  # each of them fetched exactly twice


@pytest.mark.skipif(shutil.which("pg_ctlcluster") is None, reason="needs pg_ctlcluster")
@pytest.mark.disrupts_services
async def test_postgresql_restarted_mid_crawl_loses_nothing(
    pg_schema_url: str, redis_url: str, tmp_path: Path
) -> None:
    version = sorted(os.listdir("/etc/postgresql"))[-1]

    async def restart_postgres(workers: list[asyncio.subprocess.Process], _: HostFarm) -> None:
        process = await asyncio.create_subprocess_exec(
            "pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"
        )
        assert await process.wait() == 0

    # The default heartbeat timeout: a restart that outlasts the tests' 5 s (a loaded machine's
    # shutdown checkpoint) would have the workers take each other for dead and re-lease each
    # other's rows, a second fault with its own test (the SIGKILL one).
    farm = await crawl_with(
        restart_postgres, pg_schema_url, redis_url, tmp_path,
        HARVESTMAN_WORKER_HEARTBEAT_TIMEOUT="30",
    )  # fmt: skip

    assert duplicates(farm) <= WORKERS * CONCURRENCY


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
async def test_redis_stopped_mid_crawl_falls_back_and_loses_nothing(
    pg_schema_url: str, tmp_path: Path
) -> None:
    # A Redis of the test's own: stopping the shared one would fail the tests running beside.
    redis = PrivateRedis(tmp_path)

    async def stop_redis_a_while(workers: list[asyncio.subprocess.Process], _: HostFarm) -> None:
        await redis.stop()
        await asyncio.sleep(1.5)
        await redis.start()

    await redis.start()
    try:
        farm = await crawl_with(stop_redis_a_while, pg_schema_url, redis.url, tmp_path)
    finally:
        await redis.stop()
    assert duplicates(farm) <= WORKERS * CONCURRENCY
    assert "Redis unavailable" in worker_logs(tmp_path)


class PrivateRedis:
    """A redis-server on a free port of 127.0.0.1, started and stopped by the test."""

    def __init__(self, directory: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.directory = directory
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
            "--appendonly", "no", "--dir", str(self.directory),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(500):
            if await run("redis-cli", "-p", str(self.port), "ping") == 0:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"redis-server did not start on port {self.port}")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()  # Redis shuts down as on SHUTDOWN: clients are cut off
            await self.process.wait()


async def run(*command: str) -> int:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    return await process.wait()


async def test_a_crawl_that_ended_leaves_the_worker_board(
    tmp_path: Path, redis_url: str, make_settings: object, site: object
) -> None:
    """A job's run that ended had stayed on the dashboard's workers, with its host and
    pages/s, until its beat expired."""
    from harvestman.coord.redis import RedisCoordinator
    from harvestman.crawl.crawler import Crawler

    # 0.3 s between a host's requests: the crawl outlasts its first beat (1 s in).
    settings = make_settings(crawl_max_pages=8, frontier_delay=0.3)  # type: ignore[operator]
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        coordinator = RedisCoordinator(redis_url, store.hosts, prefix=prefix)
        seed = site.url()  # type: ignore[attr-defined]
        try:
            crawling = asyncio.create_task(
                Crawler(settings, store, [seed], coordinator=coordinator).run()
            )
            async with asyncio.timeout(20):
                while not await coordinator.workers():
                    assert not crawling.done(), "the crawl ended before its first beat"
                    await asyncio.sleep(0.05)
            await crawling
            after = await coordinator.workers()
        finally:
            await coordinator.close()
    assert after == []


async def test_a_breaker_opened_by_one_worker_holds_for_the_others(
    tmp_path: Path, redis_url: str, make_settings: object
) -> None:
    from harvestman.coord.redis import RedisCoordinator
    from harvestman.crawl.crawler import Crawler
    from harvestman.resilience import BreakerState

    settings = make_settings()  # type: ignore[operator]
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    async with SqlStore(settings.database_url) as store:
        await store.upgrade()
        engines = [Crawler(settings, store) for _ in range(2)]
        coordinators = [RedisCoordinator(redis_url, store.hosts, prefix=prefix) for _ in engines]
        for engine, coordinator in zip(engines, coordinators, strict=True):
            engine.coordinator = coordinator
        first, second = engines
        assert first.breakers is not None
        assert second.breakers is not None
        try:
            for _ in range(5):
                first.breakers.record("flaky.test", success=False)
            assert first.breakers.state("flaky.test") is BreakerState.OPEN
            first_gate, second_gate = first.wiring.breaker, second.wiring.breaker
            assert first_gate is not None
            assert second_gate is not None
            await first_gate.sync(coordinators[0])
            await second_gate.sync(coordinators[1])
            assert second.breakers.state("flaky.test") is BreakerState.OPEN
            assert not second.breakers.allow("flaky.test")

            first.breakers.reset("flaky.test")  # closed again: the news is shared too
            first_gate.changes["flaky.test"] = BreakerState.CLOSED
            await first_gate.sync(coordinators[0])
            assert await coordinators[0].get_breakers() == {}
        finally:
            await coordinators[0].redis.delete(f"{prefix}:breakers")
            for coordinator in coordinators:
                await coordinator.close()
