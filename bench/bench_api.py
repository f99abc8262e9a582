"""The service at scale: scheduler polls, list-endpoint latency at a steady rate, idle RSS.

    .venv/bin/python bench/bench_api.py                       # SQLite and PostgreSQL
    .venv/bin/python bench/bench_api.py --database sqlite --seconds 5

Builds a store of ``--urls`` frontier rows, ``--pages`` stored pages and ``--jobs`` recurring
jobs (default 1,000,000 / 500,000 / 10,000: issue 4's figures), cached by shape: a SQLite file
under ``bench/out/api/`` (git-ignored) and a dedicated PostgreSQL schema ``bench_api_<shape>``.
Then, per database:

- the scheduler poll (``Scheduler.poll``: renew locks, claim up to 4 due jobs, open their
  executions; the runs finish at once), p50/p99 over ``--polls`` polls;
- a real ``harvestman serve --no-scheduler`` subprocess: its idle RSS; then per list endpoint
  (first page and a deep cursor page, with and without a filter) ``--sequential`` requests one
  after another (p50/p99 and ``serve``'s CPU per request, from ``/proc``: what a request costs
  without queueing), then ``--rate`` requests/s for ``--seconds`` from an open-loop aiohttp
  load generator (requests start on schedule, not when the last one ends): p50/p99, and the
  CPU per request of ``serve`` and of the generator itself (it shares the machine);
- ``uptime`` before and after: the machine is shared, read the figures beside its load.

Targets (issue 4): poll < 100 ms, list p99 < 100 ms, idle RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
from sqlalchemy import Engine, func, insert, select, text

OUT = Path(__file__).resolve().parent / "out" / "api"
POSTGRES_URL = os.environ.get(
    "HARVESTMAN_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1/test"
)
SERVE = "import typer; from harvestman.api.commands import serve; typer.run(serve)"
HOSTS = 500
CHUNK = 20_000


def store_url(database: str, shape: str) -> str:
    if database == "sqlite":
        OUT.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{OUT / f'store-{shape}.db'}"
    return f"{POSTGRES_URL}?options=-csearch_path%3Dbench_api_{shape.replace('-', '_')}"


def _chunks(n: int, make: Any) -> Any:
    for start in range(0, n, CHUNK):
        yield [make(i) for i in range(start, min(start + CHUNK, n))]


def build(engine: Engine, n_urls: int, n_pages: int, n_jobs: int, marker: str) -> bool:
    """Fill the store unless a finished one of this shape is there; True when built."""
    from harvestman.store import migrate
    from harvestman.store.jobs.tables import jobs, sources
    from harvestman.store.schema import crawled_pages, crawls, domains, urls

    if engine.dialect.name == "postgresql":
        schema = engine.url.query["options"].split("=", 1)[1]  # type: ignore[union-attr]
        with engine.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    migrate.upgrade(engine)
    with engine.connect() as conn:
        if conn.execute(select(crawls.c.id).where(crawls.c.name == marker)).first():
            return False
        if conn.execute(select(crawls.c.id)).first():
            sys.exit(f"{engine.url}: an unfinished build of this shape; delete it and rerun")
    now = time.time()

    def url_row(i: int) -> dict[str, Any]:
        host = f"h{i % HOSTS}.example"
        url = f"http://{host}/p/{i}"
        return {
            "crawl_id": 1, "url_hash": hashlib.sha256(url.encode()).hexdigest(), "url": url,
            "host": host, "status": "completed" if i < n_pages else "pending", "priority": 2,
            "depth": 1, "next_crawl_at": now, "attempts": 0, "discovered_at": now,
            "updated_at": now, "kind": "page",
        }  # fmt: skip

    def page_row(i: int) -> dict[str, Any]:
        host = f"h{i % HOSTS}.example"
        url = f"http://{host}/p/{i}"
        return {
            "crawl_id": 1, "url_hash": hashlib.sha256(url.encode()).hexdigest(), "url": url,
            "final_url": url, "host": host, "status_code": 404 if i % 50 == 0 else 200,
            "title": f"page {i}", "links_count": 10, "fetched_at": now - n_pages + i,
            "validation_status": "ok",
        }  # fmt: skip

    def job_row(i: int) -> dict[str, Any]:
        return {
            "source_id": 1 + i % 100, "url": f"http://h{i % HOSTS}.example/",
            "status": "paused" if i % 100 == 0 else "scheduled", "interval_minutes": 60,
            "interval_type": "minutes", "schedule_enabled": True, "adaptive_scheduling": True,
            "max_retries": 3, "retry_backoff_seconds": 60, "current_retry_count": 0,
            "next_run_at": now + (i * 7) % 86400, "is_paused": i % 100 == 0,
            "metadata": "{}", "created_at": now, "updated_at": now,
        }  # fmt: skip

    with engine.begin() as conn:
        conn.execute(insert(crawls).values(id=1, name="default", created_at=now, seeds="[]"))
        conn.execute(
            insert(sources),
            [
                {"name": f"s{i}", "start_urls": json.dumps([f"http://h{i}.example/"]),
                 "max_depth": 0, "scope": "{}", "max_pages": 0, "enabled": True,
                 "created_at": now, "updated_at": now}
                for i in range(100)
            ],
        )  # fmt: skip
        conn.execute(
            insert(domains),
            [{"host": f"h{i}.example", "updated_at": now, "page_count": 0} for i in range(HOSTS)],
        )
    for table, n, make in ((urls, n_urls, url_row), (crawled_pages, n_pages, page_row),
                           (jobs, n_jobs, job_row)):  # fmt: skip
        for rows in _chunks(n, make):
            with engine.begin() as conn:
                conn.execute(insert(table), rows)
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
        # ids given: rows inserted with an explicit id leave a PostgreSQL sequence behind
        conn.execute(insert(crawls).values(id=2, name=marker, created_at=now, seeds="[]"))
    return True


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and all its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values) or [float("nan")]
    return ordered[len(ordered) // 2], ordered[max(0, int(len(ordered) * 0.99) - 1)]


async def time_polls(url: str, polls: int) -> list[float]:
    """``Scheduler.poll`` times (ms) on the store: each claims up to 4 due jobs."""
    from harvestman.jobs.records import ExecutionResult, ExecutionStatus
    from harvestman.jobs.scheduler import Scheduler
    from harvestman.store.jobs.db import JobStore

    class Done:
        async def run(self, *_: Any) -> ExecutionResult:
            return ExecutionResult(status=ExecutionStatus.COMPLETED)

    times = []
    async with JobStore(url) as store:
        scheduler = Scheduler(store, Done(), instance_id="bench")
        for _ in range(polls):
            started = time.perf_counter()
            await scheduler.poll()
            times.append((time.perf_counter() - started) * 1000)
            await scheduler.wait_idle()
    return times


async def sequential(
    base: str, path: str, n: int, token: str, pid: int
) -> tuple[list[float], float]:
    """``n`` requests one after another: latencies (ms) and ``serve``'s CPU per request (ms)."""
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(base, headers=headers) as client:
        async with client.get(path) as response:  # warm: the count cache, the page cache
            await response.read()
        cpu = cpu_seconds(pid)
        for _ in range(n):
            started = time.perf_counter()
            async with client.get(path) as response:
                await response.read()
                response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
        cpu = cpu_seconds(pid) - cpu
    return latencies, cpu * 1000 / max(n, 1)


async def load(
    base: str, path: str, rate: float, seconds: float, token: str
) -> tuple[list[float], float]:
    """Open loop: request i starts at ``i / rate`` s whatever the others do. Latencies (ms)
    and this generator's own CPU per request (ms)."""
    latencies: list[float] = []
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    timeout = aiohttp.ClientTimeout(total=60)
    connector = aiohttp.TCPConnector(limit=64)
    cpu = time.process_time()
    async with aiohttp.ClientSession(
        base, headers=headers, connector=connector, timeout=timeout
    ) as client:

        async def one() -> None:
            started = time.perf_counter()
            try:
                async with client.get(path) as response:
                    await response.read()
                    response.raise_for_status()
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors.append(str(exc)[:100])
                return
            latencies.append((time.perf_counter() - started) * 1000)

        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    cpu = time.process_time() - cpu
    if errors:
        print(f"  {path}: {len(errors)} requests failed, e.g. {errors[0]}")
    return latencies, cpu * 1000 / max(len(tasks), 1)


def endpoints(engine: Engine) -> list[tuple[str, str]]:
    """(label, path) of each list, first page and deep cursor page."""
    from harvestman.api.paging import encode_cursor
    from harvestman.store.jobs.tables import jobs
    from harvestman.store.schema import crawled_pages, urls

    with engine.connect() as conn:
        middle = {
            name: int(conn.execute(select(func.max(table.c.id))).scalar_one() or 0) // 2
            for name, table in (("jobs", jobs), ("pages", crawled_pages), ("urls", urls))
        }
    listed = [
        ("jobs", "/api/v1/jobs", "jobs", ""),
        ("jobs paused", "/api/v1/jobs?status=paused", "jobs", ""),
        ("pages", "/api/pages", "pages", ""),
        ("pages host", "/api/pages?host=h7.example", "pages", ""),
        ("pages 404", "/api/pages?status_code=404", "pages", ""),
        ("frontier", "/api/frontier/urls", "urls", ""),
        ("frontier pending", "/api/frontier/urls?status=pending", "urls", ""),
        ("frontier host", "/api/frontier/urls?host=h7.example", "urls", ""),
    ]
    paths = [("domains", "/api/domains"), ("domains ~h1", "/api/domains?host=h1")]
    for label, path, kind, _ in listed:
        paths.append((label, path))
        joiner = "&" if "?" in path else "?"
        cursor = encode_cursor(kind, middle[kind])
        paths.append((f"{label} deep", f"{path}{joiner}cursor={cursor}"))
    return paths


def serve_and_load(url: str, engine: Engine, args: argparse.Namespace) -> None:
    from harvestman.api.auth import Role, create_token

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    secret = secrets.token_hex(32)
    env = {
        **os.environ,
        "HARVESTMAN_DATABASE_URL": url,
        "HARVESTMAN_API_JWT_SECRET": secret,
        "HARVESTMAN_API_RATE_USER": "100000000",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--port", str(port), "--no-scheduler"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{base}/health", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(2)
        print(f"  serve idle RSS: {rss_mb(proc.pid):.0f} MB (target < 300)")
        token = create_token(secret, Role.USER)
        print(f"  {'endpoint':24s} sequential ({args.sequential} req)     "
              f"at {args.rate:g}/s for {args.seconds:g} s")  # fmt: skip
        print(f"  {'':24s} p50 ms  p99 ms  serve cpu   p50 ms   p99 ms  serve cpu  gen cpu")
        only = [label.strip() for label in args.only.split(",")] if args.only else None
        for label, path in endpoints(engine):
            if only is not None and label not in only:
                continue
            line = f"  {label:24s}"
            if args.sequential:
                times, serve_cpu = asyncio.run(
                    sequential(base, path, args.sequential, token, proc.pid)
                )
                p50, p99 = percentiles(times)
                line += f" {p50:6.1f}  {p99:6.1f}  {serve_cpu:6.2f} ms"
            if args.rate and args.seconds:
                cpu = cpu_seconds(proc.pid)
                times, gen_cpu = asyncio.run(load(base, path, args.rate, args.seconds, token))
                serve_cpu = (cpu_seconds(proc.pid) - cpu) * 1000 / max(len(times), 1)
                p50, p99 = percentiles(times)
                flag = "" if p99 < 100 else "  <-- above 100 ms"
                line += (f"  {p50:7.1f}  {p99:7.1f}  {serve_cpu:6.2f} ms  {gen_cpu:4.2f} ms"
                         f"{flag}")  # fmt: skip
            print(line, flush=True)
        print(f"  serve RSS after load: {rss_mb(proc.pid):.0f} MB")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--pages", type=int, default=500_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--polls", type=int, default=50)
    parser.add_argument("--sequential", type=int, default=200, help="requests (0: none)")
    parser.add_argument("--only", default="", help="endpoint labels, comma-separated")
    args = parser.parse_args()
    from harvestman.store import dialect

    shape = f"{args.urls}-{args.pages}-{args.jobs}-v1"
    databases = ("sqlite", "postgresql") if args.database == "both" else (args.database,)
    for database in databases:
        url = store_url(database, shape)
        engine = dialect.make_engine(url)
        print(f"{database}: {uptime()}")
        started = time.perf_counter()
        built = build(engine, args.urls, args.pages, args.jobs, f"bench-{shape}")
        verb = "built" if built else "cached"
        print(f"  store {verb} ({args.urls:,} urls, {args.pages:,} pages, {args.jobs:,} jobs) "
              f"in {time.perf_counter() - started:.1f} s")  # fmt: skip
        p50, p99 = percentiles(asyncio.run(time_polls(url, args.polls)))
        print(f"  scheduler poll: p50 {p50:.1f} ms  p99 {p99:.1f} ms over {args.polls} polls "
              "(target < 100)")  # fmt: skip
        serve_and_load(url, engine, args)
        engine.dispose()
        print(f"  after: {uptime()}")


if __name__ == "__main__":
    main()
