"""Time a scheduler poll with 10,000 recurring jobs on SQLite and PostgreSQL; print the figures.

The store holds ``--jobs`` recurring jobs spread over the next 24 hours (as the balancer places
them) and ``--executions-per-job`` past executions each; ``--due`` of the jobs are overdue.
Each timed poll renews the locks of the runs in progress, looks for due jobs and takes up to
``max_concurrent`` (4) of them, opening an execution for each. Also timed: a poll with
nothing due, placing one new job, the distribution and a rebalance preview.

Run: ``.venv/bin/python bench/bench_scheduler.py [--postgres URL] [--skip-postgres]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, insert, text

from harvestman.jobs.records import ExecutionResult, ExecutionStatus, JobSpec, SourceSpec
from harvestman.jobs.scheduler import Scheduler
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.tables import job_executions, jobs

NOW = 1_800_000_000.0
POSTGRES_URL = os.environ.get(
    "HARVESTMAN_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class InstantRunner:
    async def run(self, *_: Any) -> ExecutionResult:
        return ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=1)


def fill(engine: Any, source_id: int, n_jobs: int, due: int, per_job: int) -> None:
    rng = random.Random(7)
    intervals = [30, 60, 120, 360, 720, 1440]  # minutes
    rows = []
    for i in range(n_jobs):
        interval = rng.choice(intervals)
        next_run = NOW - rng.uniform(1, 600) if i < due else NOW + rng.uniform(60, 86400)
        rows.append(
            {
                "source_id": source_id,
                "url": f"http://site-{i % 500}.test/section/{i}",
                "status": "scheduled",
                "interval_minutes": interval,
                "interval_type": "minutes",
                "schedule_enabled": True,
                "adaptive_scheduling": True,
                "max_retries": 3,
                "retry_backoff_seconds": 60,
                "current_retry_count": 0,
                "next_run_at": next_run,
                "is_paused": False,
                "last_moved_at": NOW - 86400,
                "metadata": "{}",
                "created_at": NOW - 86400 * 30,
                "updated_at": NOW - 86400,
            }
        )
    with engine.begin() as conn:
        for start in range(0, len(rows), 2000):
            conn.execute(insert(jobs), rows[start : start + 2000])
        ids = [row[0] for row in conn.execute(text("SELECT id FROM jobs ORDER BY id"))]
        batch = []
        for job_id in ids:
            for n in range(1, per_job + 1):
                started = NOW - n * 3600.0
                batch.append(
                    {
                        "job_id": job_id,
                        "execution_number": n,
                        "status": "completed",
                        "started_at": started,
                        "completed_at": started + 20,
                        "duration_ms": 20000,
                        "items_crawled": 40,
                        "items_indexed": 38,
                        "retry_attempt": 0,
                        "metadata": "{}",
                    }
                )
            if len(batch) >= 5000:
                conn.execute(insert(job_executions), batch)
                batch = []
        if batch:
            conn.execute(insert(job_executions), batch)


async def timed(fn: Callable[[], Awaitable[object]], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def show(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"  {name:<34} median {statistics.median(samples):7.2f} ms   p99 {p99:7.2f} ms"
        f"   max {max(samples):7.2f} ms   (n={len(samples)})"
    )


async def bench(url: str, label: str, args: argparse.Namespace) -> bool:
    engine = dialect.make_engine(url)
    migrate.upgrade(engine)
    clock = Clock()
    async with JobStore(engine, clock=clock) as store:
        source = await store.sources.create(SourceSpec(name="bench", start_urls=["http://a.test/"]))
        started = time.perf_counter()
        fill(engine, source.id, args.jobs, args.due, args.executions_per_job)
        filled = time.perf_counter() - started
        with engine.begin() as conn:
            if dialect.is_sqlite(engine):
                conn.exec_driver_sql("ANALYZE")
            else:
                conn.exec_driver_sql("ANALYZE jobs")
                conn.exec_driver_sql("ANALYZE job_executions")
        scheduler = Scheduler(store, InstantRunner(), instance_id="bench", max_concurrent=4)
        executions = args.jobs * args.executions_per_job
        print(f"{label}: {args.jobs} jobs ({args.due} overdue), {executions} executions,", end="")
        print(f" filled in {filled:.1f} s")

        async def poll_and_finish() -> None:
            await scheduler.poll()

        due_polls = []
        for _ in range(args.polls):
            due_polls += await timed(poll_and_finish, 1)
            await scheduler.wait_idle()  # the runs finish outside the timing
        idle_clock = clock.now
        clock.now = NOW - 3600  # nothing is due an hour earlier
        idle = await timed(scheduler.poll, args.polls)
        clock.now = idle_clock
        place = await timed(
            lambda: store.jobs.create(
                JobSpec(source_id=source.id, url="http://new.test/", interval_minutes=60)
            ),
            20,
        )
        dist = await timed(store.jobs.distribution, 10)
        preview = await timed(lambda: store.jobs.rebalance(dry_run=True), 5)
        print(show("poll, 4 due jobs taken", due_polls))
        print(show("poll, nothing due", idle))
        print(show("create a job (least-loaded slot)", place))
        print(show("distribution", dist))
        print(show("rebalance preview", preview))
        print(f"  jobs run: {scheduler.counters['claimed']}")
    engine.dispose()
    p99 = sorted(due_polls)[round(0.99 * (len(due_polls) - 1))]
    ok = p99 < 100 and max(idle) < 100
    print(f"  {'PASS' if ok else 'FAIL'}  poll p99 < 100 ms with {args.jobs} jobs")
    return ok


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--due", type=int, default=400)
    parser.add_argument("--executions-per-job", type=int, default=10)
    parser.add_argument("--polls", type=int, default=100)
    parser.add_argument("--postgres", default=POSTGRES_URL)
    parser.add_argument("--skip-postgres", action="store_true")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        ok &= await bench(f"sqlite:///{Path(tmp) / 'bench.db'}", "SQLite", args)
    if not args.skip_postgres:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.postgres.replace("postgresql://", "postgresql+psycopg://", 1))
        with admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        try:
            ok &= await bench(
                f"{args.postgres}?options=-csearch_path%3D{schema}", "PostgreSQL", args
            )
        finally:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
            admin.dispose()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
