"""The run lock of a job: taken by compare-and-set, renewed while the run lasts, swept when
its holder has gone.

A poll reads due jobs and takes each with ``UPDATE jobs SET lock_token = :token ... WHERE id =
:id AND lock_token IS NULL AND status IN ('pending', 'scheduled') ...``: the row count decides,
so two instances on one database never run the same job. On PostgreSQL the read also skips
rows another poll is taking (``FOR UPDATE SKIP LOCKED``); on SQLite the whole poll is one
IMMEDIATE transaction.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from sqlalchemy import Connection, func, or_, select, update

from harvestman.jobs import lifecycle
from harvestman.jobs.lifecycle import NextStep
from harvestman.jobs.records import Claim, Execution, ExecutionResult, ExecutionStatus, Job
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.handover import waiting_condition
from harvestman.store.jobs.repository import _RUNNABLE, job_from_row
from harvestman.store.jobs.tables import job_executions, jobs, sources

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase

LOCK_EXPIRED = "LockExpired: the instance running the job stopped renewing its lock"


class JobLocks:
    """Claiming, renewing, finishing and sweeping job locks."""

    def __init__(self, store: JobDatabase) -> None:
        self._store = store

    async def claim_due(
        self, holder: str, limit: int, *, only: Collection[int] | None = None
    ) -> list[Claim]:
        """Take up to ``limit`` due jobs (earliest first; among ``only`` when given) and open
        an execution for each.

        One execution per source at a time: a source's jobs share its crawl namespace
        (frontier, leases, start pages), and a second run on it found the first one's URLs
        leased and ended "completed" with nothing. A job whose source has a job locked
        (running, or waiting in the broker's queue) stays due and is claimed once that one
        ends; in one batch only a source's earliest due job is taken. This is also the
        fairness between sources: a source with many jobs holds one slot, not the queue.
        The sources' rows are locked (in id order) before the check, so two claimers cannot
        both find one source free."""
        now = self._store.clock()
        if limit <= 0 or (only is not None and not only):
            return []

        def _claim() -> list[Claim]:
            busy = jobs.alias("busy")
            source_busy = (
                select(busy.c.id)
                .where(
                    busy.c.source_id == jobs.c.source_id,
                    busy.c.lock_token.is_not(None),
                    # a held lock has its time set: ix_jobs_lock_acquired_at finds the few
                    busy.c.lock_acquired_at.is_not(None),
                )
                .exists()
            )
            conditions = [
                jobs.c.status.in_(_RUNNABLE),
                jobs.c.next_run_at <= now,
                jobs.c.is_paused.is_(False),
                jobs.c.lock_token.is_(None),
                ~source_busy,
            ]
            if only is not None:
                conditions.append(jobs.c.id.in_(list(only)))
            query = (
                select(jobs)
                .where(*conditions)
                .order_by(jobs.c.next_run_at, jobs.c.id)
                .limit(limit)
                # SKIP LOCKED on PostgreSQL; SQLite compiles no FOR UPDATE (IMMEDIATE instead)
                .with_for_update(skip_locked=True)
            )
            claims: list[Claim] = []
            with self._store.begin() as conn:
                due: dict[int, Job] = {}  # source id -> its earliest due job
                for row in conn.execute(query).mappings():
                    due.setdefault(int(row["source_id"]), job_from_row(row))
                if due:  # no-op on SQLite (its IMMEDIATE transaction serializes claimers)
                    conn.execute(
                        select(sources.c.id)
                        .where(sources.c.id.in_(sorted(due)))
                        .order_by(sources.c.id)
                        .with_for_update()
                    ).all()
                for job in sorted(due.values(), key=lambda j: j.id):  # one lock order
                    token = uuid.uuid4().hex
                    taken = conn.execute(
                        update(jobs)
                        .where(
                            jobs.c.id == job.id,
                            jobs.c.lock_token.is_(None),
                            jobs.c.status.in_(_RUNNABLE),
                            jobs.c.is_paused.is_(False),
                            jobs.c.next_run_at <= now,
                            ~source_busy,  # read again now that the source is locked
                        )
                        # pending -> scheduled -> running, or scheduled -> running
                        .values(
                            status=JobStatus.RUNNING.value,
                            lock_token=token,
                            lock_acquired_at=now,
                            locked_by=holder,
                            updated_at=now,
                        )
                    ).rowcount
                    if taken != 1:
                        continue
                    claims.append(Claim(job, token, self._open_execution(conn, job, now)))
            return claims

        return await self._store.run(_claim)

    @staticmethod
    def _open_execution(conn: Connection, job: Job, now: float) -> Execution:
        number = conn.execute(
            select(func.coalesce(func.max(job_executions.c.execution_number), 0)).where(
                job_executions.c.job_id == job.id
            )
        ).scalar_one()
        execution = Execution(
            id=0,
            job_id=job.id,
            execution_number=int(number) + 1,
            status=ExecutionStatus.RUNNING,
            started_at=now,
            retry_attempt=job.current_retry_count,
        )
        new_id = conn.execute(
            job_executions.insert().values(
                job_id=job.id,
                execution_number=execution.execution_number,
                status=execution.status.value,
                started_at=now,
                items_crawled=0,
                items_indexed=0,
                retry_attempt=execution.retry_attempt,
                metadata="{}",
            )
        ).inserted_primary_key
        assert new_id is not None
        execution.id = int(new_id[0])
        return execution

    async def renew(self, tokens: Mapping[str, int] | Collection[str]) -> set[str]:
        """Renew the locks ``tokens``; return those whose run must stop: the job was cancelled,
        or the lock is gone (swept as stale, or taken over, so another instance may run the
        job). Given as a mapping of token -> job id, the rows are found by primary key: with
        100,000 jobs, a renewal by token alone scans them all (no index on ``lock_token``):
        140 ms a call (bench/jobs_broker_bench.py --lock-checks)."""
        if not tokens:
            return set()
        now = self._store.clock()
        conditions = [jobs.c.lock_token.in_(list(tokens))]
        if isinstance(tokens, Mapping):
            conditions.append(jobs.c.id.in_(sorted(set(tokens.values()))))

        def _renew() -> set[str]:
            with self._store.begin() as conn:
                conn.execute(update(jobs).where(*conditions).values(lock_acquired_at=now))
                held = dict(
                    conn.execute(select(jobs.c.lock_token, jobs.c.status).where(*conditions)).all()
                )
            return {t for t in tokens if held.get(t, JobStatus.CANCELLED) != JobStatus.RUNNING}

        return await self._store.run(_renew)

    async def finish(
        self, claim: Claim, result: ExecutionResult, step: NextStep
    ) -> JobStatus | None:
        """Close the execution and move the job to ``step`` (releasing the lock).

        If the job is no longer running under this lock it was cancelled (the execution ends
        cancelled and the lock is released), or its lock was swept (the sweep already failed
        the execution) or taken over (``ExecutionHandover.take``: the new holder closes the
        execution), and the execution is left alone. Returns the job's state afterwards
        (None: the job was deleted).
        """
        now = self._store.clock()
        execution = claim.execution

        def _finish() -> JobStatus | None:
            status = result.status
            with self._store.begin() as conn:
                moved = conn.execute(
                    update(jobs)
                    .where(
                        jobs.c.id == claim.job.id,
                        jobs.c.lock_token == claim.token,
                        jobs.c.status == JobStatus.RUNNING.value,
                    )
                    .values(
                        status=step.status.value,
                        next_run_at=step.next_run_at,
                        current_retry_count=step.retry_count,
                        last_run_at=execution.started_at,
                        last_error=result.error_message,
                        lock_token=None,
                        lock_acquired_at=None,
                        locked_by=None,
                        updated_at=now,
                    )
                ).rowcount
                if not moved:
                    released = conn.execute(
                        update(jobs)
                        .where(jobs.c.id == claim.job.id, jobs.c.lock_token == claim.token)
                        .values(lock_token=None, lock_acquired_at=None, locked_by=None)
                    ).rowcount
                    if not released:  # swept or taken over: the execution is not ours
                        state = conn.execute(
                            select(jobs.c.status).where(jobs.c.id == claim.job.id)
                        ).scalar()
                        return None if state is None else JobStatus(state)
                    status = ExecutionStatus.CANCELLED
                conn.execute(
                    update(job_executions)
                    .where(
                        job_executions.c.id == execution.id,
                        job_executions.c.status == ExecutionStatus.RUNNING.value,
                    )
                    .values(
                        status=status.value,
                        completed_at=now,
                        duration_ms=round((now - execution.started_at) * 1000),
                        items_crawled=result.items_crawled,
                        items_indexed=result.items_indexed,
                        error_message=result.error_message,
                        stack_trace=result.stack_trace,
                        cpu_time_ms=result.cpu_time_ms,
                        memory_peak_mb=result.memory_peak_mb,
                        metadata=json.dumps(result.metadata),
                    )
                )
                state = conn.execute(
                    select(jobs.c.status).where(jobs.c.id == claim.job.id)
                ).scalar()
            return None if state is None else JobStatus(state)

        return await self._store.run(_finish)

    async def clear_stale(self, stale_seconds: float, *, backoff_cap: float) -> int:
        """Clear locks not renewed for ``stale_seconds``: a running job's run counts as failed
        (retry with backoff, or failed), its open execution is closed failed. Returns the
        number of locks cleared.

        A claim waiting in the broker's queue (``queued:``, ``publishing:``) has no holder to
        lose: it is never stale, however long the backlog (``Dispatcher`` publishes it again
        when it lapses)."""
        now = self._store.clock()

        def _sweep() -> int:
            cleared = 0
            with self._store.begin() as conn:
                rows = conn.execute(
                    select(jobs).where(
                        jobs.c.lock_token.is_not(None),
                        jobs.c.lock_acquired_at < now - stale_seconds,
                        or_(jobs.c.locked_by.is_(None), ~waiting_condition()),
                    )
                ).mappings()
                for job in [job_from_row(row) for row in rows]:
                    values: dict[str, object] = {
                        "lock_token": None,
                        "lock_acquired_at": None,
                        "locked_by": None,
                        "updated_at": now,
                    }
                    if job.status is JobStatus.RUNNING:
                        step = lifecycle.after_failure(job, now, cap=backoff_cap)
                        values.update(
                            status=step.status.value,
                            next_run_at=step.next_run_at,
                            current_retry_count=step.retry_count,
                            last_error=LOCK_EXPIRED,
                        )
                    cleared += conn.execute(
                        update(jobs)
                        .where(jobs.c.id == job.id, jobs.c.lock_token == job.lock_token)
                        .values(**values)
                    ).rowcount
                    conn.execute(
                        update(job_executions)
                        .where(
                            job_executions.c.job_id == job.id,
                            job_executions.c.status == ExecutionStatus.RUNNING.value,
                        )
                        .values(
                            status=ExecutionStatus.FAILED.value,
                            completed_at=now,
                            error_message=LOCK_EXPIRED,
                        )
                    )
            return cleared

        return await self._store.run(_sweep)
