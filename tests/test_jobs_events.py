"""Source events: a source toggled through one instance is acted on by every scheduler, in one
process (in-process events) and across instances sharing PostgreSQL and Redis (a stream)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiclient import api_settings as make_api_settings
from apiclient import bearer
from harvestman.api.app import create_app
from harvestman.api.auth import Role
from harvestman.jobs.events import LocalSourceEvents, RedisSourceEvents, SourceEvent
from harvestman.jobs.records import (
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    Source,
    SourceSpec,
)
from harvestman.jobs.states import JobStatus
from harvestman.store import SqlStore, dialect, migrate
from harvestman.store.jobs.db import JobStore
from support.scheduling import make_scheduler


class QuietRunner:
    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        return ExecutionResult(status=ExecutionStatus.COMPLETED)


async def _eventually(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the scheduler did not react in time")


async def _jobs_of(store: JobStore, source_id: int) -> list[JobStatus]:
    return [job.status for job in (await store.jobs.list(source_id=source_id)).items]


@pytest.fixture
async def local_store(tmp_path: Path) -> AsyncIterator[JobStore]:
    engine = dialect.make_engine(f"sqlite:///{tmp_path / 'jobs.db'}")
    migrate.upgrade(engine)
    async with JobStore(engine) as store:
        yield store
    engine.dispose()


async def test_in_process_events_reach_the_running_scheduler(local_store: JobStore) -> None:
    events = LocalSourceEvents()
    scheduler = make_scheduler(local_store, QuietRunner(), jobs_poll_interval=3600, events=events)
    service = asyncio.create_task(scheduler.run())
    try:
        await asyncio.wait_for(scheduler.listening.wait(), 5)
        source = await local_store.sources.create(
            SourceSpec(name="s", start_urls=["http://a.test/"])
        )
        await events.publish(SourceEvent(source.id, True))
        await _eventually(lambda: _has(local_store, source.id, [JobStatus.SCHEDULED]))

        await local_store.sources.update(source.id, {"enabled": False})
        await events.publish(SourceEvent(source.id, False, origin=scheduler.instance_id))
        await events.publish(SourceEvent(source.id, False))  # its own event is skipped
        await _eventually(lambda: _has(local_store, source.id, [JobStatus.CANCELLED]))
        assert scheduler.counters["source_events"] == 2
    finally:
        scheduler.stop()
        await asyncio.wait_for(service, 5)
    assert events.subscribers == set()  # the subscription ended with the service


async def _has(store: JobStore, source_id: int, states: list[JobStatus]) -> bool:
    return await _jobs_of(store, source_id) == states


async def test_every_redis_subscription_sees_each_later_event_once(redis_url: str) -> None:
    events = RedisSourceEvents(redis_url, prefix=f"t-{uuid.uuid4().hex[:8]}")
    try:
        await events.publish(SourceEvent(1, True))  # before anyone listens: not delivered
        first, second = await events.subscribe(), await events.subscribe()
        sent = [SourceEvent(2, True, "x"), SourceEvent(3, False), SourceEvent(2, False)]
        for event in sent:
            await events.publish(event)
        for subscription in (first, second):
            assert await subscription.get(1.0) == sent
            assert await subscription.get(0.05) == []
            await subscription.close()
    finally:
        await events._redis.delete(events.key)
        await events.close()


async def test_a_source_toggled_through_one_instance_is_synced_by_another(
    pg_schema_url: str, redis_url: str, make_settings: Any
) -> None:
    """Instance A serves the API without a scheduler (``serve --no-scheduler``); instance B
    runs a scheduler. Both share one PostgreSQL and one Redis."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    engine = dialect.make_engine(pg_schema_url)
    migrate.upgrade(engine)
    engine.dispose()
    async with (
        SqlStore(pg_schema_url) as store_a,
        JobStore(store_a.engine) as jobs_a,
        JobStore(pg_schema_url) as jobs_b,
    ):
        b_events = RedisSourceEvents(redis_url, prefix=prefix)
        b = make_scheduler(
            jobs_b, QuietRunner(), instance_id="b", jobs_poll_interval=3600, events=b_events
        )
        app = create_app(
            make_settings(database_url=pg_schema_url),
            sql_store=store_a,
            job_store=jobs_a,
            api_settings=make_api_settings(redis_url=redis_url, redis_prefix=prefix),
        )
        service = asyncio.create_task(b.run())
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a")
        try:
            await asyncio.wait_for(b.listening.wait(), 5)
            admin = bearer(Role.ADMIN)
            body = {"name": "news", "start_urls": ["http://127.0.0.1:9/"]}
            created = await client.post("/api/v1/sources", json=body, headers=admin)
            sid = created.json()["id"]
            await _eventually(lambda: _has(jobs_a, sid, [JobStatus.SCHEDULED]))

            disabled = await client.put(
                f"/api/v1/sources/{sid}", json={"enabled": False}, headers=admin
            )
            assert disabled.status_code == 200
            await _eventually(lambda: _has(jobs_a, sid, [JobStatus.CANCELLED]))
            assert b.counters["source_events"] == 2
        finally:
            await client.aclose()
            b.stop()
            await asyncio.wait_for(service, 5)
            await b_events._redis.delete(b_events.key)
            await b_events.close()
            await app.state.ctx.source_events.close()
