"""Executions handed over through a message broker: claimed by the dispatcher, taken by the
worker that consumes the message, taken over from a holder that stopped renewing.

The dispatcher claims a due job with the usual compare-and-set (``JobLocks.claim_due``) under
a holder named ``publishing:<dispatcher>``: the job is running, its execution row is open, nobody
runs it yet. Once the broker confirmed its message the claim becomes ``queued:<dispatcher>``
(``mark_published``): what was published is recorded, so a claim left ``publishing:`` by a
dispatcher that died is known to have no message and is published again by the next leader
(``to_republish``). A ``queued:`` claim waits as long as it takes; one waiting longer than the
republish time is published again (its message may be lost; a duplicate is dropped on
delivery). The consumer then ``take``s the execution: a new lock token under its own name, so
a former holder's renewals and ``finish`` no longer match and it stops (``lock_lost``). The
decision is one transaction on the job's row and the execution's row; the message only names
the execution.
"""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, and_, delete, func, or_, select, update

from harvestman.jobs.records import Claim, Execution, ExecutionStatus
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.executions import execution_from_row
from harvestman.store.jobs.repository import job_from_row
from harvestman.store.jobs.tables import execution_logs, job_executions, jobs

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase

QUEUED = "queued:"
"""The ``locked_by`` prefix of an execution published and not yet taken by a worker."""
PUBLISHING = "publishing:"
"""The ``locked_by`` prefix of an execution claimed and not yet confirmed by the broker."""
WAITING = (QUEUED, PUBLISHING)


HOLDERS = "holders"
"""The execution metadata key of the workers that took it, in order (more than one: resumed)."""
MAX_HOLDERS = 20


def queued_holder(dispatcher: str) -> str:
    return (QUEUED + dispatcher)[:128]


def publishing_holder(dispatcher: str) -> str:
    return (PUBLISHING + dispatcher)[:128]


def is_waiting(holder: str | None) -> bool:
    """Whether a lock's holder is the queue (claimed or published, not taken by a worker)."""
    return holder is not None and holder.startswith(WAITING)


def waiting_condition() -> ColumnElement[bool]:
    """The SQL condition of ``is_waiting`` on ``jobs.locked_by``."""
    return or_(jobs.c.locked_by.startswith(QUEUED), jobs.c.locked_by.startswith(PUBLISHING))


class Verdict(enum.StrEnum):
    """What a consumer does with an execution's message."""

    TAKEN = "taken"  # run it (``Handover.claim``), ack when it is final
    TAKEN_OVER = "taken_over"  # its holder stopped renewing: resume it
    HELD = "held"  # a live holder runs it: look again later
    GONE = "gone"  # final, cancelled while queued, or unknown: ack and drop


@dataclass(slots=True, frozen=True)
class Handover:
    verdict: Verdict
    claim: Claim | None = None
    holder: str | None = None  # who held the lock before (taken over, or still holding)
    log_seq: int = 0  # the last log line the execution has stored (a takeover goes on after)
    renewed_at: float | None = None  # HELD: when its holder last renewed the lock


class ExecutionHandover:
    """Taking, releasing and counting executions handed over through the broker."""

    def __init__(self, store: JobDatabase) -> None:
        self._store = store

    async def take(
        self,
        job_id: int,
        execution_id: int,
        holder: str,
        *,
        takeover_after: float,
        if_renewed_at: float | None = None,
    ) -> Handover:
        """Take execution ``execution_id`` of job ``job_id`` for ``holder``.

        TAKEN when it is queued; TAKEN_OVER when another holder's lock was not renewed for
        ``takeover_after`` seconds; HELD while that holder renews it; GONE when the execution
        is final or unknown, or its job was cancelled while it waited (the execution is then
        closed ``cancelled`` and the queued lock released). On its first take the execution's
        ``started_at`` becomes the time it was taken (the time it waited in the queue is not
        run time); ``holder`` is added to its metadata's ``holders`` (a queued execution with
        holders was handed back by a stopping worker, and is resumed).
        """
        now = self._store.clock()

        def _take() -> Handover:
            with self._store.begin() as conn:
                execution = _execution(conn, execution_id)
                row = (
                    conn.execute(select(jobs).where(jobs.c.id == job_id).with_for_update())
                    .mappings()
                    .first()
                )
                if (
                    execution is None
                    or row is None
                    or execution.job_id != job_id
                    or execution.status is not ExecutionStatus.RUNNING
                    or row["lock_token"] is None
                ):
                    return Handover(Verdict.GONE)
                job = job_from_row(row)
                before: str = row["locked_by"] or ""
                renewed = row["lock_acquired_at"] or 0.0
                queued = before.startswith(WAITING)
                stale = renewed < now - takeover_after and (
                    if_renewed_at is None or renewed == if_renewed_at
                )
                if job.status is not JobStatus.RUNNING:  # cancelled under the lock
                    if not (queued or stale):
                        return Handover(Verdict.HELD, holder=before, renewed_at=renewed)
                    _close_cancelled(conn, job_id, row["lock_token"], execution_id, now)
                    return Handover(Verdict.GONE, holder=before)
                if not (queued or stale) or before == holder:
                    return Handover(Verdict.HELD, holder=before, renewed_at=renewed)
                token = uuid.uuid4().hex
                taken = conn.execute(
                    update(jobs)
                    .where(jobs.c.id == job_id, jobs.c.lock_token == row["lock_token"])
                    .values(lock_token=token, lock_acquired_at=now, locked_by=holder[:128])
                ).rowcount
                if taken != 1:
                    return Handover(Verdict.HELD, holder=before)
                # The holders so far, kept with the execution: its lock history.
                holders = [*execution.metadata.get(HOLDERS, []), holder][-MAX_HOLDERS:]
                execution.metadata = {**execution.metadata, HOLDERS: holders}
                values: dict[str, object] = {"metadata": json.dumps(execution.metadata)}
                if queued and len(holders) == 1:
                    values["started_at"] = execution.started_at = now
                conn.execute(
                    update(job_executions)
                    .where(job_executions.c.id == execution_id)
                    .values(**values)
                )
                log_seq = 0
                if len(holders) > 1:  # lines stored by a former holder: go on after them
                    log_seq = conn.execute(
                        select(func.coalesce(func.max(execution_logs.c.seq), 0)).where(
                            execution_logs.c.execution_id == execution_id
                        )
                    ).scalar_one()
                return Handover(
                    Verdict.TAKEN if queued else Verdict.TAKEN_OVER,
                    Claim(job, token, execution),
                    holder=before,
                    log_seq=int(log_seq),
                )

        return await self._store.run(_take)

    async def hand_back(self, claim: Claim, dispatcher: str) -> bool:
        """Put a running execution back in the queue's hands (its worker is stopping): the
        lock passes to ``queued:<dispatcher>``, so the next worker that receives its message
        takes it at once and resumes it. False when the lock was no longer ``claim``'s."""
        now = self._store.clock()

        def _hand_back() -> bool:
            with self._store.begin() as conn:
                return bool(
                    conn.execute(
                        update(jobs)
                        .where(
                            jobs.c.id == claim.job.id,
                            jobs.c.lock_token == claim.token,
                            jobs.c.status == JobStatus.RUNNING.value,
                        )
                        .values(lock_acquired_at=now, locked_by=queued_holder(dispatcher))
                    ).rowcount
                )

        return await self._store.run(_hand_back)

    async def unclaim(self, claim: Claim) -> bool:
        """Undo a claim whose message could not be published: the job returns to the state
        and due time it was claimed in, the execution row opened for it is removed."""

        def _unclaim() -> bool:
            with self._store.begin() as conn:
                released = conn.execute(
                    update(jobs)
                    .where(jobs.c.id == claim.job.id, jobs.c.lock_token == claim.token)
                    .values(
                        status=claim.job.status.value,
                        lock_token=None,
                        lock_acquired_at=None,
                        locked_by=None,
                    )
                ).rowcount
                if released:
                    conn.execute(
                        delete(job_executions).where(job_executions.c.id == claim.execution.id)
                    )
            return bool(released)

        return await self._store.run(_unclaim)

    async def queued(self) -> int:
        """Executions published and not yet taken by a worker (the broker's backlog)."""

        def _count() -> int:
            with self._store.read() as conn:
                return int(
                    conn.execute(
                        select(func.count()).where(
                            # a held lock has its time set: ix_jobs_lock_acquired_at serves it
                            jobs.c.lock_acquired_at.is_not(None),
                            jobs.c.lock_token.is_not(None),
                            waiting_condition(),
                        )
                    ).scalar_one()
                )

        return await self._store.run(_count)

    async def mark_published(self, claims: Sequence[Claim], dispatcher: str) -> int:
        """Record that the broker confirmed the messages of ``claims``: each becomes
        ``queued:<dispatcher>``, its time the publish's (the republish time counts from it).
        A claim a worker took meanwhile (its token changed) is left alone."""
        if not claims:
            return 0
        now = self._store.clock()
        holder = queued_holder(dispatcher)

        def _mark() -> int:
            with self._store.begin() as conn:
                return int(
                    conn.execute(
                        update(jobs)
                        .where(
                            jobs.c.id.in_(sorted({c.job.id for c in claims})),
                            jobs.c.lock_token.in_([c.token for c in claims]),
                            waiting_condition(),
                        )
                        .values(locked_by=holder, lock_acquired_at=now)
                    ).rowcount
                )

        return await self._store.run(_mark)

    async def to_republish(
        self, dispatcher: str, *, orphaned_after: float, lapsed_after: float, limit: int
    ) -> list[Claim]:
        """Waiting claims whose message must be published again, earliest due first: those
        another dispatcher left ``publishing:`` for ``orphaned_after`` seconds (it died
        between its claim and its publish: no message was confirmed), and any waiting claim
        not taken for ``lapsed_after`` seconds (its message may be lost). Nothing changes
        until ``mark_published``: a dispatcher that dies before that leaves them to the next."""
        if limit <= 0:
            return []
        now = self._store.clock()
        orphaned = and_(
            jobs.c.locked_by.startswith(PUBLISHING),
            jobs.c.locked_by != publishing_holder(dispatcher),
            jobs.c.lock_acquired_at < now - orphaned_after,
        )
        lapsed = and_(waiting_condition(), jobs.c.lock_acquired_at < now - lapsed_after)

        def _read() -> list[Claim]:
            query = (
                select(jobs, job_executions.c.id.label("execution_id"))
                .join(job_executions, job_executions.c.job_id == jobs.c.id)
                .where(
                    jobs.c.lock_token.is_not(None),
                    jobs.c.status == JobStatus.RUNNING.value,
                    job_executions.c.status == ExecutionStatus.RUNNING.value,
                    or_(orphaned, lapsed),
                )
                .order_by(jobs.c.next_run_at, jobs.c.id)
                .limit(limit)
            )
            claims = []
            with self._store.read() as conn:
                for row in conn.execute(query).mappings().all():
                    execution = _execution(conn, int(row["execution_id"]))
                    assert execution is not None
                    claims.append(Claim(job_from_row(row), row["lock_token"], execution))
            return claims

        return await self._store.run(_read)

    async def is_final(self, execution_id: int) -> bool:
        """Whether the execution has ended (or no longer exists): its message may be acked."""

        def _final() -> bool:
            with self._store.read() as conn:
                execution = _execution(conn, execution_id)
            return execution is None or execution.status is not ExecutionStatus.RUNNING

        return await self._store.run(_final)


def _execution(conn: Connection, execution_id: int) -> Execution | None:
    row = (
        conn.execute(select(job_executions).where(job_executions.c.id == execution_id))
        .mappings()
        .first()
    )
    return None if row is None else execution_from_row(row)


def _close_cancelled(
    conn: Connection, job_id: int, token: str, execution_id: int, now: float
) -> None:
    conn.execute(
        update(jobs)
        .where(jobs.c.id == job_id, jobs.c.lock_token == token)
        .values(lock_token=None, lock_acquired_at=None, locked_by=None, updated_at=now)
    )
    conn.execute(
        update(job_executions)
        .where(
            job_executions.c.id == execution_id,
            job_executions.c.status == ExecutionStatus.RUNNING.value,
        )
        .values(status=ExecutionStatus.CANCELLED.value, completed_at=now, duration_ms=0)
    )
