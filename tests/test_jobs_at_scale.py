"""Job executions over the broker at scale, on real PostgreSQL and RabbitMQ with the store's
clock in the test's hands: a backlog never fails a job, a dead leader's claims are published
again, a worker waits out a store outage without losing its runs, and a worker runs many
executions at once (one per source).

Each test has its own schema and queue (a unique prefix): runs beside others do not collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from conftest import require_service
from harvestman.config import Settings
from harvestman.errors import StoreError
from harvestman.jobs.broker import Delivery, ExecutionMessage, ExecutionQueue
from harvestman.jobs.consumer import ExecutionConsumer
from harvestman.jobs.dispatch import Dispatcher
from harvestman.jobs.records import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    JobSpec,
    Source,
    SourceSpec,
)
from harvestman.jobs.states import Action, JobStatus
from harvestman.jobs.wiring import worker_scheduler
from harvestman.store import dialect, migrate
from harvestman.store.jobs.db import JobStore
from support.fleet import BROKER_URL, delete_queue
from support.scheduling import make_scheduler
from support.tcpgate import TcpGate, tcp_gate
from test_jobs_scheduler import NOW, Clock, ScriptedRunner, crawl_log

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def pg_store(pg_schema_url: str) -> AsyncIterator[tuple[JobStore, Clock]]:
    clock = Clock()
    engine = dialect.make_engine(pg_schema_url)
    migrate.upgrade(engine)
    async with JobStore(engine, clock=clock) as store:
        yield store, clock
    engine.dispose()


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    require_service("RabbitMQ", "127.0.0.1", 5672)
    name = f"test-scale-{uuid.uuid4().hex[:8]}"
    yield name
    await delete_queue(name)


async def new_job(store: JobStore, name: str, **fields: object) -> Job:
    """A job on a source of its own (``name``), due now."""
    page = await store.sources.list(name_contains=name)
    found = [s for s in page.items if s.name == name]
    source = (
        found[0]
        if found
        else await store.sources.create(SourceSpec(name=name, start_urls=[f"http://{name}.test/"]))
    )
    values: dict[str, object] = {
        "source_id": source.id,
        "url": f"http://{name}.test/",
        "interval_minutes": 60,
        "next_run_at": NOW,
        **fields,
    }
    return await store.jobs.create(JobSpec(**values))  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def consuming(
    store: JobStore, queue: ExecutionQueue, runner: ScriptedRunner, holder: str = "worker-1"
) -> AsyncIterator[ExecutionConsumer]:
    settings = Settings(broker_renew_interval=0.05)
    scheduler = worker_scheduler(settings, store, runner, instance_id=holder)
    consumer = ExecutionConsumer(queue, scheduler, renew_interval=0.05, takeover_after=30)
    task = asyncio.create_task(consumer.run())
    try:
        yield consumer
    finally:
        consumer.stop()
        await task


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll the store (or the broker) until ``check``: neither offers an event to wait on."""
    async with asyncio.timeout(20):
        while not await check():  # noqa: ASYNC110 - the store has no event to wait on
            await asyncio.sleep(0.02)


async def final(store: JobStore, job_ids: list[int]) -> bool:
    for job_id in job_ids:
        latest = await store.executions.latest(job_id)
        if latest is None or latest.status is ExecutionStatus.RUNNING:
            return False
    return True


# -- 1. a claim in the queue is healthy -------------------------------------------------------


async def test_a_claim_waiting_in_the_queue_is_never_failed_and_lapsed_is_published_again(
    pg_store: tuple[JobStore, Clock], prefix: str
) -> None:
    store, clock = pg_store
    # Hourly, no retries: the job whose schedule ended after 300 s in the queue.
    job = await new_job(store, "backlog", max_retries=0)
    async with ExecutionQueue(BROKER_URL, prefix) as queue:
        dispatcher = Dispatcher(store, queue, instance_id="leader")
        dispatcher.republish_after = 600  # broker_republish_seconds
        scheduler = make_scheduler(
            store, ScriptedRunner(), instance_id="leader", dispatcher=dispatcher
        )
        assert await dispatcher.dispatch(job.id) is not None  # force-run, no worker up
        clock.now += 3600  # an hour in the queue

        swept = await scheduler.duty("sweep").run()
        waiting = await store.jobs.get(job.id)
        republished = await dispatcher.dispatch_due()  # the leader's poll
        depth = await queue.depth()
        again = await dispatcher.dispatch_due()  # once per republish time, not every poll

        runner = ScriptedRunner()
        async with consuming(store, queue, runner):
            await until(lambda: final(store, [job.id]))
            await until(lambda: queue_empty(queue))
        after = await store.jobs.get(job.id)
        executions = (await store.executions.list(job.id)).items

    assert swept["stale_locks_cleared"] == 0
    assert (waiting.status, waiting.locked_by, waiting.current_retry_count) == (
        JobStatus.RUNNING,
        "queued:leader",
        0,
    )
    assert (republished, depth, again) == ([], 2, [])  # the claim was published again
    # Run once (the duplicate dropped), completed, and the schedule goes on.
    assert len(runner.calls) == 1
    assert [e.status for e in executions] == [ExecutionStatus.COMPLETED]
    assert after.status is JobStatus.SCHEDULED
    assert after.next_run_at == NOW + 3600  # its next hour


async def queue_empty(queue: ExecutionQueue) -> bool:
    return await queue.depth() == 0


# -- 3. a new leader publishes what a dead one claimed ----------------------------------------


class DyingQueue(ExecutionQueue):
    """A leader's queue that dies (the task is cancelled, as by a kill) after ``survive``
    publishes."""

    survive = 1

    async def publish(self, message: ExecutionMessage, priority: int = 0) -> None:
        if self.survive <= 0:
            raise asyncio.CancelledError
        self.survive -= 1
        await super().publish(message, priority)


async def test_a_new_leader_publishes_the_claims_a_dead_leader_left_without_message(
    pg_store: tuple[JobStore, Clock], prefix: str
) -> None:
    store, clock = pg_store
    jobs = [await new_job(store, f"orphan{n}") for n in range(4)]
    ids = [job.id for job in jobs]
    async with DyingQueue(BROKER_URL, prefix) as dying:
        with pytest.raises(asyncio.CancelledError):
            await Dispatcher(store, dying, instance_id="dead").dispatch_due()
    async with ExecutionQueue(BROKER_URL, prefix) as queue:
        orphaned = await queue.depth()
        clock.now += 11  # past the dead leader's publish timeout (10 s): it cannot be publishing
        new = Dispatcher(store, queue, instance_id="new")
        await new.dispatch_due()  # the new leader's first poll
        depth = await queue.depth()
        runner = ScriptedRunner()
        async with consuming(store, queue, runner):
            await until(lambda: final(store, ids))
            await until(lambda: queue_empty(queue))
        executions = {job_id: (await store.executions.list(job_id)).items for job_id in ids}

    assert (orphaned, new.republished, depth) == (1, 3, 4)
    assert sorted(job_id for job_id, _, _ in runner.calls) == sorted(ids)  # each once
    assert {j: [e.status for e in es] for j, es in executions.items()} == {
        j: [ExecutionStatus.COMPLETED] for j in ids
    }


# -- 2. a worker waits out a store outage and keeps its runs ----------------------------------


async def lock_of(store: JobStore, job_id: int) -> tuple[str | None, float | None]:
    job = await store.jobs.get(job_id)
    return job.locked_by, job.lock_acquired_at


async def store_behind(
    gate: TcpGate, pg_schema_url: str, stack: contextlib.AsyncExitStack, clock: Clock
) -> JobStore:
    """A migrated job store that reaches PostgreSQL only through ``gate`` (on this loop: only
    from the store's threads): cutting the gate takes the store away."""
    direct = dialect.make_engine(pg_schema_url)
    migrate.upgrade(direct)
    direct.dispose()
    engine = dialect.make_engine(pg_schema_url.replace(":5432/", f":{gate.port}/", 1))
    stack.callback(engine.dispose)
    return await stack.enter_async_context(JobStore(engine, clock=clock))


async def test_a_worker_waits_out_a_store_outage_and_keeps_its_runs(
    pg_schema_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock()
    async with tcp_gate("127.0.0.1", 5432) as gate, contextlib.AsyncExitStack() as stack:
        # Both workers share the store behind the gate: cut, it is away for both.
        store = await store_behind(gate, pg_schema_url, stack, clock)
        job = await new_job(store, "outage")
        async with ExecutionQueue(BROKER_URL, prefix) as leader:
            assert await Dispatcher(store, leader, instance_id="leader").dispatch(job.id)
        holding = ScriptedRunner()
        holding.hold = True  # runs until the job is cancelled
        queue_a = await stack.enter_async_context(ExecutionQueue(BROKER_URL, prefix))
        await stack.enter_async_context(consuming(store, queue_a, holding, "worker-a"))
        await until(lambda: is_held_by(store, job.id, "worker-a"))
        queue_b = await stack.enter_async_context(ExecutionQueue(BROKER_URL, prefix))
        runner_b = ScriptedRunner()
        b = await stack.enter_async_context(consuming(store, queue_b, runner_b, "worker-b"))

        await gate.cut()  # PostgreSQL away for two minutes
        clock.now += 120
        # RabbitMQ restarts inside the outage: A's connection drops, its message goes to B.
        await queue_a.__aexit__()
        await until_true(lambda: b.counters.get("waited", 0) + b.counters["requeued"] >= 1)
        for _ in range(10):  # B would requeue and receive it again on every turn
            await asyncio.sleep(0.05)
        during = dict(b.counters)
        await gate.restore()
        # A renews as the store comes back; B, which watched nothing unrenewed, keeps away.
        await until(lambda: renewed_at(store, job.id, clock.now))
        for _ in range(10):  # B looks at the lock every 0.05 s meanwhile
            await asyncio.sleep(0.05)
        await store.jobs.act(job.id, Action.CANCEL)
        await until(lambda: final(store, [job.id]))
        [execution] = (await store.executions.list(job.id)).items
        after = dict(b.counters)

    assert (during["requeued"], during.get("waited", 0) >= 1) == (0, True)  # no hot loop
    assert after["taken_over"] == 0
    # A kept its run to the end (its cancel); B never ran it.
    assert (execution.status, runner_b.calls) == (ExecutionStatus.CANCELLED, [])
    assert holding.stopped == [job.id]
    # One line per worker when the outage began, one when it ended.
    lines = [r.getMessage() for r in caplog.records if r.name == "harvestman.jobs.outage"]
    assert sum("unreachable" in line for line in lines) == 2, lines
    assert sum("reachable again" in line for line in lines) == 2, lines


class EndingRunner(ScriptedRunner):
    """A run that ends on its own, completed, once ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        self.calls.append((job.id, execution.execution_number, execution.retry_attempt))
        crawl_log.info("crawling %s", job.url)
        self.started.set()
        await self.release.wait()
        crawl_log.info("the run's last line")
        return ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=3)


async def test_a_run_that_ends_while_the_store_is_away_is_recorded_when_it_is_back(
    pg_schema_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with tcp_gate("127.0.0.1", 5432) as gate, contextlib.AsyncExitStack() as stack:
        store = await store_behind(gate, pg_schema_url, stack, Clock())
        job = await new_job(store, "ending")
        queue = await stack.enter_async_context(ExecutionQueue(BROKER_URL, prefix))
        assert await Dispatcher(store, queue, instance_id="leader").dispatch(job.id)
        runner = EndingRunner()
        await stack.enter_async_context(consuming(store, queue, runner, "worker-a"))
        await until(lambda: is_held_by(store, job.id, "worker-a"))
        await runner.started.wait()

        await gate.cut()
        runner.release.set()  # the run ends, and finds the store away
        outage = "harvestman.jobs.outage"
        await until_true(lambda: any(r.name == outage for r in caplog.records))
        for _ in range(40):  # a few of the run's tries to record its end
            await asyncio.sleep(0.02)
        await gate.restore()
        await until(lambda: final(store, [job.id]))
        [execution] = (await store.executions.list(job.id)).items
        lines = [line.message for line in await store.executions.logs(execution.id)]
        after = await store.jobs.get(job.id)

    # Recorded by the worker that ran it, whole: no lock left to expire, no second run.
    assert (execution.status, execution.items_crawled) == (ExecutionStatus.COMPLETED, 3)
    assert "the run's last line" in lines
    assert (after.status, after.locked_by, after.last_error) == (JobStatus.SCHEDULED, None, None)
    assert len(runner.calls) == 1
    assert not [r for r in caplog.records if "could not record" in r.getMessage()]


async def is_held_by(store: JobStore, job_id: int, holder: str) -> bool:
    return (await lock_of(store, job_id))[0] == holder


async def renewed_at(store: JobStore, job_id: int, when: float) -> bool:
    return (await lock_of(store, job_id))[1] == when


async def until_true(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not check():  # noqa: ASYNC110 - counters, not events
            await asyncio.sleep(0.02)


async def test_a_lost_broker_connection_is_one_line_lost_and_one_line_back(
    prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    from harvestman.jobs.broker import RECONNECT_LOG

    caplog.set_level(logging.DEBUG)
    async with tcp_gate("127.0.0.1", 5672) as gate:
        url = f"amqp://guest:guest@127.0.0.1:{gate.port}/?reconnect_interval=0.05"
        async with ExecutionQueue(url, prefix):
            await gate.cut()
            await until_true(lambda: RECONNECT_LOG.down_since is not None)
            for _ in range(10):  # attempts every 0.05 s meanwhile
                await asyncio.sleep(0.05)
            await gate.restore()
            await until_true(lambda: RECONNECT_LOG.down_since is None)

    said = [r.getMessage() for r in caplog.records if r.name == "harvestman.jobs.broker"]
    assert [line.split(":")[1].split(",")[0].split(" after")[0] for line in said] == [
        " connection lost",
        " reconnected",
    ], said
    loud = [
        (r.name, r.msg)
        for r in caplog.records
        if r.name.startswith(("aio_pika", "aiormq")) and r.levelno >= logging.INFO
    ]
    assert loud == [], loud


# -- 5. smaller -------------------------------------------------------------------------------


async def test_a_force_run_published_by_a_later_poll_keeps_its_priority(
    pg_store: tuple[JobStore, Clock], prefix: str
) -> None:
    store, clock = pg_store
    scheduled = await new_job(store, "scheduled", next_run_at=NOW - 60)
    by_hand = await new_job(store, "by-hand", next_run_at=NOW + 3600)
    clock.now += 1
    await store.jobs.act(by_hand.id, Action.FORCE_RUN)  # the broker was away: left due
    async with ExecutionQueue(BROKER_URL, prefix) as queue:
        await Dispatcher(store, queue, instance_id="leader").dispatch_due()  # the next poll
        deliveries: asyncio.Queue[Delivery] = asyncio.Queue()

        async def on_delivery(delivery: Delivery) -> None:
            deliveries.put_nowait(delivery)
            await delivery.ack()

        tag = await queue.consume(on_delivery)
        order = [(await deliveries.get()).message.job_id for _ in range(2)]
        await queue.cancel(tag)

    assert order == [by_hand.id, scheduled.id]  # published after it, it still goes first


async def test_the_sweep_clears_no_lock_until_holders_could_renew_after_an_outage(
    pg_store: tuple[JobStore, Clock],
) -> None:
    store, clock = pg_store
    job = await new_job(store, "swept")
    [claim] = await store.locks.claim_due("worker-1", 1)
    scheduler = make_scheduler(
        store, ScriptedRunner(), instance_id="leader", jobs_stale_lock_seconds=300
    )
    scheduler.outage.failed(StoreError("connection refused"))  # what its loops saw
    clock.now += 600  # the store was away ten minutes: nobody renewed anything
    scheduler.outage.recovered()

    right_after = await scheduler.duty("sweep").run()
    await store.locks.renew({claim.token: job.id})  # the live holder renews as it comes back
    clock.now += 250
    later = await scheduler.duty("sweep").run()
    clock.now += 100  # it renewed no more: 350 s, gone
    dead = await scheduler.duty("sweep").run()

    assert (right_after["stale_locks_cleared"], later["stale_locks_cleared"]) == (0, 0)
    assert dead["stale_locks_cleared"] == 1
