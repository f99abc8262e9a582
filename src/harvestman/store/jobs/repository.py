"""Jobs: CRUD, the user actions of the state machine, counts, and slot placement.

Every state change is one transaction whose UPDATE names the state it expects
(``WHERE status = :seen``), so an action racing the scheduler or another instance either
wins or re-reads the job and is judged against its new state.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select, update
from sqlalchemy.engine import RowMapping

from harvestman.jobs import buckets
from harvestman.jobs.errors import InvalidSpec, JobStateError, NotFound, UnknownSource
from harvestman.jobs.records import (
    FORCED,
    FORCED_PLANNED,
    UNIT_SECONDS,
    Execution,
    IntervalType,
    Job,
    JobSpec,
    ResultPage,
)
from harvestman.jobs.states import RUNNABLE, Action, JobStatus, allowed_actions, check_action
from harvestman.store import keyset
from harvestman.store.jobs.tables import job_executions, jobs, sources
from harvestman.store.keyset import Keyset

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase

SPEC_FIELDS = frozenset(f.name for f in fields(JobSpec))
_RUNNABLE = [state.value for state in RUNNABLE]
_KEYSET = Keyset(jobs.c.id)
# Fields whose change re-places a scheduled job.
_SCHEDULE_FIELDS = frozenset({"interval_minutes", "interval_type", "schedule_enabled"})


def job_from_row(row: RowMapping) -> Job:
    return Job(
        id=int(row["id"]),
        source_id=int(row["source_id"]),
        url=row["url"],
        status=JobStatus(row["status"]),
        interval_minutes=row["interval_minutes"],
        interval_type=IntervalType(row["interval_type"]),
        schedule_enabled=bool(row["schedule_enabled"]),
        adaptive_scheduling=bool(row["adaptive_scheduling"]),
        max_retries=int(row["max_retries"]),
        retry_backoff_seconds=int(row["retry_backoff_seconds"]),
        current_retry_count=int(row["current_retry_count"]),
        next_run_at=row["next_run_at"],
        last_run_at=row["last_run_at"],
        is_paused=bool(row["is_paused"]),
        paused_at=row["paused_at"],
        cancelled_at=row["cancelled_at"],
        lock_token=row["lock_token"],
        lock_acquired_at=row["lock_acquired_at"],
        locked_by=row["locked_by"],
        last_moved_at=row["last_moved_at"],
        last_error=row["last_error"],
        forced_planned_at=row["forced_planned_at"],
        metadata=json.loads(row["metadata"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def get_job(conn: Connection, job_id: int, *, for_update: bool = False) -> Job:
    query = select(jobs).where(jobs.c.id == job_id)
    if for_update:  # SQLite compiles no FOR UPDATE: its IMMEDIATE transaction holds the lock
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        raise NotFound("job", job_id)
    return job_from_row(row)


def slot_times(conn: Connection, before: float, exclude: int | None = None) -> list[float]:
    """Next runs of the runnable jobs due before ``before`` (the loads of the slots), but for
    job ``exclude`` (the one being placed)."""
    query = select(jobs.c.next_run_at).where(
        jobs.c.status.in_(_RUNNABLE), jobs.c.next_run_at < before
    )
    if exclude is not None:
        query = query.where(jobs.c.id != exclude)
    return list(conn.execute(query).scalars())


def _interval(interval_minutes: int | None, interval_type: str, enabled: bool) -> float | None:
    if interval_minutes is None or not enabled:
        return None
    return float(interval_minutes * UNIT_SECONDS[IntervalType(interval_type)])


class JobRepository:
    """Job CRUD and actions. A new job is born pending and scheduled at once: a one-time job
    to run now, a recurring one in the least-loaded slot (unless ``next_run_at`` is given)."""

    def __init__(self, store: JobDatabase, *, window: float = buckets.WINDOW_SECONDS) -> None:
        self._store = store
        self.window = window

    def _place(
        self, conn: Connection, interval: float | None, now: float, job_id: int | None = None
    ) -> float:
        if interval is None:
            return now
        horizon = now + min(interval, self.window)
        times = slot_times(conn, horizon, exclude=job_id)
        return buckets.least_loaded_time(times, now, interval, self.window)

    @staticmethod
    def require_source(conn: Connection, source_id: int, *, lock: bool = False) -> None:
        """UnknownSource unless the source exists (``lock``: its row is held to the end of the
        caller's transaction)."""
        query = select(sources.c.id).where(sources.c.id == source_id)
        if lock:  # SQLite compiles no FOR UPDATE: its IMMEDIATE transaction holds the lock
            query = query.with_for_update()
        if conn.execute(query).first() is None:
            raise UnknownSource(source_id)

    def insert(self, conn: Connection, spec: JobSpec, now: float) -> Job:
        """Insert a validated job in the caller's transaction (its source must exist)."""
        placed = spec.next_run_at is None
        next_run = self._place(conn, spec.interval_seconds, now) if placed else spec.next_run_at
        new_id = conn.execute(
            jobs.insert().values(
                source_id=spec.source_id,
                url=spec.url,
                status=JobStatus.SCHEDULED.value,  # pending -> scheduled, in one step
                interval_minutes=spec.interval_minutes,
                interval_type=IntervalType(spec.interval_type).value,
                schedule_enabled=spec.schedule_enabled,
                adaptive_scheduling=spec.adaptive_scheduling,
                max_retries=spec.max_retries,
                retry_backoff_seconds=spec.retry_backoff_seconds,
                current_retry_count=0,
                next_run_at=next_run,
                is_paused=False,
                last_moved_at=now if placed and spec.is_recurring else None,
                metadata=json.dumps(spec.metadata),
                created_at=now,
                updated_at=now,
            )
        ).inserted_primary_key
        assert new_id is not None
        return get_job(conn, int(new_id[0]))

    async def create(self, spec: JobSpec) -> Job:
        """Create a job; UnknownSource when its source does not exist."""
        spec.validate()
        now = self._store.clock()

        def _create() -> Job:
            with self._store.begin() as conn:
                self.require_source(conn, spec.source_id)
                return self.insert(conn, spec, now)

        return await self._store.run(_create)

    async def get(self, job_id: int) -> Job:
        def _fetch() -> Job:
            with self._store.read() as conn:
                return get_job(conn, job_id)

        return await self._store.run(_fetch)

    @staticmethod
    def _filters(status: JobStatus | str | None, source_id: int | None) -> list[Any]:
        conditions = []
        if status is not None:
            conditions.append(jobs.c.status == JobStatus(status).value)
        if source_id is not None:
            conditions.append(jobs.c.source_id == source_id)
        return conditions

    async def list(
        self,
        *,
        status: JobStatus | str | None = None,
        source_id: int | None = None,
        after: int | None = None,
        limit: int = 50,
        offset: int = 0,
        with_total: bool = True,
    ) -> ResultPage[Job]:
        """Jobs in id order (after id ``after``), optionally of one status or source, with
        the total unless ``with_total`` is false (the API caches ``count`` instead)."""
        conditions = self._filters(status, source_id)
        # the equal column leads the order: only ix_jobs_status / ix_jobs_source_id serve it
        prefix = [jobs.c.source_id] if source_id is not None else []
        if status is not None and source_id is None:
            prefix = [jobs.c.status]

        def _list() -> ResultPage[Job]:
            with self._store.read() as conn:
                total = keyset.count(conn, jobs, conditions) if with_total else None
                query = select(jobs).where(*conditions)
                rows, next_after = _KEYSET.page(
                    conn, query, after=after, limit=limit, offset=offset, prefix=prefix
                )
                items = [job_from_row(r) for r in rows]
                return ResultPage(items, total, limit, offset, next_after)

        return await self._store.run(_list)

    async def of_sources(
        self, source_ids: Sequence[int]
    ) -> dict[int, builtins.list[tuple[int, JobStatus]]]:
        """The jobs (id, state) of each of ``source_ids``, in id order: one range of
        ``ix_jobs_source_id`` per source, for a page of sources."""
        wanted = sorted(set(source_ids))
        if not wanted:
            return {}

        def _read() -> dict[int, list[tuple[int, JobStatus]]]:
            query = (
                select(jobs.c.source_id, jobs.c.id, jobs.c.status)
                .where(jobs.c.source_id.in_(wanted))
                .order_by(jobs.c.source_id, jobs.c.id)
            )
            found: dict[int, list[tuple[int, JobStatus]]] = {i: [] for i in wanted}
            with self._store.read() as conn:
                for source_id, job_id, status in conn.execute(query):
                    found[int(source_id)].append((int(job_id), JobStatus(status)))
            return found

        return await self._store.run(_read)

    async def count(
        self, *, status: JobStatus | str | None = None, source_id: int | None = None
    ) -> int:
        """How many jobs ``list`` would page through."""
        conditions = self._filters(status, source_id)

        def _count() -> int:
            with self._store.read() as conn:
                return keyset.count(conn, jobs, conditions)

        return await self._store.run(_count)

    async def update(self, job_id: int, changes: Mapping[str, Any]) -> Job:
        """Change some spec fields. A scheduled job whose interval changes is placed again;
        an explicit ``next_run_at`` is taken as given."""
        unknown = set(changes) - SPEC_FIELDS
        if unknown:
            raise InvalidSpec(sorted(unknown)[0], "is not a job field")
        now = self._store.clock()

        def _update() -> Job:
            with self._store.begin() as conn:
                job = get_job(conn, job_id, for_update=True)
                spec = JobSpec(**{name: getattr(job, name) for name in SPEC_FIELDS})
                for name, value in changes.items():
                    setattr(spec, name, value)
                spec.validate()
                if spec.source_id != job.source_id:
                    self.require_source(conn, spec.source_id)
                values: dict[str, Any] = {
                    name: getattr(spec, name) for name in SPEC_FIELDS - {"metadata"}
                }
                values["interval_type"] = IntervalType(spec.interval_type).value
                values["metadata"] = json.dumps(spec.metadata)
                values["next_run_at"] = job.next_run_at
                if job.status is JobStatus.SCHEDULED:
                    if "next_run_at" in changes and spec.next_run_at is not None:
                        values["next_run_at"] = spec.next_run_at
                    elif _SCHEDULE_FIELDS & set(changes):
                        values["next_run_at"] = self._place(
                            conn, spec.interval_seconds, now, job_id
                        )
                        values["last_moved_at"] = now
                conn.execute(
                    update(jobs).where(jobs.c.id == job_id).values(**values, updated_at=now)
                )
                return get_job(conn, job_id)

        return await self._store.run(_update)

    async def delete(self, job_id: int) -> None:
        """Delete a job and its history; a running job must be cancelled first."""

        def _delete() -> None:
            with self._store.begin() as conn:
                job = get_job(conn, job_id, for_update=True)
                if job.status is JobStatus.RUNNING:
                    raise JobStateError(
                        job_id, job.status.value, "delete", allowed_actions(job.status)
                    )
                conn.execute(jobs.delete().where(jobs.c.id == job_id))

        await self._store.run(_delete)

    # -- actions ------------------------------------------------------------------------------

    async def act(self, job_id: int, action: Action | str) -> Job:
        """Apply a user action; JobStateError (current state, allowed actions) when the job's
        state does not allow it."""
        action = Action(action)
        now = self._store.clock()

        def _act() -> Job:
            with self._store.begin() as conn:
                job = get_job(conn, job_id, for_update=True)
                target = check_action(job.status, action, job_id)
                values: dict[str, Any] = {"status": target.value, "updated_at": now}
                if action is Action.PAUSE:
                    values.update(is_paused=True, paused_at=now)
                elif action is Action.RESUME:
                    values.update(
                        is_paused=False,
                        paused_at=None,
                        cancelled_at=None,
                        next_run_at=self._place(conn, job.interval_seconds, now),
                        last_moved_at=now,
                    )
                elif action is Action.CANCEL:
                    # A running job keeps its lock: the instance running it sees the
                    # cancellation, stops the crawl and releases the lock. A cancelled job
                    # has no next run (until it is resumed or run now).
                    values.update(is_paused=False, cancelled_at=now, next_run_at=None)
                elif action is Action.RETRY:
                    values.update(current_retry_count=0, next_run_at=now)
                elif action is Action.FORCE_RUN:
                    # The run it brings forward is kept: the job's plan resumes after it
                    # (a cancelled job has none: it runs now and is planned from now).
                    planned = job.next_run_at if job.next_run_at is not None else now
                    if job.forced_planned_at is not None:  # asked twice before it ran
                        planned = job.forced_planned_at
                    values.update(next_run_at=now, forced_planned_at=planned, cancelled_at=None)
                changed = conn.execute(
                    update(jobs)
                    .where(jobs.c.id == job_id, jobs.c.status == job.status.value)
                    .values(**values)
                ).rowcount
                if not changed:  # the scheduler moved it meanwhile (SQLite has no FOR UPDATE)
                    current = get_job(conn, job_id)
                    raise JobStateError(
                        job_id, current.status.value, action.value, allowed_actions(current.status)
                    )
                return get_job(conn, job_id)

        return await self._store.run(_act)

    async def take_forced(self, job: Job, execution: Execution) -> None:
        """Move ``job``'s force-run mark to ``execution``, the run it asked for, as that run
        starts: the job's next run is a planned one again, and the execution says it is
        forced (``FORCED``, ``FORCED_PLANNED``) while it runs, to whoever runs it (a
        worker resuming it after a hand-over too). ``execution.metadata`` is updated."""
        marks = {FORCED: True, FORCED_PLANNED: job.forced_planned_at}

        def _move() -> dict[str, Any]:
            with self._store.begin() as conn:
                conn.execute(
                    update(jobs)
                    .where(jobs.c.id == job.id, jobs.c.forced_planned_at.is_not(None))
                    .values(forced_planned_at=None)
                )
                stored = conn.execute(
                    select(job_executions.c.metadata).where(job_executions.c.id == execution.id)
                ).scalar()
                metadata: dict[str, Any] = {**json.loads(stored or "{}"), **marks}
                conn.execute(
                    update(job_executions)
                    .where(job_executions.c.id == execution.id)
                    .values(metadata=json.dumps(metadata))
                )
                return metadata

        execution.metadata = await self._store.run(_move)

    async def pause(self, job_id: int) -> Job:
        return await self.act(job_id, Action.PAUSE)

    async def resume(self, job_id: int) -> Job:
        return await self.act(job_id, Action.RESUME)

    async def cancel(self, job_id: int) -> Job:
        return await self.act(job_id, Action.CANCEL)

    async def retry(self, job_id: int) -> Job:
        return await self.act(job_id, Action.RETRY)

    async def force_run(self, job_id: int) -> Job:
        return await self.act(job_id, Action.FORCE_RUN)

    # -- reading ------------------------------------------------------------------------------

    async def status_counts(self) -> dict[str, int]:
        """Jobs per state; every state is present."""

        def _counts() -> dict[str, int]:
            with self._store.read() as conn:
                found: dict[str, int] = {
                    status: int(n)
                    for status, n in conn.execute(
                        select(jobs.c.status, func.count()).group_by(jobs.c.status)
                    )
                }
            return {state.value: int(found.get(state.value, 0)) for state in JobStatus}

        return await self._store.run(_counts)

    # -- placement ----------------------------------------------------------------------------

    async def placements(self) -> builtins.list[buckets.PlacedJob]:
        """Runnable jobs with their next run inside the balancing window."""
        now = self._store.clock()

        def _read() -> list[buckets.PlacedJob]:
            query = select(
                jobs.c.id,
                jobs.c.status,
                jobs.c.next_run_at,
                jobs.c.interval_minutes,
                jobs.c.interval_type,
                jobs.c.schedule_enabled,
                jobs.c.last_moved_at,
                jobs.c.lock_token,
            ).where(jobs.c.status.in_(_RUNNABLE), jobs.c.next_run_at < now + self.window)
            with self._store.read() as conn:
                rows = conn.execute(query).all()
            return [
                buckets.PlacedJob(
                    job_id=int(r.id),
                    next_run_at=float(r.next_run_at),
                    interval=_interval(r.interval_minutes, r.interval_type, r.schedule_enabled),
                    last_moved_at=r.last_moved_at,
                    movable=r.status == JobStatus.SCHEDULED.value and r.lock_token is None,
                )
                for r in rows
            ]

        return await self._store.run(_read)

    async def distribution(self) -> buckets.Distribution:
        """Next runs per 15-minute slot over the window, the score and the peak."""
        now = self._store.clock()

        def _times() -> list[float]:
            with self._store.read() as conn:
                return slot_times(conn, now + self.window)

        times = await self._store.run(_times)
        return buckets.distribution(times, now, self.window)

    async def rebalance(self, *, dry_run: bool = True) -> buckets.RebalancePlan:
        """Plan (``dry_run``) or apply the moves of a rebalance. A move is applied only if the
        job is still scheduled at the time it was planned for; the others are dropped from
        the returned plan and reported as ``changed``."""
        now = self._store.clock()
        plan = buckets.plan_rebalance(await self.placements(), now, window=self.window)
        if dry_run or not plan.moves:
            return plan
        applied = await self.apply_moves(plan.moves, now)
        for move in plan.moves:
            if move not in applied:
                plan.skipped[move.job_id] = "changed"
        plan.moves = applied
        return plan

    async def apply_moves(
        self, moves: Sequence[buckets.Move], now: float
    ) -> builtins.list[buckets.Move]:
        def _apply() -> list[buckets.Move]:
            done = []
            with self._store.begin() as conn:
                for move in moves:
                    changed = conn.execute(
                        update(jobs)
                        .where(
                            jobs.c.id == move.job_id,
                            jobs.c.status == JobStatus.SCHEDULED.value,
                            jobs.c.next_run_at == move.old_run_at,
                            jobs.c.lock_token.is_(None),
                        )
                        .values(next_run_at=move.new_run_at, last_moved_at=now, updated_at=now)
                    ).rowcount
                    if changed:
                        done.append(move)
            return done

        return await self._store.run(_apply)
