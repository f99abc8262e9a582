"""Executions handed over through the broker, decided in the store on a controllable clock:
taken once, held while renewed, taken over when not, dropped when final or cancelled, undone
when unpublished; and the queue itself on the real RabbitMQ."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest

from apiclient import running_api
from conftest import SettingsFactory, require_service
from harvestman.jobs.broker import (
    PRIORITY_MANUAL,
    PRIORITY_SCHEDULED,
    Delivery,
    ExecutionMessage,
    ExecutionQueue,
)
from harvestman.jobs.dispatch import Dispatcher
from harvestman.jobs.errors import BrokerUnavailable
from harvestman.jobs.lifecycle import after_success
from harvestman.jobs.records import ExecutionResult, ExecutionStatus
from harvestman.jobs.states import Action, JobStatus
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.handover import Verdict, queued_holder
from support.fleet import BROKER_URL, delete_queue
from test_jobs_scheduler import NOW, Clock, _job, clock, store

__all__ = ["clock", "store"]  # the fixtures, shared with the scheduler's tests

QUEUED = queued_holder("leader")
SOURCE = {"name": "site", "start_urls": ["http://127.0.0.1:9/"], "enabled": False}
JOB = {"url": "http://127.0.0.1:9/", "interval_minutes": 60, "next_run_at": NOW}


async def _queued(store: JobStore) -> tuple[int, int]:
    job = await _job(store)
    [claim] = await store.locks.claim_due(QUEUED, 1)
    return job.id, claim.execution.id


async def test_a_queued_execution_is_taken_by_one_worker_only(
    store: JobStore, clock: Clock
) -> None:
    job_id, execution_id = await _queued(store)
    assert await store.handover.queued() == 1
    clock.now += 5  # it waited in the queue

    first = await store.handover.take(job_id, execution_id, "w1", takeover_after=30)
    second = await store.handover.take(job_id, execution_id, "w2", takeover_after=30)

    assert (first.verdict, first.holder) == (Verdict.TAKEN, QUEUED)
    assert (second.verdict, second.holder, second.claim) == (Verdict.HELD, "w1", None)
    assert first.claim is not None
    job = await store.jobs.get(job_id)
    assert (job.status, job.locked_by, job.lock_token) == (
        JobStatus.RUNNING,
        "w1",
        first.claim.token,
    )
    execution = await store.executions.get(execution_id)
    assert (execution.started_at, execution.metadata) == (NOW + 5, {"holders": ["w1"]})
    assert await store.handover.queued() == 0


async def test_an_unrenewed_lock_is_taken_over_and_its_former_holder_stops(
    store: JobStore, clock: Clock
) -> None:
    job_id, execution_id = await _queued(store)
    first = await store.handover.take(job_id, execution_id, "w1", takeover_after=30)
    assert first.claim is not None
    clock.now += 29
    held = await store.handover.take(job_id, execution_id, "w2", takeover_after=30)
    clock.now += 2  # 31 s without a renewal
    over = await store.handover.take(job_id, execution_id, "w2", takeover_after=30)

    assert held.verdict is Verdict.HELD
    assert (over.verdict, over.holder) == (Verdict.TAKEN_OVER, "w1")
    assert over.claim is not None
    # The former holder learns it must stop, and its finish leaves the execution alone.
    assert await store.locks.renew({first.claim.token: job_id}) == {first.claim.token}
    cancelled = ExecutionResult(status=ExecutionStatus.CANCELLED)
    step = after_success(first.claim.job, 3600, clock())
    assert await store.locks.finish(first.claim, cancelled, step) is JobStatus.RUNNING
    assert (await store.executions.get(execution_id)).status is ExecutionStatus.RUNNING
    # The new holder closes it.
    done = ExecutionResult(status=ExecutionStatus.COMPLETED, metadata=over.claim.execution.metadata)
    assert await store.locks.finish(over.claim, done, step) is JobStatus.COMPLETED
    execution = await store.executions.get(execution_id)
    assert (execution.status, execution.metadata) == (
        ExecutionStatus.COMPLETED,
        {"holders": ["w1", "w2"]},
    )
    again = await store.handover.take(job_id, execution_id, "w3", takeover_after=30)
    assert again.verdict is Verdict.GONE


async def test_an_execution_handed_back_is_taken_at_once_and_keeps_its_start(
    store: JobStore, clock: Clock
) -> None:
    job_id, execution_id = await _queued(store)
    first = await store.handover.take(job_id, execution_id, "w1", takeover_after=30)
    assert first.claim is not None
    clock.now += 10

    assert await store.handover.hand_back(first.claim, "w1")
    again = await store.handover.take(job_id, execution_id, "w2", takeover_after=30)

    assert (again.verdict, again.holder) == (Verdict.TAKEN, queued_holder("w1"))
    execution = await store.executions.get(execution_id)
    assert (execution.started_at, execution.metadata) == (NOW, {"holders": ["w1", "w2"]})
    assert not await store.handover.hand_back(first.claim, "w1")  # no longer its lock


async def test_a_job_cancelled_while_queued_drops_its_message_and_closes_the_execution(
    store: JobStore,
) -> None:
    job_id, execution_id = await _queued(store)
    await store.jobs.act(job_id, Action.CANCEL)

    handover = await store.handover.take(job_id, execution_id, "w1", takeover_after=30)

    assert handover.verdict is Verdict.GONE
    job = await store.jobs.get(job_id)
    assert (job.status, job.lock_token, job.locked_by) == (JobStatus.CANCELLED, None, None)
    assert (await store.executions.get(execution_id)).status is ExecutionStatus.CANCELLED


@pytest.mark.parametrize(("job_delta", "execution_delta"), [(0, 1000), (1000, 0)])
async def test_a_message_for_no_such_execution_is_gone(
    store: JobStore, job_delta: int, execution_delta: int
) -> None:
    job_id, execution_id = await _queued(store)
    handover = await store.handover.take(
        job_id + job_delta, execution_id + execution_delta, "w1", takeover_after=30
    )
    assert handover.verdict is Verdict.GONE


async def test_an_unpublished_claim_is_undone(store: JobStore) -> None:
    job = await _job(store)
    [claim] = await store.locks.claim_due(QUEUED, 1)

    assert await store.handover.unclaim(claim)

    after = await store.jobs.get(job.id)
    assert (after.status, after.lock_token, after.next_run_at) == (
        job.status,
        None,
        job.next_run_at,
    )
    assert (await store.executions.list(job.id)).items == []
    assert await store.handover.queued() == 0


@pytest.fixture
async def queue() -> ExecutionQueue:
    require_service("RabbitMQ", "127.0.0.1", 5672)
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    async with ExecutionQueue(BROKER_URL, prefix) as opened:
        yield opened  # type: ignore[misc]
    await delete_queue(prefix)


async def test_a_dispatched_job_arrives_as_its_execution_and_waits_for_its_ack(
    store: JobStore, queue: ExecutionQueue
) -> None:
    job = await _job(store)
    claim = await Dispatcher(store, queue, instance_id="leader").dispatch(job.id)
    assert claim is not None

    deliveries: asyncio.Queue[Delivery] = asyncio.Queue()

    async def on_delivery(delivery: Delivery) -> None:
        deliveries.put_nowait(delivery)

    tag = await queue.consume(on_delivery)
    delivery = await deliveries.get()
    assert delivery.message == ExecutionMessage(job.id, claim.execution.id)
    assert not delivery.redelivered
    assert (await store.jobs.get(job.id)).locked_by == QUEUED
    await delivery.requeue()  # not acked: it comes back, marked as redelivered
    again = await deliveries.get()
    assert (again.message, again.redelivered) == (delivery.message, True)
    await again.ack()
    await queue.cancel(tag)
    assert await queue.depth() == 0
    assert deliveries.empty()


async def test_runs_asked_for_by_hand_pass_the_scheduled_ones(queue: ExecutionQueue) -> None:
    scheduled = [ExecutionMessage(1, n) for n in (1, 2)]
    by_hand = ExecutionMessage(2, 3)
    for message in scheduled:
        await queue.publish(message, PRIORITY_SCHEDULED)
    await queue.publish(by_hand, PRIORITY_MANUAL)
    deliveries: asyncio.Queue[Delivery] = asyncio.Queue()

    async def on_delivery(delivery: Delivery) -> None:
        deliveries.put_nowait(delivery)
        await delivery.ack()

    tag = await queue.consume(on_delivery)
    order = [(await deliveries.get()).message for _ in range(3)]
    await queue.cancel(tag)

    assert order == [by_hand, *scheduled]


async def test_a_claim_the_broker_refused_is_undone(store: JobStore, queue: ExecutionQueue) -> None:
    job = await _job(store)
    closed = ExecutionQueue(BROKER_URL, "unused")  # never opened: every publish fails

    with pytest.raises(BrokerUnavailable):
        await Dispatcher(store, closed, instance_id="leader").dispatch(job.id)

    after = await store.jobs.get(job.id)
    assert (after.status, after.lock_token) == (job.status, None)
    assert (await store.executions.list(job.id)).items == []


async def test_an_unreachable_broker_is_broker_unavailable() -> None:
    with pytest.raises(BrokerUnavailable):
        async with ExecutionQueue("amqp://guest:guest@127.0.0.1:1/", "test"):
            pass


@pytest.mark.parametrize("broker_up", [True, False])
async def test_a_force_run_is_published_at_once_or_left_due_for_the_leader(
    make_settings: SettingsFactory, broker_up: bool
) -> None:
    if broker_up:
        require_service("RabbitMQ", "127.0.0.1", 5672)
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    async with running_api(make_settings(), scheduler=True) as api:
        source = (await api.post("/api/v1/sources", json=SOURCE)).json()
        job = (await api.post("/api/v1/jobs", json={**JOB, "source_id": source["id"]})).json()
        queue = ExecutionQueue(BROKER_URL, prefix)
        async with contextlib.AsyncExitStack() as stack:
            if broker_up:
                await stack.enter_async_context(queue)
            scheduler = api.app.state.ctx.scheduler
            scheduler.dispatcher = Dispatcher(api.jobs, queue, instance_id="leader")

            answer = await api.post(f"/api/v2/jobs/{job['id']}/force-run")
            depth = await queue.depth() if broker_up else 0
        if broker_up:
            await delete_queue(prefix)

    assert answer.status_code == 200, answer.text
    body = answer.json()
    if broker_up:  # claimed for the workers and published
        assert (body["status"], body["locked_by"], depth) == ("running", QUEUED, 1)
    else:  # still due: the leader's next poll publishes it
        assert (body["status"], body["locked_by"]) == ("scheduled", None)
        assert body["next_run_at"] <= time.time()
