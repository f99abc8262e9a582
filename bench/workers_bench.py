"""End-to-end pages/s of 1 vs 2 ``harvestman worker`` processes on PostgreSQL + Redis.

The synthetic site of ``crawl_bench.py`` (one host of 20,000 pages of ~20 KB by default) is served
by nginx on 127.0.0.1. For each worker count a fresh PostgreSQL schema and a fresh Redis key
prefix are made; ``harvestman db upgrade`` and ``harvestman seed`` prepare the crawl, then the
workers run with politeness off and ``--exit-when-done``:

    harvestman worker --exit-when-done --delay 0 --per-host-concurrency 64 --concurrency 64

with their settings from the environment (``HARVESTMAN_DATABASE_URL``, ``HARVESTMAN_REDIS_URL``,
``HARVESTMAN_REDIS_PREFIX``, ``HARVESTMAN_CRAWL_MAX_DEPTH=20``,
``HARVESTMAN_FRONTIER_REFRESH_INTERVAL=1`` so an idle worker notices the end within a second).

Printed per run: wall (first worker started to last worker exited), pages/s (completed URLs /
wall), CPU of each worker (``os.wait4``), of nginx, of every PostgreSQL process and of Redis
(from ``/proc``, over the run), and the checks: the store's counts equal the manifest's, and
nginx's access log shows every allowed page fetched exactly once (duplicates are listed).

    .venv/bin/python bench/workers_bench.py                 # 1 then 2 workers
    .venv/bin/python bench/workers_bench.py --workers 1,2,3 --pages 5000
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawl_bench import check_server, diff_paths, verdict
from pg_frontier import DEFAULT_URL, bench_schema, create_candidate_indexes, server_started_at
from pg_load import BackendCpu, cpu_seconds, with_application_name
from serve import StaticServer, start_server
from synthsite import SiteParams, describe, load_or_generate

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
HARVESTMAN = REPO / ".venv" / "bin" / "harvestman"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


@dataclass
class WorkerRun:
    returncode: int
    cpu: float
    max_rss_mb: float
    exited: float  # seconds after the first worker started


@dataclass
class RunFigures:
    workers: list[WorkerRun]
    wall: float
    server_cpu: float
    postgres_cpu: float
    redis_cpu: float
    statuses: dict[str, int]
    pages: int
    completed: list[str]
    others: list[str]
    fetches: Counter[str]
    timeline: list[int]  # completed pages every 5 s


def redis_cpu_seconds() -> float:
    """CPU seconds of the redis-server process(es) on this machine (shared with other clients)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "redis-server":
                    total += cpu_seconds(int(entry.name)) or 0.0
            except OSError:
                continue
    return total


def cli(env: dict[str, str], *args: str, log: Path) -> None:
    with log.open("ab") as output:
        done = subprocess.run(
            [str(HARVESTMAN), *args], env=env, stdout=output, stderr=output, check=False
        )
    if done.returncode != 0:
        raise RuntimeError(f"harvestman {' '.join(args)} failed: see {log}")


def wait_measured(
    process: subprocess.Popen[bytes], into: list[WorkerRun | None], i: int, started: float
) -> None:
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    into[i] = WorkerRun(
        process.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
        time.perf_counter() - started,
    )  # fmt: skip


class Progress(threading.Thread):
    """Completed pages every ``every`` seconds, to show where a run's time went."""

    def __init__(self, url: str, every: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.every = every
        self.counts: list[int] = []
        self._done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._done.wait(self.every):
                row = conn.execute(
                    "SELECT count(*) FROM urls WHERE status = 'completed' AND kind = 'page'"
                ).fetchone()
                self.counts.append(int(row[0]) if row else 0)

    def stop(self) -> list[int]:
        self._done.set()
        self.join()
        return self.counts


def read_store(url: str) -> tuple[dict[str, int], int, list[str], list[str]]:
    """Page rows by status, crawled_pages rows, completed page URLs, and the other rows.

    The manifest counts pages; rows of another kind (the engine probes ``/sitemap.xml``, a 404
    on this site) are listed apart and do not fail the check."""
    with psycopg.connect(url) as conn:
        statuses = {
            s: int(n)
            for s, n in conn.execute(
                "SELECT status, count(*) FROM urls WHERE kind = 'page' GROUP BY 1"
            )
        }
        row = conn.execute("SELECT count(*) FROM crawled_pages").fetchone()
        completed = [
            u
            for (u,) in conn.execute(
                "SELECT url FROM urls WHERE status = 'completed' AND kind = 'page'"
            )
        ]
        others = [
            f"{kind} {status} {url}"
            for kind, status, url in conn.execute(
                "SELECT kind, status, url FROM urls WHERE kind <> 'page' ORDER BY id LIMIT 5"
            )
        ]
    return statuses, int(row[0]) if row else 0, completed, others


def fetches_since(access_log: Path, since: float) -> Counter[str]:
    """Requests per ``port path`` in nginx's ``$msec $server_port $status $request_uri`` log."""
    counts: Counter[str] = Counter()
    for line in access_log.read_text().splitlines():
        stamp, port, _status, uri = line.split(" ", 3)
        if float(stamp) >= since:
            counts[f"{port} {uri}"] += 1
    return counts


def run_workers(
    count: int, args: argparse.Namespace, server: StaticServer, run: Path
) -> RunFigures:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    with bench_schema(args.database_url) as url:
        env = {
            **os.environ,
            "HARVESTMAN_DATABASE_URL": url,
            "HARVESTMAN_REDIS_URL": args.redis_url,
            "HARVESTMAN_REDIS_PREFIX": prefix,
            "HARVESTMAN_CRAWL_NAME": "bench",
            "HARVESTMAN_CRAWL_MAX_DEPTH": str(args.max_depth),
            "HARVESTMAN_FRONTIER_REFRESH_INTERVAL": "1",
        }
        setup_log = run / "setup.log"
        cli(env, "db", "upgrade", log=setup_log)
        if args.candidate_indexes:
            create_candidate_indexes(url)
        application = f"bench-workers-{prefix}"
        env["HARVESTMAN_DATABASE_URL"] = with_application_name(url, application)
        cli(env, "seed", *[f"http://127.0.0.1:{port}/" for port in server.ports], log=setup_log)
        command = [
            str(HARVESTMAN), "worker", "--exit-when-done", "--delay", f"{args.delay:g}",
            "--per-host-concurrency", str(args.per_host_concurrency),
            "--concurrency", str(args.concurrency),
        ]  # fmt: skip
        print(f"workers          {count} x {' '.join(command[1:])}")
        restarts = server_started_at(args.database_url)
        since = time.time()
        server_before = server.cpu_seconds()
        backends = BackendCpu(url, application)
        backends.start()
        progress = Progress(url)
        progress.start()
        redis_before = redis_cpu_seconds()
        started = time.perf_counter()
        results: list[WorkerRun | None] = [None] * count
        waiters = []
        for i in range(count):
            with (run / f"worker{i}.log").open("wb") as log:
                process = subprocess.Popen(
                    command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=REPO
                )
            waiter = threading.Thread(target=wait_measured, args=(process, results, i, started))
            waiter.start()
            waiters.append((process, waiter))
        deadline = time.monotonic() + args.timeout
        for process, waiter in waiters:
            waiter.join(max(0.0, deadline - time.monotonic()))
            if waiter.is_alive():
                print(f"timeout: killing worker {process.pid}")
                process.kill()
                waiter.join()
        wall = time.perf_counter() - started
        server_cpu = server.cpu_seconds() - server_before
        postgres_cpu = backends.stop()
        timeline = progress.stop()
        redis_cpu = redis_cpu_seconds() - redis_before
        if server_started_at(args.database_url) != restarts:
            print("WARNING: PostgreSQL restarted during the run (someone else's test?)")
        statuses, pages, completed, others = read_store(url)
        assert server.access_log is not None
        fetches = fetches_since(server.access_log, since)
        client = redis.Redis.from_url(args.redis_url)
        keys = list(client.scan_iter(f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
    return RunFigures(
        [r for r in results if r is not None], wall, server_cpu, postgres_cpu, redis_cpu,
        statuses, pages, completed, others, fetches, timeline,
    )  # fmt: skip


def report(count: int, figures: RunFigures, manifest: dict[str, object]) -> tuple[float, bool]:
    expected_allowed = int(manifest["expected_allowed"])  # type: ignore[call-overload]
    expected_denied = int(manifest["expected_denied"])  # type: ignore[call-overload]
    statuses = figures.statuses
    done, blocked = statuses.get("completed", 0), statuses.get("blocked", 0)
    others = {k: v for k, v in statuses.items() if k not in ("completed", "blocked") and v}
    rate = done / figures.wall if figures.wall else 0.0
    page_fetches = {k: n for k, n in figures.fetches.items() if not k.endswith(" /robots.txt")}
    twice = {k: n for k, n in page_fetches.items() if n > 1}
    worker_cpu = sum(w.cpu for w in figures.workers)
    print(f"pages            {done}  (crawled_pages rows: {figures.pages})")
    print(f"wall             {figures.wall:.1f} s")
    print(f"pages/s          {rate:.0f}")
    exits = ", ".join(f"{w.exited:.1f} s" for w in figures.workers)
    print(f"workers exited   {exits}; completed pages every 5 s: {figures.timeline}")
    print(
        "worker CPU       "
        + ", ".join(f"{w.cpu:.1f} s ({w.cpu / figures.wall:.0%})" for w in figures.workers)
        + f"; peak RSS {max(w.max_rss_mb for w in figures.workers):.0f} MB"
    )
    everything = worker_cpu + figures.server_cpu + figures.postgres_cpu + figures.redis_cpu
    print(
        f"other CPU        nginx {figures.server_cpu:.1f} s, PostgreSQL backends"
        f" {figures.postgres_cpu:.1f} s, Redis {figures.redis_cpu:.1f} s; all together"
        f" {everything / figures.wall:.2f} cores of 2"
    )
    print(f"completed        {done} / expected {expected_allowed}")
    print(f"blocked          {blocked} / expected {expected_denied}")
    print(f"other statuses   {others or 'none'}")
    if figures.others:
        print(f"not pages        {'; '.join(figures.others)}")
    print(f"page fetches     {sum(page_fetches.values())}; fetched more than once: {len(twice)}")
    if twice:
        print(f"                 e.g. {sorted(twice.items())[:5]}")
    exact = done == expected_allowed and blocked == expected_denied and not others
    if done != expected_allowed:
        hosts = manifest["hosts"]
        allowed = {p for host in hosts for p in host["allowed_paths"]}  # type: ignore[attr-defined]
        print(f"difference       {diff_paths(figures.completed, allowed)}")
    passed = verdict(
        {
            "exact counts": exact,
            "each page once": not twice,
            "workers exit 0": all(w.returncode == 0 for w in figures.workers),
        }
    )
    return rate, passed


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts to run, comma-separated")
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--pages", type=int, default=20_000, help="pages in all hosts together")
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--per-host-concurrency", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=600.0, help="kill workers after")
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--server", choices=["auto", "nginx", "python"], default="auto")
    parser.add_argument(
        "--candidate-indexes", action="store_true", help="create docs/SCALING.md's indexes first"
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    params = SiteParams(args.pages, args.hosts, args.seed, args.page_bytes, args.max_depth)
    site, manifest = load_or_generate(params, OUT)
    print(f"site             {describe(manifest)}")
    hosts: list[dict[str, object]] = manifest["hosts"]  # type: ignore[assignment]
    roots = [site / str(host["dir"]) for host in hosts]
    rates: dict[int, float] = {}
    passed = True
    with start_server(roots, access_log=True, prefer=args.server) as server:
        print(f"server           {server.name} on 127.0.0.1:{server.ports[0]}")
        print(f"server check     ok ({check_server(server, site, hosts)} requests)")
        for count in counts:
            run = OUT / "runs" / f"workers-{count}"
            shutil.rmtree(run, ignore_errors=True)
            run.mkdir(parents=True)
            print("-" * 72)
            figures = run_workers(count, args, server, run)
            rates[count], ok = report(count, figures, manifest)
            passed = passed and ok
    if len(rates) > 1:
        base = rates[counts[0]]
        print("-" * 72)
        for count in counts:
            print(f"{count} worker(s)      {rates[count]:.0f} pages/s ({rates[count] / base:.2f}x)")
    return 0 if passed else 1


if __name__ == "__main__":
    # A plain SIGTERM would skip the finally blocks that drop the schema and the Redis keys.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
