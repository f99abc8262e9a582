"""The scheduler: polls for due jobs, runs them, and records what happened.

Each ``poll`` (every ``poll_interval``, 10 s) renews the locks of the runs in progress, stops
those whose job was cancelled, and takes as many due jobs as there are free run slots, each by
compare-and-set (``JobLocks``). A run ends in ``lifecycle``'s next step: a recurring success is
scheduled one (adaptive) interval after its planned time, a failure is retried with backoff
until its retries are used up. The maintenance ``sweep`` (stale locks, history pruning) runs on
the instance holding the ``LeaderLease``, and so does the data retention (``lifecycle``), once
per ``retention_interval`` (a day) across all instances, and so do the scheduled backups
(``backups``: once per its interval, the same way). Source events (``jobs.events``) are
followed as they come: a source enabled or disabled gets or loses its recurring job at once.
With a ``dispatcher`` (``broker_url`` set) the leader publishes due jobs to the broker instead
of running them, and ``harvestman worker`` runs them here through ``adopt`` (``jobs.consumer``).
A run's counters (``jobs.progress``) are stored every ``progress_interval`` (by ``run``'s loop,
or by ``poll``: a broker worker only polls) and as it ends.
Time comes from the store's clock, so tests drive ``poll``, ``sweep``, ``retain``, ``back_up``,
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
from typing import TYPE_CHECKING, Any, Protocol

from harvestman.errors import HarvestmanError, StoreError
from harvestman.jobs import adaptive, lifecycle
from harvestman.jobs.events import SourceEvents, Subscription
from harvestman.jobs.logs import LogCapture, LogWriter
from harvestman.jobs.outage import Outage
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
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.leader import LeaderLease

if TYPE_CHECKING:
    from harvestman.jobs.dispatch import Dispatcher
    from harvestman.store.lifecycle.backups import BackupRun
    from harvestman.store.lifecycle.retention import RetentionReport, RetentionRules
    from harvestman.store.lifecycle.schedule import BackupSchedule

log = logging.getLogger(__name__)

# What a forced run's execution says from its start, kept in its final record.
FORCED_MARKS = (FORCED, FORCED_PLANNED)

RETENTION = "retention"
BACKUP = "backup"

INTERRUPTED = "Interrupted: the service stopped during the run"

SHUTDOWN = "shutdown"  # why runs are stopped: the service stops (failed, retried at once)
HANDBACK = "handback"  # a broker worker stops: the execution goes back to the queue unfinished


class Runner(Protocol):
    """Runs one execution of a job and reports it; never raises for a failed crawl.

    ``stop`` is set when the run must end early (the job was cancelled, or the service is
    stopping): the runner should wind down promptly and return what it has.
    """

    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult: ...


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
        *,
        instance_id: str | None = None,
        poll_interval: float = 10.0,
        max_concurrent: int = 4,
        stale_lock_seconds: float = 300.0,
        sweep_interval: float = 60.0,
        metrics_interval: float = 30.0,
        history_max: int = 100,
        history_days: float = 30.0,
        retry_backoff_cap: float = lifecycle.RETRY_BACKOFF_CAP,
        adaptive_max_interval: float = adaptive.ADAPTIVE_MAX_INTERVAL,
        leader_ttl: float = 30.0,
        source_job_interval_minutes: int = 360,
        log_capture: LogCapture | None = None,
        log_flush_interval: float = 1.0,
        progress_interval: float = 5.0,
        progress_samples: int = 360,
        events: SourceEvents | None = None,
        retention: RetentionRules | None = None,
        retention_interval: float = 86400.0,
        backups: BackupSchedule | None = None,
        dispatcher: Dispatcher | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.dispatcher = dispatcher
        self.instance_id = instance_id or (
            f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        )
        self.poll_interval = poll_interval
        self.max_concurrent = max_concurrent
        self.stale_lock_seconds = stale_lock_seconds
        self.sweep_interval = sweep_interval
        self.metrics_interval = metrics_interval
        self.history_max = history_max
        self.history_days = history_days
        self.retry_backoff_cap = retry_backoff_cap
        self.adaptive_max_interval = adaptive_max_interval
        self.source_job_interval_minutes = source_job_interval_minutes
        self.leader = LeaderLease(store, self.instance_id, ttl=leader_ttl)
        self.events = events
        self.listening = asyncio.Event()  # set once ``run`` follows the source events
        self.retention = retention
        # Whoever takes this turn runs the retention; it comes back once per interval.
        self.retention_turn = LeaderLease(
            store, self.instance_id, name=RETENTION, ttl=retention_interval
        )
        self.backups = backups
        # Like the retention's: whoever takes the turn backs up; it comes back once per interval.
        self.backup_turn = LeaderLease(
            store, self.instance_id, name=BACKUP, ttl=backups.interval if backups else 86400.0
        )
        self.logs = log_capture or LogCapture(clock=store.clock)
        self.outage = Outage("scheduler: the job store", store.clock)
        self.log_flush_interval = log_flush_interval
        self.log_writer = LogWriter(self.logs, store.executions)
        self.progress = ProgressBoard(progress_samples)
        self.progress_interval = progress_interval
        self._progress_due = 0.0
        self._runs: dict[str, _Run] = {}
        self._stopping = asyncio.Event()
        self._stop_reason: str | None = None
        self._next_sweep = 0.0
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
        await self._record_progress_when_due()
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

    async def sweep(self) -> dict[str, int]:
        """Maintenance: clear stale locks, prune execution history (the leader runs it).

        Not within ``stale_lock_seconds`` of the end of a store outage this instance saw:
        no holder could renew meanwhile, and each live one renews as the store comes back."""
        back_at = self.outage.back_at
        cleared = 0
        if back_at is None or self.clock() - back_at >= self.stale_lock_seconds:
            cleared = await self.store.locks.clear_stale(
                self.stale_lock_seconds, backoff_cap=self.retry_backoff_cap
            )
        pruned = await self.store.executions.prune(
            keep=self.history_max, max_age_days=self.history_days
        )
        if cleared:
            log.warning("cleared %d stale job locks", cleared)
        self.counters["stale_locks_cleared"] += cleared
        self.counters["pruned"] += pruned
        return {"stale_locks_cleared": cleared, "pruned": pruned}

    async def retain(self) -> RetentionReport | None:
        """The data retention, when this instance leads and the day's turn is free: it runs
        at most once per ``retention_interval`` across all instances. None when it did not
        run (not leader, not due, or no rules)."""
        if self.retention is None or not self.leader.is_leader:
            return None
        if not await self.retention_turn.take_expired():
            return None
        from harvestman.store.lifecycle.retention import apply_retention

        log.info("running the data retention (this instance leads)")
        try:
            report = await asyncio.to_thread(
                apply_retention, self.store.engine, self.retention, self.clock()
            )
        except HarvestmanError:
            raise
        except Exception:  # an export that could not be written: logged, retried next turn
            log.exception("the data retention failed")
            return None
        self.counters["retention_runs"] += 1
        log.info("retention: %s", report)
        return report

    async def back_up(self) -> BackupRun | None:
        """A scheduled backup, when this instance leads and the turn is free (at most once per
        the schedule's interval across all instances). None when it did not run. A failed
        backup is recorded in the store (and so in ``/metrics``), not raised."""
        if self.backups is None or not self.leader.is_leader:
            return None
        if not await self.backup_turn.take_expired():
            return None
        log.info("taking the scheduled backup (this instance leads)")
        try:
            run = await asyncio.to_thread(self.backups.run, self.store.engine, self.clock())
        except Exception:  # the store is away: nothing recorded, retried next turn
            log.exception("the scheduled backup could not be recorded")
            return None
        self.counters["backup_runs"] += 1
        self.counters["backup_failures"] += run.error is not None
        return run

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

    async def on_source_events(self, subscription: Subscription, wait: float = 1.0) -> int:
        """Act on the source events that arrive within ``wait`` seconds; how many."""
        events = [e for e in await subscription.get(wait) if e.origin != self.instance_id]
        for event in events:
            log.info(
                "source %d %s: syncing its job",
                event.source_id,
                "enabled" if event.enabled else "disabled",
            )
            try:
                await self.source_changed(event.source_id)
            except HarvestmanError as exc:  # the reconciliation repairs it later
                log.warning("source %d: could not sync its job: %s", event.source_id, exc)
            self.counters["source_events"] += 1
        return len(events)

    async def _follow_sources(self) -> None:
        assert self.events is not None
        while not self._stopping.is_set():
            try:
                subscription = await self.events.subscribe()
                break
            except HarvestmanError as exc:
                log.warning("scheduler: source events unavailable, retrying: %s", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.poll_interval)
        else:
            return
        self.listening.set()
        try:
            while not self._stopping.is_set():
                await self.on_source_events(subscription)
        finally:
            self.listening.clear()
            await subscription.close()

    def metrics(self) -> dict[str, Any]:
        """The last aggregated metrics (empty before the first ``refresh_metrics``)."""
        return dict(self._snapshot)

    # -- a run --------------------------------------------------------------------------------

    async def _execute(self, run: _Run) -> None:
        claim = run.claim
        job, execution = claim.job, claim.execution
        try:
            # A run taken up again (a redelivery) numbers its lines after those stored.
            after = await self.store.executions.last_log_seq(execution.id)
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
                        await self.store.jobs.take_forced(job, execution)
                    source = await self.store.sources.get(job.source_id)
                    result = await self.runner.run(job, source, execution, run.stop)
                except Exception as exc:
                    log.exception("job %d: the run failed", job.id)
                    source, result = None, failure(exc)
                forced = {k: execution.metadata[k] for k in FORCED_MARKS if k in execution.metadata}
                result.metadata.update(forced)  # kept by the execution's final record
                await self._store_progress(execution.id, progress)  # the run's last sample
                if run.reason == HANDBACK and await self._hand_back(run):
                    return
                step = await self._next_step(run, source, result)
                log.info(
                    "job %d: execution %d %s; job %s",
                    job.id,
                    execution.execution_number,
                    result.status.value,
                    step.status.value,
                )
            # Every line first, then the end: a reader ends its stream once the execution is
            # final and it has read the stored lines, so none may come after.
            await self.log_writer.flush(ending=execution.id)
            await self.store.locks.finish(claim, result, step)
        except HarvestmanError as exc:  # the store is away: the lock expires and is swept
            log.error("job %d: could not record execution %d: %s", job.id, execution.id, exc)
        except Exception:  # a bug; the lock expires and the sweep records the run as failed
            log.exception("job %d: execution %d could not be recorded", job.id, execution.id)
        finally:
            self._runs.pop(claim.token, None)
            if self.logs.is_capturing(execution.id):  # the flush above did not happen
                with contextlib.suppress(HarvestmanError):
                    await self.log_writer.flush(ending=execution.id)

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

    async def _next_step(
        self, run: _Run, source: Source | None, result: ExecutionResult
    ) -> lifecycle.NextStep:
        job, now = run.claim.job, self.clock()
        if run.reason in (SHUTDOWN, HANDBACK):  # (a hand-back here found its lock gone)
            result.status = ExecutionStatus.FAILED
            result.error_message = INTERRUPTED
            return lifecycle.after_failure(job, now, count_attempt=False)
        if run.reason is not None:  # cancelled, or the lock was lost: the job is not ours
            result.status = ExecutionStatus.CANCELLED
            status = JobStatus.CANCELLED
            return lifecycle.NextStep(status, None, job.current_retry_count, (status,))
        if result.status is ExecutionStatus.COMPLETED:
            marks = run.claim.execution.metadata
            if marks.get(FORCED):  # an extra run: the adaptive interval and the plan stay
                interval = await self._interval(job, source, result, now, observe=False)
                planned = marks.get(FORCED_PLANNED)
                return lifecycle.after_forced_success(job, interval, now, planned)
            interval = await self._interval(job, source, result, now)
            return lifecycle.after_success(job, interval, now)
        return lifecycle.after_failure(job, now, cap=self.retry_backoff_cap)

    async def _interval(
        self,
        job: Job,
        source: Source | None,
        result: ExecutionResult,
        now: float,
        *,
        observe: bool = True,
    ) -> float | None:
        """The interval until the job's next run; ``observe``: the run's start pages count
        towards adaptive scheduling (a forced run's do not: it neither stretches nor resets
        the interval)."""
        baseline = job.interval_seconds
        if baseline is None or not job.adaptive_scheduling or source is None:
            return baseline
        try:
            state = await self.store.sources.adaptive_state(source.id)
            if not observe:
                return state.current_interval or baseline
            state = adaptive.observe(
                state, result.start_hashes, baseline, now, self.adaptive_max_interval
            )
            await self.store.sources.save_adaptive_state(state)
        except HarvestmanError as exc:
            log.warning("job %d: adaptive state unavailable, fixed interval: %s", job.id, exc)
            return baseline
        log.info(
            "job %d: start pages unchanged %d times, next interval %ds",
            job.id,
            state.unchanged_count,
            state.current_interval or baseline,
        )
        return state.current_interval or baseline

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

    async def _record_progress_when_due(self) -> None:
        now = self.clock()
        if now < self._progress_due:
            return
        self._progress_due = now + self.progress_interval
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
        """Poll, maintain (when leader) and aggregate metrics until ``stop``."""
        self.logs.install()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._every(self.poll_interval, self.poll))
                group.create_task(self._every(self.log_flush_interval, self.flush_logs))
                group.create_task(
                    self._every(self.progress_interval, self._record_progress_when_due)
                )
                group.create_task(self._every(self.leader.ttl / 3, self._maintain))
                group.create_task(self._every(self.metrics_interval, self.refresh_metrics))
                if self.retention is not None:
                    group.create_task(self._every(self.leader.ttl, self.retain))
                if self.backups is not None:
                    group.create_task(self._every(self.leader.ttl, self.back_up))
                if self.events is not None:
                    group.create_task(self._follow_sources())
        finally:
            await self.stop_runs()
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), interval)

    async def _maintain(self) -> None:
        if not await self.leader.acquire():
            return
        now = self.clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_interval
            await self.sweep()
