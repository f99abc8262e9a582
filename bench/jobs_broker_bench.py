"""Job executions over RabbitMQ, end to end: one ``serve``, two ``harvestman worker``s.

PostgreSQL, Redis and RabbitMQ on 127.0.0.1; a farm of websites on 127.0.0.1 (one host per
job, ``--pages`` pages, ``--delay`` s between requests: robots.txt's Crawl-delay and the
source's delay); ``serve`` and the workers are subprocesses (``tests/support/fleet.py``).

1. **Idle dispatch**: ``--idle`` jobs force-run one at a time, each waited for: force-run →
   running (the execution's ``started_at``, set when a worker takes it) with idle workers.
2. **Burst**: the other jobs force-run at once; a worker is SIGKILLed mid-execution and the
   other takes its execution over. Printed: force-run → running p50/p99 (mostly time waiting
   for a free worker), executions per minute (first force-run to last completion), and the
   checks: every execution completed, one per force-run, the killed one held by two workers
   in turn and no other; every page stored; pages fetched twice; the smallest gap between
   two requests to one host against the delay.

``--probe 200`` (the issue's probe was 2,000; scaled down for a shared 2-core machine): that
many jobs every minute, one small host each, due at once on two workers, for ``--minutes``:
the scheduler lag of the first crawls (an execution's start minus its planned time),
executions per minute, the most executions running at once.

``--lock-checks 100000`` measures the store's statements of dispatch among that many jobs:
one claim of 1,000, the queued count, a take, a worker's renewal.

``--transport`` instead measures the transports alone: publish → consume latency of one
message at a time through aio-pika (consumer on the publisher's event loop) and through Celery
(``celery_ping.py``, a ``celery worker`` subprocess), and the memory of each consumer.

    PYTHONPATH=src .venv/bin/python bench/jobs_broker_bench.py             # 50 jobs
    PYTHONPATH=src .venv/bin/python bench/jobs_broker_bench.py --probe 200 --pages 1
    PYTHONPATH=src .venv/bin/python bench/jobs_broker_bench.py --transport
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from conftest import POSTGRES_URL, REDIS_URL, pg_schema  # noqa: E402
from hostfarm import HostFarm  # noqa: E402
from support.fleet import BROKER_URL, Fleet, fleet, fleet_env  # noqa: E402
from test_distributed import crawled  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def holder_pid(holder: str) -> int:
    return int(holder.split(":")[-2])


async def kill_mid_way(
    running: Fleet, jobs: dict[int, int], farm: HostFarm
) -> tuple[int, asyncio.subprocess.Process]:
    workers = {w.pid: w for w in running.workers}
    while True:
        for job_id, port in jobs.items():
            job = await running.call("GET", f"/api/v1/jobs/{job_id}")
            holder = job.get("locked_by") or "queued:"
            fetched = sum(farm.hits[p] for p in farm.expected_pages() if p[0] == port)
            if not holder.startswith(("queued:", "publishing:")) and 2 <= fetched < farm.pages:
                victim = workers[holder_pid(holder)]
                victim.send_signal(signal.SIGKILL)
                return job_id, victim
        await asyncio.sleep(0.05)


def fleet_settings(args: argparse.Namespace) -> dict[str, str]:
    """The settings the bench changes: the worker's prefetch when given (else the default)."""
    return {"HARVESTMAN_BROKER_PREFETCH": str(args.prefetch)} if args.prefetch else {}


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most (start, end) spans that overlap at one time."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


async def end_to_end(args: argparse.Namespace) -> None:
    with pg_schema(POSTGRES_URL) as database_url:
        env = fleet_env(database_url, REDIS_URL, **fleet_settings(args))
        workdir = Path(tempfile.mkdtemp(prefix="bench-broker-"))
        async with (
            HostFarm(args.jobs, pages=args.pages, crawl_delay=args.delay) as farm,
            fleet(env, workdir, workers=args.workers) as running,
        ):
            jobs = {}
            for port, root in zip(farm.ports, farm.roots(), strict=True):
                jobs[await running.add_job(f"site-{port}", root, crawl_delay=args.delay)] = port
            asked: dict[int, float] = {}
            ids = list(jobs)
            idle, burst = ids[: args.idle], ids[args.idle :]
            for job_id in idle:
                asked[job_id] = time.time()
                await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")
                await running.wait_final([job_id])
            started = time.time()
            for job_id in burst:
                asked[job_id] = time.time()
                await running.call("POST", f"/api/v2/jobs/{job_id}/force-run")
            killed, victim = None, None
            if args.workers >= 2 and not args.no_kill:  # another worker takes over
                killed, victim = await kill_mid_way(running, {j: jobs[j] for j in burst}, farm)
            runs = await running.wait_final(ids)
            cpu = {w.pid: cpu_seconds(w.pid) for w in running.workers if w.returncode is None}
        stored = crawled(database_url)

    latency = {j: runs[j][0]["started_at"] - asked[j] for j in ids}
    idle_ms = [latency[j] * 1000 for j in idle]
    burst_s = [latency[j] for j in burst]
    last = max(runs[j][0]["completed_at"] for j in burst)
    per_minute = len(burst) / (last - started) * 60
    print(
        f"jobs: {args.jobs} ({args.idle} idle, {len(burst)} burst), {args.pages} pages + /"
        f" per host, delay {args.delay} s, {args.workers} workers,"
        f" prefetch {args.prefetch or 'default'}, {'no kill' if victim is None else 'one killed'}"
    )
    print(
        f"idle dispatch, force-run -> running: p50 {percentile(idle_ms, 0.5):.0f} ms,"
        f" max {max(idle_ms):.0f} ms"
    )
    print(
        f"burst, force-run -> running: p50 {percentile(burst_s, 0.5):.1f} s,"
        f" p99 {percentile(burst_s, 0.99):.1f} s (waiting for a free worker)"
    )
    print(f"burst: {per_minute:.1f} executions/min ({len(burst)} in {last - started:.1f} s)")
    # What politeness allows: each host's requests one delay apart, every host in parallel
    # (one job per host): the sum over hosts of requests x delay, divided by the hosts.
    ports = {jobs[j] for j in burst}
    requests = {port: sum(1 for _, p, path in farm.log if p == port) for port in ports}
    allowed = sum(max(0, n - 1) * args.delay for n in requests.values()) / len(ports)
    spans = [(runs[j][0]["started_at"], runs[j][0]["completed_at"]) for j in burst]
    print(
        f"burst makespan {last - started:.1f} s against {allowed:.2f} s politeness allows"
        f" ({len(ports)} hosts in parallel); at most {most_at_once(spans)} executions at once"
    )
    print(
        f"workers' CPU (alive at the end, since they started): {sum(cpu.values()):.1f} s,"
        f" {sum(cpu.values()) / len(ids):.2f} s per execution"
    )
    statuses = {s for rs in runs.values() for s in (r["status"] for r in rs)}

    once = all(len(rs) == 1 for rs in runs.values())
    holders = {j: [holder_pid(h) for h in runs[j][0]["metadata"]["holders"]] for j in ids}
    changed = {j for j, hs in holders.items() if len(hs) > 1}
    killed_said = (
        ""
        if victim is None or killed is None
        else (f" (killed: job {killed}, holders {holders[killed]}, victim pid {victim.pid})")
    )
    print(
        f"checks: statuses {sorted(statuses)}, one execution per force-run: {once},"
        f" changed hands: {sorted(changed)}{killed_said}"
    )
    complete = stored.get("completed") == farm.expected_pages()
    again = sum(max(0, farm.hits[p] - 1) for p in farm.expected_pages())
    unfetched = sum(1 for p in farm.expected_pages() if farm.hits[p] == 0)
    gaps = [gap for _, gap in farm.spacing()]
    print(
        f"pages: {len(farm.expected_pages())} expected, all stored: {complete},"
        f" {unfetched} never fetched,"
        f" {again} fetched twice; smallest gap to one host {min(gaps):.3f} s"
        f" (delay {args.delay} s)"
    )


async def probe(args: argparse.Namespace) -> None:
    """``--probe`` jobs every minute, due at once: the scheduler lag of their first crawls."""
    import psycopg

    n = args.probe
    with pg_schema(POSTGRES_URL) as database_url:
        env = fleet_env(database_url, REDIS_URL, **fleet_settings(args))
        workdir = Path(tempfile.mkdtemp(prefix="bench-probe-"))
        schema = database_url.rsplit("%3D", 1)[1]
        async with (
            HostFarm(n, pages=args.pages, crawl_delay=args.delay) as farm,
            fleet(env, workdir, workers=2) as running,
        ):
            for port, root in zip(farm.ports, farm.roots(), strict=True):
                await running.add_job(f"site-{port}", root, crawl_delay=args.delay)
            planned = time.time()
            with psycopg.connect(POSTGRES_URL, options=f"-csearch_path={schema}") as conn:
                conn.execute(
                    "UPDATE jobs SET interval_minutes = 1, next_run_at = %s", (planned,)
                )  # every minute from now: all due at once, as after a deploy
            await asyncio.sleep(args.minutes * 60)
            with psycopg.connect(POSTGRES_URL, options=f"-csearch_path={schema}") as conn:
                rows = conn.execute(
                    "SELECT job_id, execution_number, started_at, completed_at, status"
                    " FROM job_executions"
                ).fetchall()
                queued = conn.execute(
                    "SELECT count(*) FROM jobs WHERE locked_by LIKE 'queued:%%'"
                    " OR locked_by LIKE 'publishing:%%'"
                ).fetchone()
            fleet_logs = running.logs()
    first = [started - planned for _, number, started, _, _ in rows if number == 1]
    done = [r for r in rows if r[4] != "running"]
    spans = [(r[2], r[3]) for r in done]
    window = args.minutes * 60
    statuses = sorted({r[4] for r in rows})
    print(
        f"probe: {n} jobs every minute (one host each, {args.pages} pages + /, delay"
        f" {args.delay} s), 2 workers, prefetch {args.prefetch or 'default'},"
        f" {args.minutes} min"
    )
    if len(first) < n:
        print(f"  {n - len(first)} jobs never started")
    if first:
        print(
            f"  first crawls, scheduler lag (start - planned): p50 {percentile(first, 0.5):.1f}"
            f" s, p99 {percentile(first, 0.99):.1f} s, max {max(first):.1f} s"
        )
    print(
        f"  {len(done)} executions ended in {window:.0f} s ({len(done) / window * 60:.0f}/min,"
        f" {n} due per minute); at most {most_at_once(spans) if spans else 0} at once;"
        f" statuses {statuses}; waiting in the queue at the end: {queued[0] if queued else 0}"
    )
    if "failed" in statuses:
        print(fleet_logs[-2000:])


async def transport(args: argparse.Namespace) -> None:
    import aio_pika

    n = args.messages
    connection = await aio_pika.connect(BROKER_URL)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=1)
        queue = await channel.declare_queue(exclusive=True, auto_delete=True)
        received: asyncio.Queue[float] = asyncio.Queue()

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            received.put_nowait(time.perf_counter() - float(message.body))
            await message.ack()

        await queue.consume(on_message)
        pika_ms = []
        for _ in range(n):
            body = str(time.perf_counter()).encode()
            await channel.default_exchange.publish(
                aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
                routing_key=queue.name,
            )
            pika_ms.append(await received.get() * 1000)
    print(
        f"aio-pika, publish (confirmed, persistent) -> consumed, {n} one at a time:"
        f" p50 {percentile(pika_ms, 0.5):.2f} ms, p99 {percentile(pika_ms, 0.99):.2f} ms;"
        f" consumer: a coroutine in the worker's process, no extra process"
    )
    celery_report(n)


def celery_report(n: int) -> None:
    try:
        import celery  # noqa: F401
        import redis
    except ImportError:
        print("celery: not installed (pip install celery) - skipped")
        return
    key = f"bench-ping-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PING_BROKER": BROKER_URL, "PING_REDIS": REDIS_URL, "PING_KEY": key}
    client = redis.Redis.from_url(REDIS_URL)
    for pool in ("solo", "prefork"):
        queue = f"{key}-{pool}"
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "celery_ping", "worker", "--pool", pool,
             "--concurrency", "2", "-Q", queue, "--loglevel", "WARNING", "--without-gossip",
             "--without-mingle", "--without-heartbeat"],
            cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            sys.path.insert(0, str(HERE))
            os.environ.update(PING_BROKER=BROKER_URL, PING_REDIS=REDIS_URL, PING_KEY=key)
            from celery_ping import ping

            ping.apply_async(args=[time.time()], queue=queue)
            client.blpop([key], timeout=60)  # the worker is up
            ms = []
            for _ in range(n):
                ping.apply_async(args=[time.time()], queue=queue)
                _, value = client.blpop([key], timeout=30)  # type: ignore[misc]
                ms.append(float(value) * 1000)
            rss = process_tree_rss_mb(worker.pid)
        finally:
            worker.terminate()
            worker.wait(30)
            client.delete(key)
        print(
            f"celery ({pool} pool, concurrency 2), apply_async -> task body, {n} one at a"
            f" time: p50 {percentile(ms, 0.5):.2f} ms, p99 {percentile(ms, 0.99):.2f} ms;"
            f" worker processes' RSS {rss:.0f} MB"
        )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` and its children (parse processes) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def process_tree_rss_mb(pid: int) -> float:
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    total = 0
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


async def lock_checks(args: argparse.Namespace) -> None:
    """The store's side of dispatch with ``--lock-checks`` jobs in PostgreSQL: claim a batch
    of ``broker_max_queued`` (1,000), count the queued, take each, renew a worker's locks."""
    import psycopg

    from harvestman.store import SqlStore
    from harvestman.store.jobs.db import JobStore
    from harvestman.store.jobs.handover import queued_holder

    n = args.lock_checks
    with pg_schema(POSTGRES_URL) as database_url:
        async with SqlStore(database_url) as store:
            await store.upgrade()
        schema = database_url.rsplit("%3D", 1)[1]
        now = time.time()
        with psycopg.connect(POSTGRES_URL, options=f"-csearch_path={schema}") as conn:
            # One source per job: a source runs one execution at a time.
            conn.execute(
                "INSERT INTO sources (name, start_urls, max_depth, scope, max_pages, enabled,"
                " created_at, updated_at) SELECT 's' || g, '[]', 0, '{}', 0, false, %s, %s"
                " FROM generate_series(1, %s) g",
                (now, now, n),
            )
            # Every job hourly, due over the next hour: 1/60 of them due in any minute.
            conn.execute(
                "INSERT INTO jobs (source_id, url, status, interval_minutes, interval_type,"
                " schedule_enabled, adaptive_scheduling, max_retries, retry_backoff_seconds,"
                " current_retry_count, next_run_at, is_paused, metadata, created_at, updated_at)"
                " SELECT g, 'http://a.example/' || g, 'scheduled', 60, 'minutes', true, false,"
                " 3, 60, 0, %s + (g %% 3600) - 1800, false, '{}', %s, %s"
                " FROM generate_series(1, %s) g",
                (now, now, now, n),
            )
            conn.execute("ANALYZE jobs")
        async with SqlStore(database_url) as store, JobStore(store.engine) as jobs:
            holder = queued_holder("leader")
            started = time.perf_counter()
            claims = await jobs.locks.claim_due(holder, 1000)
            claim_ms = (time.perf_counter() - started) * 1000
            counts = []
            for _ in range(20):
                started = time.perf_counter()
                queued = await jobs.handover.queued()
                counts.append((time.perf_counter() - started) * 1000)
            takes, tokens, job_of = [], [], {}
            for claim in claims:
                started = time.perf_counter()
                taken = await jobs.handover.take(
                    claim.job.id, claim.execution.id, "worker", takeover_after=30
                )
                takes.append((time.perf_counter() - started) * 1000)
                assert taken.claim is not None
                tokens.append(taken.claim.token)
                job_of[taken.claim.token] = claim.job.id
            by_token, by_id = [], []
            for i in range(0, 300, 3):  # a worker with 3 runs renews them in one statement
                started = time.perf_counter()
                await jobs.locks.renew(tokens[i : i + 3])
                by_token.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                await jobs.locks.renew({t: job_of[t] for t in tokens[i : i + 3]})
                by_id.append((time.perf_counter() - started) * 1000)
    print(
        f"{n} jobs, {len(claims)} claimed in one claim_due: {claim_ms:.0f} ms;"
        f" queued count ({queued}): p50 {percentile(counts, 0.5):.1f} ms;"
        f" take: p50 {percentile(takes, 0.5):.1f} ms, p99 {percentile(takes, 0.99):.1f} ms;"
        f" renew of 3 locks by token alone: p50 {percentile(by_token, 0.5):.1f} ms,"
        f" by job id and token: p50 {percentile(by_id, 0.5):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--idle", type=int, default=5, help="jobs run one at a time first")
    parser.add_argument("--pages", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--prefetch", type=int, default=0, help="0: the default")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-kill", action="store_true", help="no worker killed in the burst")
    parser.add_argument("--probe", type=int, default=0, metavar="JOBS",
                        help="JOBS jobs every minute: the scheduler lag")  # fmt: skip
    parser.add_argument("--minutes", type=float, default=3.0, help="how long --probe runs")
    parser.add_argument("--transport", action="store_true", help="the transports alone")
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--lock-checks", type=int, default=0, metavar="JOBS",
                        help="the store's dispatch statements among JOBS jobs")  # fmt: skip
    args = parser.parse_args()
    if args.lock_checks:
        asyncio.run(lock_checks(args))
    elif args.probe:
        asyncio.run(probe(args))
    else:
        asyncio.run(transport(args) if args.transport else end_to_end(args))


if __name__ == "__main__":
    main()
