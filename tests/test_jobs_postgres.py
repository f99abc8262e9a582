"""Several schedulers on one PostgreSQL: no job runs twice, one leader at a time."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select

from harvestman.jobs.lifecycle import NextStep
from harvestman.jobs.records import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    JobSpec,
    LogLine,
    Source,
    SourceSpec,
)
from harvestman.jobs.states import JobStatus
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease
from harvestman.store.jobs.tables import job_executions
from support.scheduling import make_scheduler

NOW = 1_800_000_000.0
JOBS = 120


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class RecordingRunner:
    def __init__(self, runs: list[tuple[str, int]], name: str) -> None:
        self.runs = runs
        self.name = name

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        self.runs.append((self.name, job.id))
        await asyncio.sleep(0.001 * (job.id % 5))
        return ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=1)


@pytest.fixture
async def stores(pg_schema_url: str) -> AsyncIterator[tuple[JobStore, JobStore]]:
    clock = Clock()
    engines = [dialect.make_engine(pg_schema_url) for _ in range(2)]
    migrate.upgrade(engines[0])
    async with (
        JobStore(engines[0], clock=clock) as first,
        JobStore(engines[1], clock=clock) as second,
    ):
        for i in range(JOBS):  # one source each: a source runs one execution at a time
            source = await first.sources.create(
                SourceSpec(name=f"s{i}", start_urls=[f"http://a.test/{i}"])
            )
            await first.jobs.create(
                JobSpec(source_id=source.id, url=f"http://a.test/{i}", next_run_at=NOW - i % 7)
            )
        yield first, second
    for engine in engines:
        engine.dispose()


async def test_two_schedulers_polling_one_postgres_never_run_the_same_job(
    stores: tuple[JobStore, JobStore],
) -> None:
    runs: list[tuple[str, int]] = []
    schedulers = [
        make_scheduler(store, RecordingRunner(runs, name), instance_id=name, jobs_max_concurrent=16)
        for store, name in zip(stores, ("a", "b"), strict=True)
    ]
    for _ in range(100):
        await asyncio.gather(*(s.poll() for s in schedulers))
        await asyncio.sleep(0.002)
        if (await stores[0].jobs.status_counts())["completed"] == JOBS:
            break
    await asyncio.gather(*(s.wait_idle() for s in schedulers))
    per_job = Counter(job_id for _, job_id in runs)
    assert (len(per_job), max(per_job.values())) == (JOBS, 1)
    per_instance = Counter(name for name, _ in runs)
    assert per_instance["a"] > 0
    assert per_instance["b"] > 0
    assert (await stores[1].jobs.status_counts())["completed"] == JOBS
    with stores[0].engine.connect() as conn:
        numbers = conn.execute(
            select(func.count(), func.max(job_executions.c.execution_number))
        ).one()
    assert tuple(numbers) == (JOBS, 1)


async def test_racing_claims_take_each_job_once(stores: tuple[JobStore, JobStore]) -> None:
    claims = await asyncio.gather(
        *(store.locks.claim_due(f"claimer-{i}", 25) for i in range(4) for store in stores)
    )
    taken = [claim.job.id for batch in claims for claim in batch]
    assert len(taken) == len(set(taken)) == min(JOBS, 8 * 25)
    again = await stores[1].locks.claim_due("late", JOBS)
    assert len(again) == JOBS - len(taken)
    running = await stores[0].jobs.list(status=JobStatus.RUNNING, limit=JOBS)
    assert running.total == JOBS


async def test_racing_claims_take_one_job_of_a_source_at_a_time(
    stores: tuple[JobStore, JobStore],
) -> None:
    source = await stores[0].sources.create(SourceSpec(name="one", start_urls=["http://o.test/"]))
    ids = [
        (await stores[0].jobs.create(JobSpec(source_id=source.id, url=f"http://o.test/{i}"))).id
        for i in range(3)
    ]
    claims = await asyncio.gather(
        *(store.locks.claim_due(f"claimer-{i}", 1, only=ids) for i in range(4) for store in stores)
    )
    [claim] = [claim for batch in claims for claim in batch]
    assert await stores[1].locks.claim_due("late", 10, only=ids) == []  # still one at a time
    step = NextStep(JobStatus.COMPLETED, None, 0, (JobStatus.COMPLETED,))
    await stores[0].locks.finish(claim, ExecutionResult(status=ExecutionStatus.COMPLETED), step)
    [following] = await stores[1].locks.claim_due("late", 10, only=ids)  # the next, once ended
    assert following.job.id != claim.job.id


async def test_a_finish_repeated_after_its_commit_changes_nothing(
    stores: tuple[JobStore, JobStore],
) -> None:
    """What a worker does when the answer to its finish was lost: it finishes again (the
    scheduler waits out the outage). The lock is already released, so the second finish
    leaves the execution and the job as the first left them, not cancelled."""
    [claim] = await stores[0].locks.claim_due("worker", 1)
    result = ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=7)
    step = NextStep(JobStatus.SCHEDULED, NOW + 3600, 0, (JobStatus.SCHEDULED,))
    first = await stores[0].locks.finish(claim, result, step)
    again = await stores[1].locks.finish(claim, result, step)
    execution = await stores[0].executions.latest(claim.job.id)
    job = await stores[0].jobs.get(claim.job.id)
    assert (first, again) == (JobStatus.SCHEDULED, JobStatus.SCHEDULED)
    assert execution is not None
    assert (execution.status, execution.items_crawled) == (ExecutionStatus.COMPLETED, 7)
    assert (job.status, job.next_run_at, job.lock_token) == (JobStatus.SCHEDULED, NOW + 3600, None)


async def test_a_log_line_holding_nul_is_stored_without_it(
    stores: tuple[JobStore, JobStore],
) -> None:
    """PostgreSQL refuses text holding NUL; one such line (a page's text in an error message)
    would have every line of its flush refused with it."""
    [claim] = await stores[0].locks.claim_due("worker", 1)
    lines = [
        LogLine(claim.execution.id, 1, NOW, "INFO", "x", "before"),
        LogLine(claim.execution.id, 2, NOW, "WARNING", "x", "title Ket\x00tle"),
    ]
    await stores[0].executions.append_logs(lines)
    stored = await stores[0].executions.logs(claim.execution.id)
    assert [line.message for line in stored] == ["before", "title Kettle"]


async def test_one_leader_at_a_time_on_postgres(stores: tuple[JobStore, JobStore]) -> None:
    clock = stores[0].clock
    assert isinstance(clock, Clock)
    leases = [LeaderLease(store, f"instance-{i}", ttl=30) for i, store in enumerate(stores * 3)]
    for _ in range(5):
        won = await asyncio.gather(*(lease.acquire() for lease in leases))
        assert sum(won) == 1
        clock.now += 31  # whoever held it stops renewing; the next round elects again


async def test_two_instances_reconciling_one_source_at_once_create_one_job(
    stores: tuple[JobStore, JobStore],
) -> None:
    source = await stores[0].sources.create(SourceSpec(name="new", start_urls=["http://n.test/"]))
    schedulers = [make_scheduler(store, None) for store in stores * 4]  # type: ignore[arg-type]
    plans = await asyncio.gather(*(s.source_changed(source.id) for s in schedulers))
    created = [job_id for plan in plans for job_id in plan.created_jobs]
    assert len(created) == 1
    assert (await stores[1].jobs.list(source_id=source.id)).total == 1
