"""What happens to a job after a run: the next state, the next run, the retry count.

Pure functions of the job, the outcome and the time, so the scheduler and the stale-lock sweep
decide the same way and tests need no database::

    >>> retry_delay(60, 1), retry_delay(60, 3), retry_delay(60, 7)
    (60.0, 240.0, 3600.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harvestman.jobs.records import Job
from harvestman.jobs.states import JobStatus

RETRY_BACKOFF_CAP = 3600.0


@dataclass(slots=True, frozen=True)
class NextStep:
    """The job's state after a run; ``path`` is the transitions taken from running."""

    status: JobStatus
    next_run_at: float | None
    retry_count: int
    path: tuple[JobStatus, ...]


def retry_delay(base: float, attempt: int, cap: float = RETRY_BACKOFF_CAP) -> float:
    """``base × 2^(attempt-1)`` seconds, at most ``cap`` (attempt 1 is the first retry)."""
    exponent = min(max(attempt - 1, 0), 62)
    return float(min(base * 2**exponent, cap))


def next_run_keeping_phase(planned: float, interval: float, now: float) -> float:
    """The next run of a recurring job one interval after its planned run, stepped forward by
    whole intervals past ``now`` so it keeps its phase (and its slot) after a late run."""
    due = planned + interval
    if due < now:
        due += math.ceil((now - due) / interval) * interval
    return due


def after_success(job: Job, interval: float | None, now: float) -> NextStep:
    """A recurring job is scheduled again ``interval`` after its planned run; a one-time job
    rests completed. Success resets the retry count."""
    if interval is None or not job.is_recurring:
        return NextStep(JobStatus.COMPLETED, None, 0, (JobStatus.COMPLETED,))
    planned = job.next_run_at if job.next_run_at is not None else now
    return NextStep(
        JobStatus.SCHEDULED,
        next_run_keeping_phase(planned, interval, now),
        0,
        (JobStatus.COMPLETED, JobStatus.SCHEDULED),
    )


def after_forced_success(
    job: Job, interval: float | None, now: float, planned: float | None
) -> NextStep:
    """A run asked for by hand (force-run) leaves the plan as it was: a recurring job's next
    run is ``planned``, the one the force-run brought forward (or, once that time has passed,
    the next one of its phase); a one-time job rests completed."""
    if interval is None or not job.is_recurring:
        return NextStep(JobStatus.COMPLETED, None, 0, (JobStatus.COMPLETED,))
    if planned is None:
        planned = now
    due = planned if planned >= now else next_run_keeping_phase(planned, interval, now)
    return NextStep(JobStatus.SCHEDULED, due, 0, (JobStatus.COMPLETED, JobStatus.SCHEDULED))


def after_failure(
    job: Job, now: float, *, cap: float = RETRY_BACKOFF_CAP, count_attempt: bool = True
) -> NextStep:
    """Retry after ``base × 2^(attempt-1)`` while attempts remain (failed -> pending), else rest
    failed. ``count_attempt`` false (the service stopped under the run) retries at once
    without using up an attempt."""
    if not count_attempt:
        return NextStep(
            JobStatus.PENDING, now, job.current_retry_count, (JobStatus.FAILED, JobStatus.PENDING)
        )
    attempt = job.current_retry_count + 1
    if attempt > job.max_retries:
        return NextStep(JobStatus.FAILED, None, job.current_retry_count, (JobStatus.FAILED,))
    return NextStep(
        JobStatus.PENDING,
        now + retry_delay(job.retry_backoff_seconds, attempt, cap),
        attempt,
        (JobStatus.FAILED, JobStatus.PENDING),
    )
