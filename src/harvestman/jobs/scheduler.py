"""The scheduler: polls for due jobs, runs them, and records what happened.

Each ``poll`` (every ``poll_interval``, 10 s) renews the locks of the runs in progress, stops
those whose job was cancelled, and takes as many due jobs as there are free run slots, each by
compare-and-set (``JobLocks``). A run ends in ``lifecycle``'s next step: a recurring success is
scheduled one (adaptive) interval after its planned time, a failure is retried with backoff
until its retries are used up. One instance at a time holds the ``LeaderLease`` (renewed every
third of its TTL). With a ``dispatcher`` (``broker_url`` set) the leader publishes due jobs to
the broker instead of running them, and ``harvestman worker`` runs them here through ``adopt``
(``jobs.consumer``). A run's counters (``jobs.progress``) are stored every ``progress_interval``
(by the progress duty, or by ``poll``: a broker worker only polls) and as it ends.

Everything else the service does periodically is a duty (``jobs.duties``: the sweep, the data
retention, the backups, the metrics, the log flush, the source events), listed by
``jobs.wiring`` from the settings and kept going by ``run``, one task each; a duty that fails is
logged and does not stop the others, and a leader-only one runs only while this instance leads.
Time comes from the store's clock, so tests drive ``poll``, ``perform`` (one duty),
``record_progress`` and ``wait_idle`` by hand without sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from harvestman.errors import HarvestmanError, StoreError, StoreRejected
from harvestman.jobs.events import SourceEvents
from harvestman.jobs.logs import LogCapture, LogWriter
from harvestman.jobs.outage import Outage
from harvestman.jobs.outcome import HANDBACK, SHUTDOWN, next_step
from harvestman.jobs.progress import ProgressBoard, RunProgress
from harvestman.jobs.reconcile import SyncPlan, sync_enabled_sources
from harvestman.jobs.records import (
    FORCED,
    FORCED_PLANNED,
    Claim,
    Execution,
    ExecutionResult,
    ExecutionStatus,
    Job,
    Source,
)
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease

if TYPE_CHECKING:
    from harvestman.jobs.dispatch import Dispatcher
    from harvestman.jobs.duties.base import PeriodicTask

log = logging.getLogger(__name__)

# What a forced run's execution says from its start, kept in its final record.
FORCED_MARKS = (FORCED, FORCED_PLANNED)
# How often a run starting while the store is away asks it again (a local read each time).
STORE_RETRY_SECONDS = 0.5

_T = TypeVar("_T")


class Runner(Protocol):
    """Runs one execution of a job and reports it; never raises for a failed crawl.

    ``stop`` is set when the run must end early (the job was cancelled, or the service is
    stopping): the runner should wind down promptly and return what it has.
    """

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult: ...


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """The scheduler's own values (seconds), built from ``Settings`` by ``jobs.wiring``."""

    poll_interval: float
    max_concurrent: int  # runs at once here (0: a broker worker, handed its runs)
    leader_ttl: float
    log_flush_interval: float
    progress_interval: float
    progress_samples: int
    metrics_interval: float
    source_job_interval_minutes: int


@dataclass(slots=True)
class _Run:
    claim: Claim
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str | None = None  # why it was stopped: cancelled, shutdown, handback
    task: asyncio.Task[None] | None = None


def failure(exc: BaseException) -> ExecutionResult:
    """An execution result for an exception a run raised."""
    return ExecutionResult(
        status=ExecutionStatus.FAILED,
        error_message=f"{type(exc).__name__}: {exc}",
        stack_trace="".join(traceback.format_exception(exc)),
    )


class Scheduler:
    """Runs due jobs of a ``JobStore`` with a ``Runner``; safe beside other instances."""

    def __init__(
        self,
        store: JobStore,
        runner: Runner,
        config: SchedulerConfig,
        *,
        instance_id: str | None = None,
        log_capture: LogCapture | None = None,
        events: SourceEvents | None = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.config = config
        self.dispatcher = dispatcher
        self.events = events  # followed by the source events duty (the API app may set them)
        self.instance_id = instance_id or (
            f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        )
        self.max_concurrent = config.max_concurrent
        self.source_job_interval_minutes = config.source_job_interval_minutes
        self.leader = LeaderLease(store, self.instance_id, ttl=config.leader_ttl)
        self.duties: list[PeriodicTask] = []  # jobs.wiring lists them
        self.listening = asyncio.Event()  # set while the source events are followed
        self.logs = log_capture or LogCapture(clock=store.clock)
        self.outage = Outage("scheduler: the job store", store.clock)
        self.log_writer = LogWriter(self.logs, store.executions)
        self.progress = ProgressBoard(config.progress_samples)
        self._progress_due = 0.0
        self._runs: dict[str, _Run] = {}
        self._stopping = asyncio.Event()
        self._leading = asyncio.Event()  # set by each lease taken, cleared when not leading
        self._stop_reason: str | None = None
        self._snapshot: dict[str, Any] = {}
        self.counters = {
            "polls": 0,
            "claimed": 0,
            "stale_locks_cleared": 0,
            "pruned": 0,
            "source_events": 0,
            "retention_runs": 0,
            "backup_runs": 0,
            "backup_failures": 0,
        }
        self.last_poll_ms = 0.0

    @property
    def clock(self) -> Callable[[], float]:
        return self.store.clock

    @property
    def running(self) -> list[Claim]:
        """The runs in progress on this instance."""
        return [run.claim for run in self._runs.values()]

    # -- one step each (the loops call these; tests call them directly) ------------------------

    async def poll(self) -> list[Claim]:
        """Renew running locks, stop cancelled runs, flush their logs, store their counters
        (once per ``progress_interval``), start due jobs."""
        started = time.perf_counter()
        self.logs.install()
        held = {token: run.claim.job.id for token, run in self._runs.items()}
        for token in await self.store.locks.renew(held):
            run = self._runs.get(token)
            if run is not None and not run.stop.is_set():
                run.reason = "cancelled"
                run.stop.set()
        await self.log_writer.flush()
        # A broker worker only polls (jobs.consumer): its runs' counters are stored from here.
        await self.record_progress_when_due()
        if self.dispatcher is not None:  # the workers run them; the leader publishes them
            lead = self.leader.is_leader and not self._stopping.is_set()
            claims = await self.dispatcher.dispatch_due() if lead else []
        else:
            free = 0 if self._stopping.is_set() else self.max_concurrent - len(self._runs)
            claims = await self.store.locks.claim_due(self.instance_id, free)
            for claim in claims:
                self.adopt(claim)
        self.counters["polls"] += 1
        self.counters["claimed"] += len(claims)
        self.last_poll_ms = (time.perf_counter() - started) * 1000
        return claims

    def adopt(self, claim: Claim) -> asyncio.Task[None]:
        """Run ``claim`` here: a run this instance claimed, or one a worker took from the
        broker. Its lock is renewed (and its cancel seen) by each ``poll``; the task ends once
        the run is recorded."""
        run = _Run(claim)
        if self._stop_reason is not None:  # adopted while the runs are being stopped
            run.reason = self._stop_reason
            run.stop.set()
        self._runs[claim.token] = run
        run.task = asyncio.create_task(self._execute(run), name=f"job-{claim.job.id}")
        return run.task

    def duty(self, name: str) -> PeriodicTask:
        """The listed duty called ``name`` (KeyError when none is)."""
        for duty in self.duties:
            if duty.name == name:
                return duty
        raise KeyError(name)

    async def perform(self, duty: PeriodicTask | str) -> object:
        """One turn of ``duty`` (or the listed one of that name), as ``run`` takes it: None
        without running it when it is leader-only and this instance does not lead."""
        task = self.duty(duty) if isinstance(duty, str) else duty
        if task.leader_only and not self.leader.is_leader:
            return None
        return await task.run()

    async def wait_idle(self) -> None:
        """Wait until every run started here has finished and been recorded."""
        while self._runs:
            tasks = [run.task for run in self._runs.values() if run.task is not None]
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stop_runs(self, reason: str = SHUTDOWN) -> None:
        """Stop every run here and wait for them: as the service stops (``shutdown``: failed,
        retried at once as a new execution), or handed back to the broker unfinished
        (``handback``: a stopping worker's, resumed by another). Runs adopted later stop at
        once the same way."""
        self._stop_reason = reason
        for run in self._runs.values():
            run.reason = run.reason or reason
            run.stop.set()
        await self.wait_idle()

    async def refresh_metrics(self) -> dict[str, Any]:
        """Aggregate the scheduler metrics (the service calls this every 30 s)."""
        now = self.clock()
        counts = await self.store.jobs.status_counts()
        self._snapshot = {
            "instance_id": self.instance_id,
            "is_leader": self.leader.is_leader,
            "collected_at": now,
            "jobs": {**counts, "total": sum(counts.values())},
            "executions": await self.store.executions.summary(),
            "executions_24h": await self.store.executions.summary(since=now - 86400),
            "running_here": len(self._runs),
            "last_poll_ms": round(self.last_poll_ms, 2),
            **self.counters,
        }
        return self._snapshot

    async def source_changed(self, source_id: int) -> SyncPlan:
        """A source was enabled or disabled (the service's event): give it its recurring job,
        or cancel the one it has."""
        return await sync_enabled_sources(
            self.store,
            interval_minutes=self.source_job_interval_minutes,
            source_ids=[source_id],
            dry_run=False,
        )

    def metrics(self) -> dict[str, Any]:
        """The last aggregated metrics (empty before the first ``refresh_metrics``)."""
        return dict(self._snapshot)

    # -- a run --------------------------------------------------------------------------------

    async def _execute(self, run: _Run) -> None:
        claim = run.claim
        job, execution = claim.job, claim.execution
        try:
            # A run taken up again (a redelivery) numbers its lines after those stored.
            after = await self._through_outage(
                run, lambda: self.store.executions.last_log_seq(execution.id)
            )
            with (
                self.logs.capture(execution.id, after=after),
                self.progress.track(execution.id, execution.started_at) as progress,
            ):
                # A resumed execution (taken over, handed back) counts on from what its
                # former holders stored: its counts are summed over every holder.
                progress.fetched = execution.items_crawled
                progress.stored = execution.items_indexed
                progress.failed = execution.items_failed
                log.info(
                    "job %d: execution %d started (attempt %d)",
                    job.id,
                    execution.execution_number,
                    execution.retry_attempt,
                )
                try:
                    if job.is_forced:  # the mark moves to this run's execution
                        await self._through_outage(
                            run, lambda: self.store.jobs.take_forced(job, execution)
                        )
                    source = await self._through_outage(
                        run, lambda: self.store.sources.get(job.source_id)
                    )
                    result = await self.runner.run(job, source, execution, run.stop)
                except Exception as exc:
                    log.exception("job %d: the run failed", job.id)
                    source, result = None, failure(exc)
                forced = {k: execution.metadata[k] for k in FORCED_MARKS if k in execution.metadata}
                result.metadata.update(forced)  # kept by the execution's final record
                await self._store_progress(execution.id, progress)  # the run's last sample
                if run.reason == HANDBACK and await self._hand_back(run):
                    return
                step = await next_step(self.store, run.claim, run.reason, source, result)
                log.info(
                    "job %d: execution %d %s; job %s",
                    job.id,
                    execution.execution_number,
                    result.status.value,
                    step.status.value,
                )
            # Every line first, then the end: a reader ends its stream once the execution is
            # final and it has read the stored lines, so none may come after. Both wait out
            # an outage: lines are stored once by (execution, seq), and a finish repeated
            # after a commit whose answer was lost finds its lock already released and
            # changes nothing.
            await self._through_outage(run, lambda: self.log_writer.flush(ending=execution.id))
            await self._through_outage(run, lambda: self.store.locks.finish(claim, result, step))
        except HarvestmanError as exc:  # stopped in an outage: the lock expires and is swept
            log.error("job %d: could not record execution %d: %s", job.id, execution.id, exc)
        except Exception:  # a bug; the lock expires and the sweep records the run as failed
            log.exception("job %d: execution %d could not be recorded", job.id, execution.id)
        finally:
            self._runs.pop(claim.token, None)
            if self.logs.is_capturing(execution.id):  # the flush above did not happen
                with contextlib.suppress(HarvestmanError):
                    await self.log_writer.flush(ending=execution.id)

    async def _through_outage(self, run: _Run, step: Callable[[], Awaitable[_T]]) -> _T:
        """``step`` (a read, or a write that can be repeated), taken again while the store is
        away, until it answers or the run is stopped. A run that starts or ends as the store
        goes away waits for it, as its lock's renewals do, rather than ending unrecorded and
        leaving its job to the lock's expiry (and another run). A refusal (StoreRejected) is
        raised at once: no wait makes it pass."""
        while True:
            try:
                answer = await step()
            except StoreRejected:
                raise
            except StoreError as exc:
                self.outage.failed(exc)
                if run.stop.is_set():
                    raise
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STORE_RETRY_SECONDS):
                        await run.stop.wait()
                continue
            self.outage.recovered()
            return answer

    async def _hand_back(self, run: _Run) -> bool:
        """Return a stopped run's execution to the broker's queue, unfinished, for another
        worker to resume; False when its lock is no longer this run's."""
        claim = run.claim
        if not await self.store.handover.hand_back(claim, self.instance_id):
            return False
        log.info(
            "job %d: execution %d handed back: this worker is stopping",
            claim.job.id,
            claim.execution.execution_number,
        )
        return True

    async def flush_logs(self) -> None:
        """Store the new log lines of the runs in progress (the flush loop's step)."""
        await self.log_writer.flush()

    async def record_progress(self) -> int:
        """Store the counters of the runs in progress here (the progress loop's step, every
        ``progress_interval``); how many were stored."""
        stored = 0
        for execution_id, progress in self.progress.running().items():
            stored += await self._store_progress(execution_id, progress)
        return stored

    async def record_progress_when_due(self) -> None:
        now = self.clock()
        if now < self._progress_due:
            return
        self._progress_due = now + self.config.progress_interval
        await self.record_progress()

    async def _store_progress(self, execution_id: int, progress: RunProgress) -> bool:
        progress.sample(self.clock())
        try:
            return await self.store.executions.record_progress(
                execution_id, progress.samples, progress.pages_per_second
            )
        except HarvestmanError as exc:  # the counters are stored again with the next sample
            log.warning("execution %d: counters not stored: %s", execution_id, exc)
            return False

    # -- the service --------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask ``run`` to end: runs in progress are stopped and retried at once elsewhere."""
        self._stopping.set()

    async def run(self) -> None:
        """Poll, hold the leader's lease when free, and keep every duty going until ``stop``."""
        self.logs.install()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._every(self.config.poll_interval, self.poll))
                group.create_task(self._every(self.leader.ttl / 3, self._maintain))
                for duty in self.duties:
                    group.create_task(self._keep(duty), name=f"duty-{duty.name}")
        finally:
            await self.stop_runs()
            for duty in self.duties:
                with contextlib.suppress(Exception):
                    await duty.close()
            with contextlib.suppress(HarvestmanError):
                await self.leader.release()
            self.logs.uninstall()

    async def _every(self, interval: float, step: Callable[[], Awaitable[object]]) -> None:
        while not self._stopping.is_set():
            try:
                await step()
                if step == self._maintain:  # it always reaches the store (the lease)
                    self.outage.recovered()
            except StoreError as exc:  # said once per outage, not once per step and period
                self.outage.failed(exc)
            except HarvestmanError as exc:
                log.warning("scheduler: %s failed: %s", getattr(step, "__name__", step), exc)
            await self._pause(interval)

    async def _keep(self, duty: PeriodicTask) -> None:
        """Run ``duty`` every its interval; a leader-only one from when this instance leads.
        Whatever it raises is logged here: the other duties and the polls go on."""
        while not self._stopping.is_set():
            if duty.leader_only and not self.leader.is_leader:
                self._leading.clear()  # set again by the next lease taken
                await self._pause(self.leader.ttl / 3, self._leading)
                continue
            try:
                await duty.run()
            except StoreError as exc:
                self.outage.failed(exc)
            except HarvestmanError as exc:
                log.warning("scheduler: %s failed: %s", duty.name, exc)
            except Exception:  # a bug in one duty; the others and the next turn go on
                log.exception("scheduler: %s failed", duty.name)
            await self._pause(duty.interval)

    async def _pause(self, seconds: float, until: asyncio.Event | None = None) -> None:
        """Wait ``seconds``, or less when the scheduler stops (or ``until`` is set)."""
        waits = [self._stopping.wait()] + ([until.wait()] if until is not None else [])
        tasks = [asyncio.ensure_future(w) for w in waits]
        try:
            await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()

    async def _maintain(self) -> None:
        if await self.leader.acquire():
            self._leading.set()  # the leader-only duties waiting for it start now
        else:
            self._leading.clear()
