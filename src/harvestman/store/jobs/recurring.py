"""The reads and the guarded insert behind reconciliation (``harvestman.jobs.reconcile``).

Which job states count as a source's recurring job is the caller's policy, passed in as
``kept``; this module only turns it into queries.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, select

from harvestman.jobs.records import Job, JobSpec
from harvestman.jobs.states import JobStatus
from harvestman.store.jobs.tables import jobs, sources

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase
    from harvestman.store.jobs.repository import JobRepository


@dataclass(slots=True, frozen=True)
class RecurringJob:
    job_id: int
    source_id: int
    status: JobStatus


@dataclass(slots=True)
class SourceSchedules:
    """What reconciliation reads in one snapshot: each source's enabled flag and start URLs,
    and the recurring jobs in a ``kept`` state."""

    enabled: dict[int, bool]
    start_urls: dict[int, list[str]]
    recurring: list[RecurringJob]


def _recurring(source_ids: Collection[int] | None, kept: Collection[JobStatus]) -> Select[Any]:
    query = select(jobs.c.id, jobs.c.source_id, jobs.c.status).where(
        jobs.c.interval_minutes.is_not(None),
        jobs.c.schedule_enabled.is_(True),
        jobs.c.status.in_([JobStatus(s).value for s in kept]),
    )
    if source_ids is not None:
        query = query.where(jobs.c.source_id.in_(list(source_ids)))
    return query


class RecurringJobs:
    """Sources and their recurring jobs, read together; a recurring job created only if none."""

    def __init__(self, store: JobDatabase, jobs: JobRepository) -> None:
        self._store = store
        self._jobs = jobs

    async def snapshot(
        self, source_ids: Collection[int] | None, kept: Collection[JobStatus]
    ) -> SourceSchedules:
        """Sources ``source_ids`` (all: None) and their recurring jobs in a ``kept`` state."""
        source_query = select(sources.c.id, sources.c.enabled, sources.c.start_urls)
        if source_ids is not None:
            source_query = source_query.where(sources.c.id.in_(list(source_ids)))
        job_query = _recurring(source_ids, kept)

        def _read() -> SourceSchedules:
            with self._store.read() as conn:
                found = conn.execute(source_query).all()
                recurring = [
                    RecurringJob(int(r.id), int(r.source_id), JobStatus(r.status))
                    for r in conn.execute(job_query)
                ]
            return SourceSchedules(
                enabled={int(row.id): bool(row.enabled) for row in found},
                start_urls={int(row.id): json.loads(row.start_urls) for row in found},
                recurring=recurring,
            )

        return await self._store.run(_read)

    async def create_unless_present(self, spec: JobSpec, kept: Collection[JobStatus]) -> Job | None:
        """Create the job unless its source already has a recurring job in a ``kept`` state,
        atomically per source: the source's row is locked first, so two instances reconciling
        at once create one job. UnknownSource when the source is gone."""
        spec.validate()
        now = self._store.clock()
        repository = self._jobs

        def _has_one(conn: Connection) -> bool:
            return conn.execute(_recurring([spec.source_id], kept).limit(1)).first() is not None

        def _create() -> Job | None:
            with self._store.begin() as conn:
                repository.require_source(conn, spec.source_id, lock=True)
                return None if _has_one(conn) else repository.insert(conn, spec, now)

        return await self._store.run(_create)
