"""The load side of ``pg_frontier.py``: worker processes that lease, complete and ingest.

Each process has its own ``SqlStore`` and event loop and does what one engine does to the store,
with the fetching taken out: ``lease()`` a batch of hosts, write ``record()`` batches of 200
completed outcomes with their page rows and the links found on those pages, filtered the way
the engine filters them (its in-process seen set, then Redis' shared one when ``--ingest redis``).
The parent samples the CPU of the run's PostgreSQL backends and the WAL written over the run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import multiprocessing
import os
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from harvestman.coord.redis import RedisCoordinator
from harvestman.errors import StoreError
from harvestman.records import CrawlRequest, NewUrl, Outcome, PageRecord, UrlStatus
from harvestman.store import SqlStore

LEASE_SECONDS = 300.0
RECORD_BATCH = 200  # the engine's store_batch_size
LINKS_PER_PAGE = 20
KNOWN_SHARE = 0.9
NEW_PER_HOST = 1000
RECRAWL_AFTER = 7 * 86400.0
MAX_RETRIES = 5
BUFFERED = 5  # leased batches of RECORD_BATCH waiting to be written


def host_name(i: int) -> str:
    return f"h{i:05d}.example"


def page_url(host: int, n: int) -> str:
    return f"http://{host_name(host)}/p/{n}"


def sha(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()


# -- what the server spends -----------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process, from /proc (None once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BackendCpu(threading.Thread):
    """CPU of the PostgreSQL backends whose ``application_name`` is ``name``, from ``start()``
    to ``stop()``: the run's own backends, not those of other clients of a shared server.

    Backends are found in ``pg_stat_activity`` and read from /proc every 0.2 s, so a backend
    that closes during the run (with its worker) still counts, all but its last fraction of a
    poll. The server's background processes (WAL writer, checkpointer, autovacuum) are not
    counted: they serve every database."""

    def __init__(self, admin_url: str, name: str) -> None:
        super().__init__(daemon=True)
        self.admin_url = admin_url
        self.application_name = name
        self._cpu: dict[int, float] = {}
        self._done = threading.Event()

    def _poll(self, conn: psycopg.Connection[tuple[int]]) -> None:
        pids = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            (self.application_name,),
        ).fetchall()
        for (pid,) in pids:
            used = cpu_seconds(pid)
            if used is not None:
                self._cpu[pid] = used

    def run(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            while not self._done.wait(0.2):
                self._poll(conn)
            self._poll(conn)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return sum(self._cpu.values())


def with_application_name(url: str, name: str) -> str:
    """``url`` whose connections show as ``name`` in pg_stat_activity."""
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def scalar(url: str, sql: str, *params: object) -> object:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


# -- one worker process ---------------------------------------------------------------------------


@dataclass
class WorkerFigures:
    leased: int = 0
    completed: int = 0
    links_found: int = 0
    links_to_store: int = 0
    lease_seconds: float = 0.0
    record_seconds: float = 0.0  # filtering, record() and mark_seen()
    elapsed: float = 0.0
    cpu: float = 0.0  # the process's own CPU seconds (all its threads) over ``elapsed``
    retries: list[str] = field(default_factory=list)


def page_for(request: CrawlRequest, now: float) -> PageRecord:
    return PageRecord(
        url=request.url, final_url=request.url, host=request.host, status_code=200,
        content_type="text/html; charset=utf-8", content_length=20_000, fetched_at=now,
        crawl_duration_ms=42, charset="utf-8", content_hash=sha(request.url + "#body"),
        title=f"Page {request.url_hash[:12]}", description="A page of the synthetic frontier. " * 3,
        lang="en", links_count=LINKS_PER_PAGE,
    )  # fmt: skip


class Discoveries:
    """Links found on pages, filtered as the engine filters them before the store.

    ``LINKS_PER_PAGE`` links a page: ``KNOWN_SHARE`` of them rows of the fill, the others among
    ``NEW_PER_HOST`` new paths of the page's host (so two workers sometimes find the same new URL
    at the same time, as on a real site). The in-process seen set drops repeats; with a
    coordinator, Redis' shared seen set drops what any worker has stored, and what is stored is
    marked seen after ``record`` (``BatchWriter.flush`` does the same).
    """

    def __init__(
        self, shape_hosts: int, per_host: int, rng: random.Random, redis: RedisCoordinator | None
    ) -> None:
        self.hosts = shape_hosts
        self.per_host = per_host
        self.rng = rng
        self.redis = redis
        self.seen: set[str] = set()
        self.found = 0

    def page_links(self, request: CrawlRequest) -> list[NewUrl]:
        rows = []
        for _ in range(LINKS_PER_PAGE):
            if self.rng.random() < KNOWN_SHARE:
                h = self.rng.randrange(self.hosts)
                host, link = host_name(h), page_url(h, self.rng.randrange(self.per_host))
            else:
                host = request.host
                link = f"http://{host}/n/{self.rng.randrange(NEW_PER_HOST)}"
            rows.append(NewUrl(link, sha(link), host, request.depth + 1, 2))
        return rows

    async def unseen(self, crawl_id: int, requests: list[CrawlRequest]) -> list[NewUrl]:
        links = []
        for request in requests:
            for link in self.page_links(request):
                self.found += 1
                if link.url_hash not in self.seen:
                    self.seen.add(link.url_hash)
                    links.append(link)
        if self.redis is None or not links:
            return links
        fresh = await self.redis.unseen(str(crawl_id), [u.url_hash for u in links])
        return [u for u, new in zip(links, fresh, strict=True) if new]

    async def stored(self, crawl_id: int, links: list[NewUrl]) -> None:
        if self.redis is not None and links:
            await self.redis.mark_seen(str(crawl_id), [u.url_hash for u in links])


@dataclass(frozen=True)
class Job:
    """What a worker process is told (picklable)."""

    url: str
    crawl_id: int
    hosts: int
    per_host: int
    index: int
    start_at: float
    seconds: float
    lease_hosts: int
    lease_wanted: int
    redis_url: str | None
    redis_prefix: str


class Worker:
    """One engine's traffic to the store: a leasing task and a flushing task, side by side.

    As in the engine, leasing runs ahead of the writes (the frontier keeps a buffer) and both
    share the store's threads; at most ``BUFFERED`` leased batches wait to be written.
    """

    def __init__(self, job: Job, store: SqlStore, found: Discoveries) -> None:
        self.job = job
        self.store = store
        self.found = found
        self.figures = WorkerFigures()
        self.queue: asyncio.Queue[list[CrawlRequest] | None] = asyncio.Queue(BUFFERED)
        rng = random.Random(f"{job.redis_url is None}-{job.index}")
        order = list(range(job.hosts))
        rng.shuffle(order)
        self.hosts = deque(host_name(h) for h in order)

    async def run(self) -> WorkerFigures:
        began, cpu = time.perf_counter(), time.process_time()
        async with asyncio.TaskGroup() as group:
            group.create_task(self.lease_until(began + self.job.seconds))
            group.create_task(self.flush())
        self.figures.elapsed = time.perf_counter() - began
        self.figures.cpu = time.process_time() - cpu
        self.figures.links_found = self.found.found
        return self.figures

    async def lease_until(self, deadline: float) -> None:
        job, figures, hosts = self.job, self.figures, self.hosts
        while time.perf_counter() < deadline and hosts:
            batch = [hosts[i] for i in range(min(job.lease_hosts, len(hosts)))]
            hosts.rotate(-len(batch))
            now = time.time()
            started = time.perf_counter()
            leased, dry = await self.store.lease(
                job.crawl_id, dict.fromkeys(batch, job.lease_wanted), now, now + LEASE_SECONDS,
                f"bench-{job.index}",
            )  # fmt: skip
            figures.lease_seconds += time.perf_counter() - started
            figures.leased += len(leased)
            for host, due in dry.items():
                if due is None or due > now:
                    hosts.remove(host)
            for start in range(0, len(leased), RECORD_BATCH):
                await self.queue.put(leased[start : start + RECORD_BATCH])
        await self.queue.put(None)

    async def flush(self) -> None:
        job, figures = self.job, self.figures
        while (chunk := await self.queue.get()) is not None:
            now = time.time()
            outcomes = [
                Outcome(r, UrlStatus.COMPLETED, now + RECRAWL_AFTER, r.attempts, status_code=200,
                        content_hash=sha(r.url + "#body"), page=page_for(r, now))
                for r in chunk
            ]  # fmt: skip
            started = time.perf_counter()
            links = await self.found.unseen(job.crawl_id, chunk)
            for attempt in itertools.count(1):
                try:
                    await self.store.record(job.crawl_id, outcomes, links, now)
                    break
                except StoreError as exc:  # retried as BatchWriter.flush retries it
                    figures.retries.append(str(exc).splitlines()[0][:100])
                    if attempt >= MAX_RETRIES:
                        raise
                    await asyncio.sleep(min(30.0, 0.5 * 2**attempt))
            await self.found.stored(job.crawl_id, links)
            figures.record_seconds += time.perf_counter() - started
            figures.completed += len(chunk)
            figures.links_to_store += len(links)


async def run_worker(job: Job) -> WorkerFigures:
    """Lease, complete and ingest as one engine would, until ``job.seconds`` have passed (and
    what was leased by then is written)."""
    async with SqlStore(job.url) as store:
        redis = None
        if job.redis_url:
            redis = RedisCoordinator(job.redis_url, store, prefix=job.redis_prefix)
        rng = random.Random(f"links-{job.index}")
        worker = Worker(job, store, Discoveries(job.hosts, job.per_host, rng, redis))
        await store.ping()
        await asyncio.sleep(max(0.0, job.start_at - time.time()))
        try:
            return await worker.run()
        finally:
            if redis is not None:
                await redis.close()


def worker_process(job: Job, results: multiprocessing.Queue[tuple[int, WorkerFigures]]) -> None:
    results.put((job.index, asyncio.run(run_worker(job))))


# -- one run of N processes -----------------------------------------------------------------------


@dataclass
class Run:
    """One throughput run: what each process did, and what the server spent on it."""

    ingest: str
    workers: list[WorkerFigures]
    postgres_cpu: float
    wal_bytes: int
    new_rows: int

    @property
    def wall(self) -> float:
        return max(w.elapsed for w in self.workers)

    @property
    def state_changes(self) -> int:
        """Rows that changed status: pending -> in_progress, and in_progress -> completed."""
        return sum(w.leased + w.completed for w in self.workers)


def throughput(
    url: str, crawl_id: int, hosts: int, per_host: int, processes: int,
    args: argparse.Namespace, ingest: str,
) -> Run:  # fmt: skip
    """Run ``processes`` workers for ``args.seconds`` on the frontier at ``url``."""
    rows_before = int(scalar(url, "SELECT count(*) FROM urls"))  # type: ignore[call-overload]
    wal_start = str(scalar(url, "SELECT pg_current_wal_lsn()::text"))
    name = f"bench-{os.getpid()}-{time.monotonic_ns()}"
    sampler = BackendCpu(url, name)
    sampler.start()
    worker_url = with_application_name(url, name)
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[int, WorkerFigures]] = context.Queue()
    start_at = time.time() + 2.0  # after every child has imported and connected
    jobs = [
        Job(worker_url, crawl_id, hosts, per_host, i, start_at, args.seconds, args.lease_hosts,
            args.lease_wanted, args.redis_url if ingest == "redis" else None, args.redis_prefix)
        for i in range(processes)
    ]  # fmt: skip
    children = [context.Process(target=worker_process, args=(job, results)) for job in jobs]
    for child in children:
        child.start()
    try:
        figures = dict(results.get(timeout=args.seconds + 120) for _ in children)
    finally:
        for child in children:
            child.join(5)
            if child.is_alive():
                child.kill()
                child.join()
    postgres_cpu = sampler.stop()  # includes the 2 s of connecting, which cost next to nothing
    wal = scalar(url, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", wal_start)
    rows_after = int(scalar(url, "SELECT count(*) FROM urls"))  # type: ignore[call-overload]
    return Run(
        ingest, [figures[i] for i in range(processes)], postgres_cpu, int(wal),  # type: ignore[call-overload]
        rows_after - rows_before,
    )  # fmt: skip
