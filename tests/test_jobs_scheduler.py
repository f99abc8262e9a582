"""The scheduler on a controllable clock: polling, runs, retries, cancellation, stale locks,
history pruning, metrics, log capture and the leader lease."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select

from harvestman.errors import StoreError, StoreRejected
from harvestman.jobs.logs import LogCapture, LogWriter
from harvestman.jobs.outcome import INTERRUPTED
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
from harvestman.jobs.scheduler import Scheduler
from harvestman.jobs.states import JobStatus
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease
from harvestman.store.jobs.locks import LOCK_EXPIRED
from harvestman.store.jobs.tables import execution_logs, job_executions
from support.scheduling import make_scheduler

NOW = 1_800_000_000.0
DAY = 86400.0
crawl_log = logging.getLogger("harvestman.test.crawl")


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class ScriptedRunner:
    """Answers each run from a script (a result, or an exception to raise); completed by
    default. With ``hold``, a run waits for ``stop`` and then reports success."""

    def __init__(self) -> None:
        self.script: list[ExecutionResult | Exception] = []
        self.calls: list[tuple[int, int, int]] = []  # job id, execution number, retry attempt
        self.hold = False
        self.stopped: list[int] = []
        self.started = asyncio.Event()
        self.say: asyncio.Queue[str] = asyncio.Queue()  # lines a held run logs

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        self.calls.append((job.id, execution.execution_number, execution.retry_attempt))
        crawl_log.info("crawling %s for %s", job.url, source.name)
        self.started.set()
        if self.hold:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    crawl_log.info(await asyncio.wait_for(self.say.get(), 0.01))
                    self.say.task_done()
            self.stopped.append(job.id)
            return ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=1)
        outcome = self.script.pop(0) if self.script else None
        if isinstance(outcome, Exception):
            raise outcome
        return outcome or ExecutionResult(
            status=ExecutionStatus.COMPLETED, items_crawled=5, items_indexed=4
        )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine, clock=clock) as job_store:
        yield job_store
    engine.dispose()


@pytest.fixture
def runner() -> ScriptedRunner:
    return ScriptedRunner()


@pytest.fixture
def scheduler(store: JobStore, runner: ScriptedRunner) -> Scheduler:
    return make_scheduler(store, runner, instance_id="here", jobs_max_concurrent=2)


async def _job(store: JobStore, *, source: str = "site", **fields: object) -> Job:
    """A job on the source named ``source`` (made when missing). A source runs one execution
    at a time: jobs meant to run at once each need their own."""
    page = await store.sources.list(name_contains=source)
    found = [item.id for item in page.items if item.name == source]
    if found:
        source_id = found[0]
    else:
        source_id = (
            await store.sources.create(SourceSpec(name=source, start_urls=["http://a.test/"]))
        ).id
    values: dict[str, object] = {"source_id": source_id, "url": "http://a.test/", **fields}
    return await store.jobs.create(JobSpec(**values))  # type: ignore[arg-type]


async def _poll(scheduler: Scheduler) -> list[int]:
    claims = await scheduler.poll()
    await scheduler.wait_idle()
    return [claim.job.id for claim in claims]


async def test_a_one_time_job_runs_at_once_and_rests_completed(
    store: JobStore, scheduler: Scheduler, clock: Clock
) -> None:
    job = await _job(store)
    assert await _poll(scheduler) == [job.id]
    done = await store.jobs.get(job.id)
    assert (done.status, done.next_run_at, done.lock_token, done.last_run_at) == (
        JobStatus.COMPLETED,
        None,
        None,
        NOW,
    )
    [execution] = (await store.executions.list(job.id)).items
    assert (execution.execution_number, execution.status, execution.items_crawled) == (
        1,
        ExecutionStatus.COMPLETED,
        5,
    )
    assert (execution.items_indexed, execution.started_at, execution.retry_attempt) == (4, NOW, 0)
    clock.now += 3600
    assert await _poll(scheduler) == []


async def test_a_recurring_job_runs_every_interval_and_keeps_its_phase(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner, clock: Clock
) -> None:
    job = await _job(store, interval_minutes=30, adaptive_scheduling=False)
    assert job.next_run_at == NOW
    assert await _poll(scheduler) == [job.id]
    assert (await store.jobs.get(job.id)).next_run_at == NOW + 1800
    clock.now = NOW + 1799
    assert await _poll(scheduler) == []
    clock.now = NOW + 1800 + 3000  # polled late (the service was down)
    assert await _poll(scheduler) == [job.id]
    after = await store.jobs.get(job.id)
    # The next run stays on the job's half-hour rhythm, after now.
    assert (after.status, after.next_run_at) == (JobStatus.SCHEDULED, NOW + 3 * 1800)
    assert [call[1] for call in runner.calls] == [1, 2]


async def test_failures_retry_with_doubling_backoff_then_fail_and_a_retry_resets(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner, clock: Clock
) -> None:
    job = await _job(store, interval_minutes=60, adaptive_scheduling=False, max_retries=3)
    runner.script = [RuntimeError("site on fire")] * 4
    waits = []
    for _ in range(3):
        assert await _poll(scheduler) == [job.id]
        retrying = await store.jobs.get(job.id)
        assert retrying.status is JobStatus.PENDING
        waits.append(retrying.next_run_at - clock.now)
        clock.now = retrying.next_run_at - 1
        assert await _poll(scheduler) == []
        clock.now += 1
    assert waits == [60, 120, 240]
    assert await _poll(scheduler) == [job.id]
    failed = await store.jobs.get(job.id)
    assert (failed.status, failed.next_run_at, failed.current_retry_count) == (
        JobStatus.FAILED,
        None,
        3,
    )
    assert failed.last_error == "RuntimeError: site on fire"
    history = (await store.executions.list(job.id)).items
    assert [(e.execution_number, e.status, e.retry_attempt) for e in history] == [
        (4, ExecutionStatus.FAILED, 3),
        (3, ExecutionStatus.FAILED, 2),
        (2, ExecutionStatus.FAILED, 1),
        (1, ExecutionStatus.FAILED, 0),
    ]
    assert history[0].error_message == "RuntimeError: site on fire"
    assert "site on fire" in (history[0].stack_trace or "")

    retried = await store.jobs.retry(job.id)
    assert (retried.status, retried.current_retry_count, retried.next_run_at) == (
        JobStatus.PENDING,
        0,
        clock.now,
    )
    assert await _poll(scheduler) == [job.id]
    back = await store.jobs.get(job.id)
    assert (back.status, back.current_retry_count, back.last_error) == (
        JobStatus.SCHEDULED,
        0,
        None,
    )


async def test_a_failed_result_counts_like_a_raised_error(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner
) -> None:
    job = await _job(store, max_retries=0)
    runner.script = [
        ExecutionResult(status=ExecutionStatus.FAILED, error_message="StoreError: gone")
    ]
    await _poll(scheduler)
    assert (await store.jobs.get(job.id)).status is JobStatus.FAILED


async def test_paused_jobs_are_not_run_until_resumed(
    store: JobStore, scheduler: Scheduler, clock: Clock
) -> None:
    job = await _job(store, interval_minutes=30)
    await store.jobs.pause(job.id)
    clock.now += 7200
    assert await _poll(scheduler) == []
    resumed = await store.jobs.resume(job.id)
    assert resumed.next_run_at == clock.now  # the least-loaded slot is the current one
    assert await _poll(scheduler) == [job.id]


async def test_at_most_max_concurrent_runs_and_the_earliest_due_go_first(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner, clock: Clock
) -> None:
    jobs = [await _job(store, source=f"site{i}", next_run_at=NOW - i) for i in range(4)]
    runner.hold = True
    first = [claim.job.id for claim in await scheduler.poll()]
    assert first == [jobs[2].id, jobs[3].id]  # the two overdue the longest, in id order
    assert [claim.job.id for claim in await scheduler.poll()] == []
    for claim in scheduler.running:
        await store.jobs.cancel(claim.job.id)
    await scheduler.poll()  # sees the cancellations and stops those runs
    await scheduler.wait_idle()
    assert sorted(runner.stopped) == sorted(first)
    runner.hold = False
    assert await _poll(scheduler) == [jobs[0].id, jobs[1].id]


async def test_a_source_runs_one_execution_at_a_time(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner
) -> None:
    # Two jobs on one crawl namespace: the second waits for the first, never runs beside it.
    first, second = await _job(store), await _job(store, url="http://a.test/2")
    runner.hold = True
    assert [claim.job.id for claim in await scheduler.poll()] == [first.id]
    assert await scheduler.poll() == []
    assert (await store.jobs.get(second.id)).status is JobStatus.SCHEDULED  # due, waiting
    await store.jobs.cancel(first.id)
    await scheduler.poll()
    await scheduler.wait_idle()
    runner.hold = False
    assert await _poll(scheduler) == [second.id]


async def test_cancelling_a_running_job_stops_its_run(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner
) -> None:
    job = await _job(store, interval_minutes=30)
    runner.hold = True
    await scheduler.poll()
    assert (await store.jobs.get(job.id)).status is JobStatus.RUNNING
    cancelled = await store.jobs.cancel(job.id)
    assert (cancelled.status, cancelled.lock_token) == (
        JobStatus.CANCELLED,
        scheduler.running[0].token,
    )
    await scheduler.poll()
    await scheduler.wait_idle()
    after = await store.jobs.get(job.id)
    assert (after.status, after.lock_token, runner.stopped) == (JobStatus.CANCELLED, None, [job.id])
    [execution] = (await store.executions.list(job.id)).items
    assert execution.status is ExecutionStatus.CANCELLED


async def test_a_stale_lock_is_swept_after_five_minutes_and_the_run_retried(
    store: JobStore, scheduler: Scheduler, clock: Clock
) -> None:
    job = await _job(store, interval_minutes=30)
    [claim] = await store.locks.claim_due("crashed-instance", 10)  # and then it died
    clock.now += 299
    assert await scheduler.duty("sweep").run() == {"stale_locks_cleared": 0, "pruned": 0}
    clock.now += 2
    assert await scheduler.duty("sweep").run() == {"stale_locks_cleared": 1, "pruned": 0}
    swept = await store.jobs.get(job.id)
    assert (swept.status, swept.lock_token, swept.current_retry_count) == (
        JobStatus.PENDING,
        None,
        1,
    )
    assert (swept.next_run_at, swept.last_error) == (clock.now + 60, LOCK_EXPIRED)
    execution = await store.executions.get(claim.execution.id)
    assert (execution.status, execution.error_message) == (ExecutionStatus.FAILED, LOCK_EXPIRED)
    assert scheduler.counters["stale_locks_cleared"] == 1
    # The crashed instance's late report changes nothing.
    late = ExecutionResult(status=ExecutionStatus.COMPLETED)
    from harvestman.jobs.lifecycle import after_success

    assert await store.locks.finish(claim, late, after_success(claim.job, 1800, clock.now)) is (
        JobStatus.PENDING
    )
    assert (await store.executions.get(claim.execution.id)).status is ExecutionStatus.FAILED


async def test_a_live_run_renews_its_lock_so_it_is_never_swept(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner, clock: Clock
) -> None:
    job = await _job(store)
    runner.hold = True
    await scheduler.poll()
    for _ in range(4):
        clock.now += 200
        await scheduler.poll()  # renews
        assert (await scheduler.duty("sweep").run())["stale_locks_cleared"] == 0
    assert (await store.jobs.get(job.id)).status is JobStatus.RUNNING
    await store.jobs.cancel(job.id)
    await scheduler.poll()
    await scheduler.wait_idle()


async def test_history_keeps_the_100_newest_per_job_and_nothing_older_than_30_days(
    store: JobStore, scheduler: Scheduler, clock: Clock
) -> None:
    old, busy = await _job(store), await _job(store)
    rows = [  # old: 10 runs, 35 to 26 days ago; busy: 120 runs in the last hour
        {"job_id": old.id, "execution_number": n, "started_at": NOW - (36 - n) * DAY}
        for n in range(1, 11)
    ] + [
        {"job_id": busy.id, "execution_number": n, "started_at": NOW - 3600 + n}
        for n in range(1, 121)
    ]
    for row in rows:
        row.update(status="completed", items_crawled=0, items_indexed=0, retry_attempt=0)
        row["metadata"] = "{}"
    with store.engine.begin() as conn:
        conn.execute(insert(job_executions), rows)
        first_busy = conn.execute(
            select(job_executions.c.id).where(
                job_executions.c.job_id == busy.id, job_executions.c.execution_number == 1
            )
        ).scalar_one()
        line = {"seq": 1, "created_at": NOW, "level": "INFO", "logger": "x", "message": "old"}
        conn.execute(insert(execution_logs), [{"execution_id": first_busy, **line}])
    assert await scheduler.duty("sweep").run() == {"stale_locks_cleared": 0, "pruned": 25}
    kept_old = [e.execution_number for e in (await store.executions.list(old.id)).items]
    assert kept_old == [10, 9, 8, 7, 6]  # run 6 started exactly 30 days ago
    busy_page = await store.executions.list(busy.id, limit=200)
    assert (busy_page.total, busy_page.items[-1].execution_number) == (100, 21)
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(execution_logs)).scalar_one() == 0


async def test_metrics_count_jobs_executions_and_stale_locks(
    store: JobStore, scheduler: Scheduler, runner: ScriptedRunner, clock: Clock
) -> None:
    ok = await _job(store, interval_minutes=60)
    bad = await _job(store, source="other", max_retries=0)
    await _job(store, next_run_at=NOW + 9999)
    runner.script = [ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=7)]
    runner.script.append(RuntimeError("no"))
    await _poll(scheduler)
    assert ok.id < bad.id
    metrics = await scheduler.refresh_metrics()
    assert metrics["jobs"] == {
        "pending": 0,
        "scheduled": 2,
        "running": 0,
        "completed": 0,
        "failed": 1,
        "paused": 0,
        "cancelled": 0,
        "total": 3,
    }
    executions = metrics["executions"]
    assert (executions["total"], executions["success_rate"], executions["items_crawled"]) == (
        2,
        0.5,
        7,
    )
    assert executions["by_status"] == {"running": 0, "completed": 1, "failed": 1, "cancelled": 0}
    assert (metrics["stale_locks_cleared"], metrics["polls"], metrics["claimed"]) == (0, 1, 2)
    assert scheduler.metrics() == metrics
    stats = await store.executions.job_stats(ok.id)
    assert (stats["total"], stats["success_rate"], stats["last_started_at"]) == (1, 1.0, NOW)


async def test_an_executions_log_lines_are_stored_in_order_before_it_ends(
    store: JobStore, runner: ScriptedRunner
) -> None:
    capture = LogCapture(max_lines=3)
    capture.install()
    try:
        scheduler = make_scheduler(store, runner, instance_id="here", log_capture=capture)
        job = await _job(store, url="http://a.test/logged")
        runner.hold = True
        [claim] = await scheduler.poll()
        await asyncio.wait_for(runner.started.wait(), 5)
        await runner.say.put("page 1")
        await runner.say.put("page 2")  # the fourth line: dropped
        logging.getLogger("harvestman.elsewhere").info("not in this execution's context")
        await runner.say.join()
        await scheduler.flush_logs()  # what the flush loop does every second
        so_far = [line.message for line in await store.executions.logs(claim.execution.id)]
        await store.jobs.cancel(job.id)
        await scheduler.poll()
        await scheduler.wait_idle()
    finally:
        capture.uninstall()
    assert so_far == [
        "job 1: execution 1 started (attempt 0)",
        "crawling http://a.test/logged for site",
        "page 1",
    ]
    stored = await store.executions.logs(claim.execution.id)
    messages = [line.message for line in stored]
    assert messages == [
        *so_far,
        "2 more log lines were dropped (at most 3 are kept)",  # page 2, the end of the run
    ]
    assert [line.seq for line in stored] == [1, 2, 3, 4]
    assert (await store.executions.get(claim.execution.id)).status is ExecutionStatus.CANCELLED
    assert [line.message for line in await store.executions.logs(claim.execution.id, after=3)] == [
        messages[3]
    ]
    assert await store.executions.last_log_seq(claim.execution.id) == 4


async def test_a_run_taken_up_again_numbers_its_lines_after_the_stored_ones(
    store: JobStore,
) -> None:
    await _job(store, url="http://a.test/again")
    [claim] = await store.locks.claim_due("elsewhere", 1)
    execution_id = claim.execution.id
    earlier = [LogLine(execution_id, n, NOW, "INFO", "x", f"earlier {n}") for n in (1, 2)]
    await store.executions.append_logs(earlier)
    await store.executions.append_logs(earlier)  # a write repeated: no error, no copy
    capture = LogCapture()
    capture.install()
    try:
        with capture.capture(execution_id, after=await store.executions.last_log_seq(execution_id)):
            crawl_log.info("here again")
        await store.executions.append_logs(capture.take(execution_id) + capture.end(execution_id))
    finally:
        capture.uninstall()
    stored = await store.executions.logs(execution_id)
    assert [(line.seq, line.message) for line in stored] == [
        (1, "earlier 1"),
        (2, "earlier 2"),
        (3, "here again"),
    ]


class RefusingLogs:
    """A log store that fails the first ``refusals`` writes with ``error``: StoreError, the
    database away; StoreRejected, a refusal no retry helps."""

    def __init__(self, refusals: int, error: type[StoreError] = StoreError) -> None:
        self.refusals = refusals
        self.error = error
        self.stored: list[LogLine] = []

    async def append_logs(self, lines: Sequence[LogLine]) -> None:
        if self.refusals:
            self.refusals -= 1
            raise self.error("the store is away")
        self.stored += lines


async def test_lines_wait_out_the_store_however_long_it_is_away() -> None:
    capture = LogCapture()
    capture.install()
    store = RefusingLogs(refusals=5)
    writer = LogWriter(capture, store, max_tries=2)
    try:
        with capture.capture(1):
            crawl_log.info("first")
        for _ in range(3):  # more flushes than max_tries
            with pytest.raises(StoreError):
                await writer.flush()
        with capture.capture(1):
            crawl_log.info("second")
        for _ in range(2):
            with pytest.raises(StoreError):
                await writer.flush(ending=1)
        await writer.flush()  # back: the ended execution's lines go too
    finally:
        capture.uninstall()
    assert [(line.seq, line.message) for line in store.stored] == [(1, "first"), (2, "second")]


async def test_lines_the_store_refused_go_with_the_next_flush_then_are_dropped() -> None:
    capture = LogCapture()
    capture.install()
    store = RefusingLogs(refusals=1, error=StoreRejected)
    writer = LogWriter(capture, store, max_tries=2)
    try:
        with capture.capture(1):
            crawl_log.info("first")
        with pytest.raises(StoreRejected):
            await writer.flush()
        with capture.capture(1):
            crawl_log.info("second")
        await writer.flush(ending=1)
        assert [(line.seq, line.message) for line in store.stored] == [(1, "first"), (2, "second")]

        store.refusals = 2
        with capture.capture(2):
            crawl_log.info("lost")
        for _ in range(2):
            with pytest.raises(StoreRejected):
                await writer.flush()
        await writer.flush(ending=2)  # the store takes lines again: nothing left to send
    finally:
        capture.uninstall()
    assert [line.message for line in store.stored] == ["first", "second"]


async def test_the_leader_lease_is_held_by_one_instance_and_taken_over_on_expiry(
    store: JobStore, clock: Clock
) -> None:
    first = LeaderLease(store, "first", ttl=30)
    second = LeaderLease(store, "second", ttl=30)
    assert await first.acquire() is True
    assert await second.acquire() is False
    clock.now += 20
    assert await first.renew() is True  # now valid until +50
    clock.now += 29
    assert (await second.acquire(), first.is_leader) == (False, True)
    clock.now += 2  # the first stopped renewing 31 s ago
    assert first.is_leader is False
    assert await second.acquire() is True
    assert await first.acquire() is False
    assert await first.current() == ("second", clock.now + 30)
    await second.release()
    assert await first.acquire() is True


async def test_run_polls_maintains_and_stops_cleanly(
    store: JobStore, runner: ScriptedRunner
) -> None:
    scheduler = make_scheduler(
        store, runner, instance_id="loop", jobs_poll_interval=0.02, jobs_leader_ttl=0.06
    )
    job = await _job(store)
    service = asyncio.create_task(scheduler.run())
    for _ in range(250):
        await asyncio.sleep(0.02)
        if (await store.jobs.get(job.id)).status is JobStatus.COMPLETED and scheduler.metrics():
            break
    scheduler.stop()
    await asyncio.wait_for(service, 5)
    assert (await store.jobs.get(job.id)).status is JobStatus.COMPLETED
    assert scheduler.metrics()["jobs"]["total"] == 1
    assert scheduler.leader.is_leader is False  # released on the way out
    assert await scheduler.leader.current() is None


async def test_stopping_the_service_interrupts_runs_which_retry_at_once(
    store: JobStore, runner: ScriptedRunner, clock: Clock
) -> None:
    scheduler = make_scheduler(store, runner, instance_id="loop", jobs_poll_interval=0.02)
    job = await _job(store, interval_minutes=30)
    runner.hold = True
    service = asyncio.create_task(scheduler.run())
    await asyncio.wait_for(runner.started.wait(), 5)
    scheduler.stop()
    await asyncio.wait_for(service, 5)
    after = await store.jobs.get(job.id)
    assert (after.status, after.next_run_at, after.current_retry_count, after.lock_token) == (
        JobStatus.PENDING,
        clock.now,
        0,
        None,
    )
    [execution] = (await store.executions.list(job.id)).items
    assert (execution.status, execution.error_message) == (ExecutionStatus.FAILED, INTERRUPTED)
