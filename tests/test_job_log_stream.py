"""A job's log stream sends every line exactly once, whichever instance the client reached.

Two API instances on one database, each on a real uvicorn server on 127.0.0.1: ``a`` runs
the scheduler (and so the execution), ``b`` only serves the API, as a second ``serve`` with
``--no-scheduler`` would. The run logs lines before any client connects, more while they
follow it, then ends; clients on both instances, and one that reconnects with
``Last-Event-ID``, must each see the stored lines, each once, in order, then ``end``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiclient import api_settings, bearer
from harvestman.api.app import create_app
from harvestman.api.auth import Role
from harvestman.config import Settings
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
from harvestman.store import SqlStore
from harvestman.store.jobs.db import JobStore
from support.scheduling import make_scheduler
from support.served import served

run_log = logging.getLogger("harvestman.test.run")
USER = bearer(Role.USER)


class TalkingRunner:
    """A run that logs five lines, waits for ``go``, logs five more, waits for ``finish``."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()
        self.finish = asyncio.Event()

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        for n in range(1, 6):
            run_log.info("before %d", n)
        self.started.set()
        await self.go.wait()
        for n in range(1, 6):
            run_log.info("after %d", n)
        await self.finish.wait()
        return ExecutionResult(status=ExecutionStatus.COMPLETED, items_crawled=1)


@dataclass
class Event:
    name: str
    id: str | None
    data: dict[str, Any]


@dataclass
class Follower:
    """Reads a log stream in the background until ``end`` (or ``stop_after`` events)."""

    url: str
    headers: dict[str, str]
    stop_after: int | None = None
    events: list[Event] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def start(self) -> Follower:
        self.task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        name, event_id, data = "message", None, ""
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("GET", self.url, headers=self.headers) as response,
        ):
            assert response.status_code == 200, await response.aread()
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("id:"):
                    event_id = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    data = line.split(":", 1)[1].strip()
                elif not line and data:
                    self.events.append(Event(name, event_id, json.loads(data)))
                    if name == "end" or len(self.events) == self.stop_after:
                        return
                    name, event_id, data = "message", None, ""

    def messages(self) -> list[str]:
        return [e.data["message"] for e in self.events if e.name == "log"]

    async def done(self, within: float = 30.0) -> list[Event]:
        assert self.task is not None
        await asyncio.wait_for(self.task, within)
        return self.events


async def _until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within} s: {what}")
        await asyncio.sleep(0.02)


@dataclass
class Instances:
    a: str  # runs the scheduler
    b: str  # serves the API only
    jobs: JobStore
    runner: TalkingRunner
    job_id: int


@contextlib.asynccontextmanager
async def _instances(database_url: str, tmp_path: Path) -> AsyncIterator[Instances]:
    settings = Settings(database_url=database_url)
    runner = TalkingRunner()
    async with (
        SqlStore(database_url) as store_a,
        SqlStore(database_url) as store_b,
    ):
        await store_a.upgrade()
        async with JobStore(store_a.engine) as jobs_a, JobStore(store_b.engine) as jobs_b:
            source = await jobs_a.sources.create(
                SourceSpec(name="talker", start_urls=["http://a.test/"])
            )
            job = await jobs_a.jobs.create(JobSpec(source_id=source.id, url="http://a.test/"))
            scheduler = make_scheduler(
                jobs_a,
                runner,
                instance_id="a",
                jobs_poll_interval=0.05,
                jobs_log_flush_interval=0.05,
            )
            app_a = create_app(
                settings,
                sql_store=store_a,
                job_store=jobs_a,
                scheduler=scheduler,
                api_settings=api_settings(log_poll_interval=0.05),
                run_scheduler=True,
            )
            app_b = create_app(
                settings,
                sql_store=store_b,
                job_store=jobs_b,
                api_settings=api_settings(log_poll_interval=0.05),
            )
            async with served(app_a) as a, served(app_b) as b:
                try:
                    yield Instances(a, b, jobs_a, runner, job.id)
                finally:
                    runner.go.set()
                    runner.finish.set()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    return str(request.getfixturevalue("pg_schema_url"))


def _text_line(line: LogLine) -> str:
    when = datetime.fromtimestamp(line.created_at, UTC).isoformat(timespec="milliseconds")
    return f"{when} {line.level} {line.logger}: {line.message}"


async def test_every_line_reaches_every_client_once_then_end(
    database_url: str, tmp_path: Path
) -> None:
    async with _instances(database_url, tmp_path) as it:
        await asyncio.wait_for(it.runner.started.wait(), 30)
        # The run has logged its first lines; none may have been stored yet.
        path = f"/api/v1/jobs/{it.job_id}/logs/stream"
        on_a = Follower(it.a + path, USER).start()
        on_b = Follower(it.b + path, USER).start()
        interrupted = Follower(it.b + path, USER, stop_after=3).start()
        await _until(lambda: "before 5" in on_b.messages(), "b streams the first lines")
        await _until(lambda: "before 5" in on_a.messages(), "a streams the first lines")
        assert len(await interrupted.done()) == 3
        it.runner.go.set()
        await _until(lambda: "after 5" in on_b.messages(), "b streams the later lines")
        assert not any(e.name == "end" for e in on_b.events)  # the run goes on
        it.runner.finish.set()
        events_a, events_b = await on_a.done(), await on_b.done()

        # A reconnect (as EventSource does) resumes after the last event it saw.
        last = interrupted.events[-1].id
        assert last is not None
        headers = {**USER, "Last-Event-ID": last}
        resumed = await Follower(it.b + path, headers).start().done()

        [execution] = (await it.jobs.executions.list(it.job_id)).items
        stored = await it.jobs.executions.logs(execution.id)
        async with httpx.AsyncClient(base_url=it.b, timeout=10) as client:
            download = await client.get(
                f"/api/v1/jobs/{it.job_id}/logs", params={"download": 1}, headers=USER
            )

    messages = [line.message for line in stored]
    assert messages[0] == "job 1: execution 1 started (attempt 0)"
    assert messages[1:11] == [f"before {n}" for n in range(1, 6)] + [
        f"after {n}" for n in range(1, 6)
    ]
    assert messages[-1] == "job 1: execution 1 completed; job completed"
    assert [line.seq for line in stored] == list(range(1, len(stored) + 1))
    ids = [f"{execution.id}-{line.seq}" for line in stored]
    for events in (events_a, events_b):
        assert [e.name for e in events] == ["log"] * len(stored) + ["end"]
        assert [e.data["message"] for e in events[:-1]] == messages
        assert [e.id for e in events[:-1]] == ids
        assert events[-1].data == {"status": "completed"}
    assert [e.id for e in interrupted.events + resumed[:-1]] == ids
    assert resumed[-1].data == {"status": "completed"}

    assert download.status_code == 200
    assert download.headers["content-type"] == "text/plain; charset=utf-8"
    assert download.headers["content-disposition"] == 'attachment; filename="job-1-run-1.log"'
    assert download.text.splitlines() == [_text_line(line) for line in stored]


async def test_a_finished_runs_stream_replays_its_lines_then_ends(
    database_url: str, tmp_path: Path
) -> None:
    async with _instances(database_url, tmp_path) as it:
        await asyncio.wait_for(it.runner.started.wait(), 30)
        it.runner.go.set()
        it.runner.finish.set()
        [execution] = (await it.jobs.executions.list(it.job_id)).items

        async def finished() -> bool:
            return (await it.jobs.executions.get(execution.id)).status.value == "completed"

        deadline = time.monotonic() + 100  # a bound for a loaded machine, not a speed check
        while not await finished():
            assert time.monotonic() < deadline, "the run did not finish"
            await asyncio.sleep(0.02)
        stored = await it.jobs.executions.logs(execution.id)
        path = f"/api/v1/jobs/{it.job_id}/logs/stream?execution_id={execution.id}"
        # A bare seq is a Last-Event-ID too; an id of another execution starts from line 1.
        after_seq = await Follower(it.b + path, {**USER, "Last-Event-ID": "12"}).start().done()
        other = await Follower(it.b + path, {**USER, "Last-Event-ID": "999-3"}).start().done()

    assert [e.data.get("seq") for e in after_seq[:-1]] == [
        line.seq for line in stored if line.seq > 12
    ]
    assert [e.data.get("seq") for e in other[:-1]] == [line.seq for line in stored]
    assert (after_seq[-1].name, other[-1].name) == ("end", "end")
