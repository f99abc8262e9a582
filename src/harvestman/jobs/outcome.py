"""What a finished run's job does next: ``lifecycle``'s step for the run's result, the reason
it was stopped (``SHUTDOWN``, ``HANDBACK``, a cancel) and, for a recurring job with adaptive
scheduling, the interval its start pages earned (``jobs.adaptive``, kept in the store)."""

from __future__ import annotations

import logging

from harvestman.errors import HarvestmanError
from harvestman.jobs import adaptive, lifecycle
from harvestman.jobs.records import (
    FORCED,
    FORCED_PLANNED,
    Claim,
    ExecutionResult,
    ExecutionStatus,
    Job,
    Source,
)
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.db import JobStore

log = logging.getLogger(__name__)

INTERRUPTED = "Interrupted: the service stopped during the run"

SHUTDOWN = "shutdown"  # why runs are stopped: the service stops (failed, retried at once)
HANDBACK = "handback"  # a broker worker stops: the execution goes back to the queue unfinished


async def next_step(
    store: JobStore,
    claim: Claim,
    reason: str | None,
    source: Source | None,
    result: ExecutionResult,
) -> lifecycle.NextStep:
    """The job's next step after ``claim``'s run gave ``result``; ``reason``: why the run was
    stopped (None: it ended on its own). A stopped run's ``result`` is marked here."""
    job, now = claim.job, store.clock()
    if reason in (SHUTDOWN, HANDBACK):  # (a hand-back here found its lock gone)
        result.status = ExecutionStatus.FAILED
        result.error_message = INTERRUPTED
        return lifecycle.after_failure(job, now, count_attempt=False)
    if reason is not None:  # cancelled, or the lock was lost: the job is not ours
        result.status = ExecutionStatus.CANCELLED
        status = JobStatus.CANCELLED
        return lifecycle.NextStep(status, None, job.current_retry_count, (status,))
    if result.status is ExecutionStatus.COMPLETED:
        marks = claim.execution.metadata
        if marks.get(FORCED):  # an extra run: the adaptive interval and the plan stay
            interval = await _interval(store, job, source, result, now, observe=False)
            planned = marks.get(FORCED_PLANNED)
            return lifecycle.after_forced_success(job, interval, now, planned)
        interval = await _interval(store, job, source, result, now)
        return lifecycle.after_success(job, interval, now)
    return lifecycle.after_failure(job, now)


async def _interval(
    store: JobStore,
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
        state = await store.sources.adaptive_state(source.id)
        if not observe:
            return state.current_interval or baseline
        state = adaptive.observe(state, result.start_hashes, baseline, now)
        await store.sources.save_adaptive_state(state)
    except HarvestmanError as exc:
        log.warning("job %d: adaptive state unavailable, fixed interval: %s", job.id, exc)
        return baseline
    interval = state.current_interval or baseline
    if state.unchanged_count:
        log.info(
            "job %d: start pages unchanged for %d runs in a row: next run in %s",
            job.id, state.unchanged_count, spoken(interval),
        )  # fmt: skip
    else:
        log.info("job %d: start pages changed or new: next run in %s", job.id, spoken(interval))
    return interval


def spoken(seconds: float) -> str:
    """An interval as a person says it, in its largest unit.

    >>> spoken(21600), spoken(129600), spoken(1800), spoken(45)
    ('6 h', '1.5 d', '30 min', '45 s')
    """
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"
