"""PostgreSQL frontier benchmark: leasing, completing and ingesting through the real ``SqlStore``.

Against the local PostgreSQL (``--database-url``, default ``postgresql://postgres@127.0.0.1:5432/
test``) and Redis (``--redis-url``), each frontier lives in a fresh schema
(``?options=-csearch_path%3D<schema>``) migrated with ``SqlStore.upgrade()`` and dropped at the
end, and Redis keys under a fresh prefix, deleted at the end. The fill (COPY) is not measured;
everything measured goes through ``SqlStore`` (and ``RedisCoordinator``) methods as the engine
calls them.

Frontiers (host ``hNNNNN.example``, URL ``http://<host>/p/<n>``, all pending; priorities 3/2/1
for 10/70/20 % of rows; 2 % of rows due an hour later, like retries):

- ``10k``: 10,000 URLs over 100 hosts; ``1M``: 1,000,000 URLs over 10,000 hosts. Both have 100
  URLs a host: the frontier grows in hosts, the usual way of a broad crawl.
- ``1M-deep``: 1,000,000 URLs over 100 hosts (10,000 a host: a few big sites).

Measured:

- **lease latency**: one ``lease()`` of ``--lease-hosts`` hosts x ``--lease-wanted`` URLs (the
  frontier batches its hosts so), p50/p99 over ``--lease-calls`` calls after 10 of warm-up. The
  leased rows go back to pending between calls (untimed) and the table is vacuumed every 25
  calls, so every call sees the same frontier.
- **periodic queries**: ``pending_hosts`` (each worker, every refresh: 5 s), ``counts``
  (``--exit-when-done``), ``heartbeat`` (every 10 s, extends the worker's leases) and
  ``recover`` (the minute sweep): median of 5, one worker holding 1,000 leases.
- **throughput** on the 1M frontier with 1 and 2 worker processes for ``--seconds`` each (see
  ``pg_load.py``): lease, then ``record()`` batches of 200 completed outcomes with their page rows
  and the links found on them (20 a page, 90 % already in the frontier). ``--ingest redis``: the
  links pass the engine's filters first (its own seen set, then Redis' shared one, filled from
  the store with ``RedisCoordinator.rebuild`` as ``harvestman admin rebuild-cache`` does);
  ``store``: Redis is away and every link not seen by the process goes to the store's unique
  index. A *URL state change* is one row changing status: a lease (pending -> in_progress) and
  a completion (in_progress -> completed) are two; new rows are reported apart, not counted.

The bar: **>= 5,000 URL state changes/s, and lease p99 at 1M within 2x of p99 at 10k.**

    .venv/bin/python bench/pg_frontier.py                       # everything, ~5 min
    .venv/bin/python bench/pg_frontier.py --only 10k,1M --ingest redis --explain
    .venv/bin/python bench/pg_frontier.py --candidate-indexes   # the indexes docs/SCALING.md
                                                                # proposes, created first
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harvestman.coord.redis import RedisCoordinator
from harvestman.store import SqlStore
from pg_load import LEASE_SECONDS, Run, host_name, page_url, sha, throughput

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
MIN_STATE_CHANGES = 5000
MAX_P99_RATIO = 2.0

# The indexes docs/SCALING.md proposes (the lead turns them into a migration): the lease index in
# the lease query's own order over pending rows only, replacing ix_urls_lease, and a partial
# index over the few rows in progress for the heartbeat, release and the stale-lease sweep.
CANDIDATE_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_urls_ready ON urls"
    " (crawl_id, host, priority DESC, next_crawl_at, id) WHERE status = 'pending'",
    "CREATE INDEX ix_urls_leased_by ON urls (leased_by) WHERE status = 'in_progress'",
    "DROP INDEX ix_urls_lease",
)


@dataclass(frozen=True)
class Shape:
    label: str
    urls: int
    hosts: int

    @property
    def per_host(self) -> int:
        return self.urls // self.hosts


SHAPES = {
    "10k": Shape("10k", 10_000, 100),
    "1M": Shape("1M", 1_000_000, 10_000),
    "1M-deep": Shape("1M-deep", 1_000_000, 100),
}


def priority_of(n: int) -> int:
    return 3 if n % 10 == 0 else 1 if n % 5 == 1 else 2


# -- schema and fill ------------------------------------------------------------------------------


@contextmanager
def bench_schema(admin_url: str) -> Iterator[str]:
    """A database URL whose search_path is a fresh schema, dropped afterwards."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(
        admin_url.replace("postgresql://", "postgresql+psycopg://", 1), pool_pre_ping=True
    )
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{admin_url}?options=-csearch_path%3D{schema}"
    finally:
        # The server is shared (a test may be restarting it): retry the drop for a while.
        for attempt in range(30):
            try:
                with admin.begin() as conn:
                    conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
                break
            except OperationalError:
                if attempt == 29:
                    print(f"could not drop schema {schema}: drop it by hand")
                time.sleep(1)
        admin.dispose()


def server_started_at(url: str) -> float:
    """When PostgreSQL last started: a change during a run means the figures are void."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT extract(epoch FROM pg_postmaster_start_time())").fetchone()
    assert row is not None
    return float(row[0])


def fill(url: str, crawl_id: int, shape: Shape, now: float) -> float:
    """COPY ``shape.urls`` pending rows and one domain row per host; returns the seconds taken."""
    started = time.perf_counter()
    columns = (
        "crawl_id, url_hash, url, host, status, priority, depth, next_crawl_at, attempts,"
        " discovered_at, updated_at"
    )
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        # n-major order: a host's rows are scattered over the table, as discovery scatters them.
        with cur.copy(f"COPY urls ({columns}) FROM STDIN") as copy:
            for n in range(shape.per_host):
                due = now + 3600 if n % 50 == 49 else now - 3600 + n % 3600
                for h in range(shape.hosts):
                    link = page_url(h, n)
                    copy.write_row(
                        (
                            crawl_id,
                            sha(link),
                            link,
                            host_name(h),
                            "pending",
                            priority_of(n),
                            n % 10,
                            due,
                            0,
                            now,
                            now,
                        )
                    )
        with cur.copy("COPY domains (host, allowed, page_count, updated_at) FROM STDIN") as copy:
            for h in range(shape.hosts):
                copy.write_row((host_name(h), True, 0, now))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE urls")
        conn.execute("VACUUM ANALYZE domains")
    return time.perf_counter() - started


def create_candidate_indexes(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for ddl in CANDIDATE_INDEXES:
            conn.execute(ddl)
        conn.execute("ANALYZE urls")


def sizes(url: str) -> dict[str, int]:
    """Bytes of the urls heap (with TOAST) and of each of its indexes."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_table_size('urls')").fetchone()
        found = {"heap": int(row[0]) if row else 0}
        for name, size in conn.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index"
            " WHERE indrelid = 'urls'::regclass ORDER BY 1"
        ):
            found[name] = int(size)
    return found


def explain_lease(store: SqlStore, crawl_id: int, host: str, wanted: int) -> list[str]:
    """EXPLAIN ANALYZE of the lease query for one host, as the store sends it (rolled back)."""
    sql = "EXPLAIN (ANALYZE, BUFFERS) " + str(store._lease_sql.text)
    with store.engine.connect() as conn:
        params = {"crawl_id": crawl_id, "host": host, "now": time.time(), "limit": wanted}
        lines = [row[0] for row in conn.execute(text(sql), params)]
        conn.rollback()
    return lines


# -- lease latency and periodic queries -----------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def restore(store: SqlStore, ids: list[int]) -> None:
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE urls SET status = 'pending', lease_until = NULL, leased_by = NULL"
                " WHERE id = ANY(:ids)"
            ),
            {"ids": ids},
        )


def vacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM urls")


@dataclass
class LeaseFigures:
    p50: float
    p99: float
    rows: float  # rows leased per call (mean)


class LeaseSampler:
    """Times single ``lease()`` calls on one frontier, putting the rows back after each."""

    def __init__(self, frontier: Frontier, args: argparse.Namespace) -> None:
        self.frontier = frontier
        self.hosts = [host_name(h) for h in range(frontier.shape.hosts)]
        self.per_call = min(args.lease_hosts, len(self.hosts))
        self.wanted = args.lease_wanted
        self.rng = random.Random(7)
        self.times: list[float] = []
        self.rows: list[int] = []

    async def sample(self, keep: bool) -> None:
        store = self.frontier.store
        wanted = dict.fromkeys(self.rng.sample(self.hosts, self.per_call), self.wanted)
        now = time.time()
        started = time.perf_counter()
        leased, _ = await store.lease(
            self.frontier.crawl_id, wanted, now, now + LEASE_SECONDS, "bench-latency"
        )
        elapsed = time.perf_counter() - started
        if keep:
            self.times.append(elapsed)
            self.rows.append(len(leased))
        restore(store, [request.id for request in leased])

    def figures(self) -> LeaseFigures:
        return LeaseFigures(
            percentile(self.times, 0.5), percentile(self.times, 0.99), statistics.mean(self.rows)
        )


async def lease_latency(frontiers: list[Frontier], args: argparse.Namespace) -> None:
    """Sample every frontier in turn, so that whatever else the machine does hits all alike."""
    samplers = [LeaseSampler(frontier, args) for frontier in frontiers]
    warmup = 10
    for i in range(warmup + args.lease_calls):
        for sampler in samplers:
            await sampler.sample(keep=i >= warmup)
        if i % 25 == 24:
            for frontier in frontiers:
                vacuum(frontier.url)
    for frontier, sampler in zip(frontiers, samplers, strict=True):
        vacuum(frontier.url)
        frontier.lease = sampler.figures()


async def periodic_queries(store: SqlStore, crawl_id: int, shape: Shape) -> dict[str, float]:
    """Median seconds of the queries workers run on a timer, with one worker holding leases."""
    now = time.time()
    held = {host_name(h): 10 for h in range(min(100, shape.hosts))}
    leased, _ = await store.lease(crawl_id, held, now, now + LEASE_SECONDS, "bench-holder")
    calls = {
        "pending_hosts": lambda: store.pending_hosts(crawl_id),
        "counts": lambda: store.counts(crawl_id),
        "heartbeat": lambda: store.heartbeat("bench-holder", time.time(), now + LEASE_SECONDS),
        "recover": lambda: store.recover(time.time(), ["bench-dead"]),
    }
    figures = {}
    for name, call in calls.items():
        times = []
        for _ in range(5):
            started = time.perf_counter()
            await call()
            times.append(time.perf_counter() - started)
        figures[name] = statistics.median(times)
    restore(store, [request.id for request in leased])
    return figures


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Frontier:
    """One filled frontier in its own schema, and what was measured on it."""

    shape: Shape
    url: str
    store: SqlStore
    crawl_id: int
    fill_seconds: float
    sizes: dict[str, int]
    explain: list[str]
    lease: LeaseFigures | None = None
    periodic: dict[str, float] = field(default_factory=dict)
    runs: list[tuple[int, Run]] = field(default_factory=list)
    seen_set: tuple[float, int] | None = None  # rebuild seconds, Redis bytes


async def open_frontier(
    shape: Shape, args: argparse.Namespace, stack: contextlib.AsyncExitStack
) -> Frontier:
    url = stack.enter_context(bench_schema(args.database_url))
    store = await stack.enter_async_context(SqlStore(url))
    await store.upgrade()
    crawl_id = await store.ensure_crawl("bench")
    print(f"[{shape.label}] filling {shape.urls:,} URLs over {shape.hosts:,} hosts ...")
    seconds = fill(url, crawl_id, shape, time.time())
    if args.candidate_indexes:
        create_candidate_indexes(url)
    on_disk = sizes(url)  # before the lease measurements leave dead rows behind
    explain = explain_lease(store, crawl_id, host_name(0), args.lease_wanted)
    return Frontier(shape, url, store, crawl_id, seconds, on_disk, explain)


async def fill_seen_set(frontier: Frontier, args: argparse.Namespace) -> tuple[float, int]:
    """Fill Redis' seen set from the store as ``harvestman admin rebuild-cache`` does."""
    redis = RedisCoordinator(args.redis_url, frontier.store, prefix=args.redis_prefix)
    started = time.perf_counter()
    hashes = frontier.store.url_hashes(frontier.crawl_id)
    await redis.rebuild({str(frontier.crawl_id): hashes}, [], 3600.0)
    seconds = time.perf_counter() - started
    key = f"{args.redis_prefix}:seen:{frontier.crawl_id}"
    used = await redis.redis.memory_usage(key, samples=0)
    await redis.close()
    return seconds, int(used or 0)


async def drop_redis_keys(args: argparse.Namespace) -> None:
    redis = RedisCoordinator(args.redis_url, None, prefix=args.redis_prefix)  # type: ignore[arg-type]
    keys = [key async for key in redis.redis.scan_iter(f"{args.redis_prefix}:*", count=1000)]
    if keys:
        await redis.redis.delete(*keys)
    await redis.close()


async def throughput_runs(frontier: Frontier, args: argparse.Namespace) -> None:
    shape = frontier.shape
    try:
        if "redis" in args.ingest:
            frontier.seen_set = await fill_seen_set(frontier, args)
        for ingest in args.ingest:
            for processes in (1, 2):
                print(f"[{shape.label}] throughput: {processes} process(es), ingest {ingest},"
                      f" {args.seconds:g} s")  # fmt: skip
                run = throughput(
                    frontier.url, frontier.crawl_id, shape.hosts, shape.per_host, processes,
                    args, ingest,
                )  # fmt: skip
                frontier.runs.append((processes, run))
                vacuum(frontier.url)
    finally:
        await drop_redis_keys(args)


async def measure(args: argparse.Namespace) -> list[Frontier]:
    """Fill every frontier, then measure them side by side; drop everything at the end."""
    restarts = server_started_at(args.database_url)
    async with contextlib.AsyncExitStack() as stack:
        frontiers = [await open_frontier(SHAPES[label], args, stack) for label in args.only]
        print(f"lease latency: {args.lease_calls} calls on each frontier, in turn ...")
        await lease_latency(frontiers, args)
        for frontier in frontiers:
            frontier.periodic = await periodic_queries(
                frontier.store, frontier.crawl_id, frontier.shape
            )
            if frontier.shape.label == "1M" and args.ingest:
                await throughput_runs(frontier, args)
    if server_started_at(args.database_url) != restarts:
        print("WARNING: PostgreSQL restarted during the run: the figures are void")
    return frontiers


def print_report(results: list[Frontier], args: argparse.Namespace) -> bool:
    print("=" * 96)
    print(
        f"lease latency: one lease() of {args.lease_hosts} hosts x {args.lease_wanted} URLs,"
        f" {args.lease_calls} calls on each frontier, taken in turn"
    )
    print(
        f"{'frontier':<10}{'URLs':>11}{'hosts':>8}{'URLs/host':>11}{'fill s':>8}"
        f"{'rows/call':>11}{'p50 ms':>9}{'p99 ms':>9}"
    )
    for r in results:
        s, lease = r.shape, r.lease
        assert lease is not None
        print(
            f"{s.label:<10}{s.urls:>11,}{s.hosts:>8,}{s.per_host:>11,}{r.fill_seconds:>8.1f}"
            f"{lease.rows:>11.0f}{lease.p50 * 1e3:>9.1f}{lease.p99 * 1e3:>9.1f}"
        )
    print("\nurls table on disk after the fill: MB, and bytes per row")
    for r in results:
        parts = ", ".join(f"{name} {size / r.shape.urls:.0f}" for name, size in r.sizes.items())
        print(f"{r.shape.label:<10}{sum(r.sizes.values()) / 1e6:>6.0f} MB  {parts}")
    print("\nperiodic queries: median ms")
    names = list(results[0].periodic)
    print(f"{'frontier':<10}" + "".join(f"{n:>15}" for n in names))
    for r in results:
        print(f"{r.shape.label:<10}" + "".join(f"{r.periodic[n] * 1e3:>15.1f}" for n in names))
    checks: dict[str, bool] = {}
    for r in results:
        if r.seen_set:
            seconds, used = r.seen_set
            print(
                f"\nRedis seen set of {r.shape.urls:,} hashes: rebuilt from the store in"
                f" {seconds:.1f} s, {used / 1e6:.0f} MB = {used / r.shape.urls:.0f} B a URL"
            )
        for processes, run in r.runs:
            print_run(r.shape, processes, run)
            name = f"{run.ingest} x{processes} >= {MIN_STATE_CHANGES:,}/s"
            checks[name] = run.state_changes / run.wall >= MIN_STATE_CHANGES
    by_label = {r.shape.label: r for r in results}
    big, small = by_label.get("1M"), by_label.get("10k")
    if big and small and big.lease and small.lease:
        ratio = big.lease.p99 / small.lease.p99
        print(f"\nlease p99 1M / 10k = {ratio:.2f}")
        checks[f"p99 1M <= {MAX_P99_RATIO:g}x 10k"] = ratio <= MAX_P99_RATIO
    if args.explain:
        for r in results:
            print(f"\nEXPLAIN ANALYZE of one host's lease query on {r.shape.label}:")
            print("\n".join(f"  {line}" for line in r.explain))
    if not checks:
        return True
    passed = all(checks.values())
    details = "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks.items())
    print(f"{'PASS' if passed else 'FAIL'}  {details}")
    return passed


def print_run(shape: Shape, processes: int, run: Run) -> None:
    workers, wall = run.workers, run.wall
    leased = sum(w.leased for w in workers)
    done = sum(w.completed for w in workers)
    found = sum(w.links_found for w in workers)
    stored = sum(w.links_to_store for w in workers)
    print(
        f"\nthroughput on {shape.label}: {processes} process(es), ingest {run.ingest}, {wall:.1f} s"
    )
    print(
        f"  URL state changes/s  {run.state_changes / wall:,.0f}"
        f"  ({leased:,} leased + {done:,} completed)"
    )
    print(f"  completed URLs/s     {done / wall:,.0f}  (each with a page row)")
    print(
        f"  links                {found / wall:,.0f}/s found, {stored / wall:,.0f}/s sent to"
        f" the store, {run.new_rows / wall:,.0f}/s new rows"
    )
    print(
        f"  PostgreSQL CPU       {run.postgres_cpu / wall:.2f} cores,"
        f" {run.postgres_cpu / max(done, 1) * 1e3:.2f} ms per completed URL"
    )
    print(
        f"  WAL                  {run.wal_bytes / 1e6 / wall:.1f} MB/s,"
        f" {run.wal_bytes / max(done, 1) / 1e3:.1f} kB per completed URL"
    )
    for i, w in enumerate(workers):
        print(
            f"  process {i}: CPU {w.cpu / w.elapsed:.0%} of a core; in lease()"
            f" {w.lease_seconds:.1f} s, in filter + record() + mark_seen {w.record_seconds:.1f} s;"
            f" retried flushes {len(w.retries)}"
        )
        for reason in sorted(set(w.retries))[:2]:
            print(f"    {reason}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--only", default="10k,1M,1M-deep", help="frontiers, comma-separated")
    parser.add_argument("--lease-hosts", type=int, default=100, help="hosts per lease() call")
    parser.add_argument("--lease-wanted", type=int, default=10, help="URLs wanted per host")
    parser.add_argument("--lease-calls", type=int, default=200, help="timed lease() calls")
    parser.add_argument("--seconds", type=float, default=20.0, help="each throughput run")
    parser.add_argument(
        "--ingest", default="redis,store", help="throughput runs: redis, store, both or none"
    )
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE")
    parser.add_argument(
        "--candidate-indexes", action="store_true", help="create the proposed indexes first"
    )
    args = parser.parse_args()
    args.ingest = [m for m in args.ingest.split(",") if m.strip() and m.strip() != "none"]
    args.only = [label.strip() for label in args.only.split(",") if label.strip()]
    args.redis_prefix = f"bench-{uuid.uuid4().hex[:8]}"
    return args


def main() -> int:
    args = parse_args()
    load = os.getloadavg()[0]
    print(f"machine          {os.cpu_count()} cores, load average {load:.2f} at start")
    if load > 0.5:
        print("                 (something else is running: the figures will be lower)")
    return 0 if print_report(asyncio.run(measure(args)), args) else 1


if __name__ == "__main__":
    # A plain SIGTERM would skip the finally blocks that drop the schema and the Redis keys.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
