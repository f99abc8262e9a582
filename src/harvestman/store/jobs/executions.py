"""Executions (one row per run), their live counters, their log lines, history pruning and
run statistics."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import case, delete, func, select, true, update
from sqlalchemy.engine import RowMapping

from harvestman.jobs.errors import NotFound
from harvestman.jobs.records import (
    Execution,
    ExecutionStatus,
    LogLine,
    ProgressSample,
    ResultPage,
)
from harvestman.store import dialect, keyset
from harvestman.store.jobs.tables import execution_logs, job_executions, jobs
from harvestman.store.keyset import Keyset
from harvestman.store.values import rule_for

if TYPE_CHECKING:
    from harvestman.store.jobs.database import JobDatabase

HISTORY_MAX = 100
HISTORY_DAYS = 30.0
_KEYSET = Keyset(job_executions.c.execution_number, descending=True)

_DONE = (ExecutionStatus.COMPLETED.value, ExecutionStatus.FAILED.value)


def execution_from_row(row: RowMapping) -> Execution:
    return Execution(
        id=int(row["id"]),
        job_id=int(row["job_id"]),
        execution_number=int(row["execution_number"]),
        status=ExecutionStatus(row["status"]),
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        duration_ms=row["duration_ms"],
        items_crawled=int(row["items_crawled"]),
        items_indexed=int(row["items_indexed"]),
        error_message=row["error_message"],
        stack_trace=row["stack_trace"],
        cpu_time_ms=row["cpu_time_ms"],
        memory_peak_mb=row["memory_peak_mb"],
        retry_attempt=int(row["retry_attempt"]),
        metadata=json.loads(row["metadata"]),
        items_failed=int(row["items_failed"]),
        pages_per_second=row["pages_per_second"],
    )


# The log levels at or above each level, for ``logs(min_level=...)``.
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ExecutionRepository:
    def __init__(self, store: JobDatabase) -> None:
        self._store = store

    async def get(self, execution_id: int) -> Execution:
        def _fetch() -> Execution:
            with self._store.read() as conn:
                row = (
                    conn.execute(select(job_executions).where(job_executions.c.id == execution_id))
                    .mappings()
                    .first()
                )
            if row is None:
                raise NotFound("execution", execution_id)
            return execution_from_row(row)

        return await self._store.run(_fetch)

    async def list(
        self,
        job_id: int,
        *,
        status: ExecutionStatus | str | None = None,
        after: int | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> ResultPage[Execution]:
        """A job's executions, newest first (before execution number ``after``), with the
        total (at most the 100 kept)."""
        conditions = [job_executions.c.job_id == job_id]
        if status is not None:
            conditions.append(job_executions.c.status == ExecutionStatus(status).value)

        def _list() -> ResultPage[Execution]:
            with self._store.read() as conn:
                if conn.execute(select(jobs.c.id).where(jobs.c.id == job_id)).first() is None:
                    raise NotFound("job", job_id)
                total = keyset.count(conn, job_executions, conditions)
                query = select(job_executions).where(*conditions)
                rows, next_after = _KEYSET.page(
                    conn,
                    query,
                    after=after,
                    limit=limit,
                    offset=offset,
                    prefix=[job_executions.c.job_id],  # uq_job_executions_job_id_... serves it
                )
                items = [execution_from_row(r) for r in rows]
                return ResultPage(items, total, limit, offset, next_after)

        return await self._store.run(_list)

    # -- live counters ------------------------------------------------------------------------

    async def record_progress(
        self,
        execution_id: int,
        samples: Sequence[ProgressSample],
        pages_per_second: float,
    ) -> bool:
        """Store a running execution's counters (its last sample) and its samples; False when
        it is no longer running (its end, written by ``locks.finish``, stands)."""
        if not samples:
            return False
        last = samples[-1]
        chart = json.dumps([[s.at, s.fetched, s.stored, s.failed] for s in samples])

        def _record() -> bool:
            with self._store.begin() as conn:
                done = conn.execute(
                    update(job_executions)
                    .where(
                        job_executions.c.id == execution_id,
                        job_executions.c.status == ExecutionStatus.RUNNING.value,
                    )
                    .values(
                        items_crawled=last.fetched,
                        items_indexed=last.stored,
                        items_failed=last.failed,
                        pages_per_second=pages_per_second,
                        progress=chart,
                    )
                )
                return bool(done.rowcount)

        return await self._store.run(_record)

    async def progress(self, execution_id: int) -> builtins.list[ProgressSample]:
        """The execution's stored samples, oldest first (none before its first store)."""

        def _read() -> str | None:
            query = select(job_executions.c.progress).where(job_executions.c.id == execution_id)
            with self._store.read() as conn:
                row = conn.execute(query).first()
            if row is None:
                raise NotFound("execution", execution_id)
            chart: str | None = row[0]
            return chart

        chart = await self._store.run(_read)
        points = json.loads(chart or "[]")
        return [ProgressSample(at, int(f), int(s), int(x)) for at, f, s, x in points]

    async def latest(self, job_id: int) -> Execution | None:
        page = await self.list(job_id, limit=1)
        return page.items[0] if page.items else None

    # -- logs ---------------------------------------------------------------------------------

    async def append_logs(self, lines: Sequence[LogLine]) -> None:
        """Store log lines; a line already stored (same execution and ``seq``: a write that
        committed but whose answer was lost, written again) is left as it is. A message is
        fitted to its column first (a NUL from a page's text would have PostgreSQL refuse
        every line of the flush)."""
        if not lines:
            return
        engine = self._store.engine
        fit = rule_for(execution_logs.c.message).check

        def _append() -> None:
            with self._store.begin() as conn:
                conn.execute(
                    dialect.insert_ignore(engine, execution_logs, "execution_id", "seq"),
                    [
                        {
                            "execution_id": line.execution_id,
                            "seq": line.seq,
                            "created_at": line.created_at,
                            "level": line.level,
                            "logger": line.logger[:100],
                            "message": fit(line.message)[0],
                        }
                        for line in lines
                    ],
                )

        await self._store.run(_append)

    async def last_log_seq(self, execution_id: int) -> int:
        """The ``seq`` of the execution's last stored log line (0: none)."""

        def _last() -> int:
            query = select(func.max(execution_logs.c.seq)).where(
                execution_logs.c.execution_id == execution_id
            )
            with self._store.read() as conn:
                return int(conn.execute(query).scalar_one() or 0)

        return await self._store.run(_last)

    async def logs(
        self,
        execution_id: int,
        *,
        after: int = 0,
        limit: int = 1000,
        text: str | None = None,
        min_level: str | None = None,
    ) -> builtins.list[LogLine]:
        """An execution's stored log lines with ``seq > after``, in order; with ``text``, those
        whose message holds it (any case); with ``min_level``, those at that level or above
        (``LEVELS``; an unknown level keeps none). A run keeps at most 10,000 lines, so a
        filtered read scans at most those (by the ``execution_id, seq`` key)."""
        conditions = [execution_logs.c.execution_id == execution_id, execution_logs.c.seq > after]
        if text:
            conditions.append(execution_logs.c.message.icontains(text, autoescape=True))
        if min_level is not None:
            levels = LEVELS[LEVELS.index(min_level) :] if min_level in LEVELS else ()
            conditions.append(execution_logs.c.level.in_(levels))

        def _read() -> list[LogLine]:
            query = (
                select(execution_logs)
                .where(*conditions)
                .order_by(execution_logs.c.seq)
                .limit(limit)
            )
            with self._store.read() as conn:
                return [
                    LogLine(
                        r["execution_id"],
                        r["seq"],
                        r["created_at"],
                        r["level"],
                        r["logger"],
                        r["message"],
                    )
                    for r in conn.execute(query).mappings()
                ]

        return await self._store.run(_read)

    # -- retention ----------------------------------------------------------------------------

    async def prune(self, *, keep: int = HISTORY_MAX, max_age_days: float = HISTORY_DAYS) -> int:
        """Delete finished executions (and their logs) beyond the ``keep`` newest of each job or
        older than ``max_age_days``, whichever is stricter. Returns how many were deleted."""
        cutoff = self._store.clock() - max_age_days * 86400

        def _prune() -> int:
            ranked = select(
                job_executions.c.id,
                func.row_number()
                .over(
                    partition_by=job_executions.c.job_id,
                    order_by=job_executions.c.execution_number.desc(),
                )
                .label("rank"),
            ).subquery()
            doomed = select(ranked.c.id).where(ranked.c.rank > keep)
            finished = job_executions.c.status != ExecutionStatus.RUNNING.value
            with self._store.begin() as conn:
                ids = list(
                    conn.execute(
                        select(job_executions.c.id).where(
                            finished,
                            (job_executions.c.started_at < cutoff)
                            | job_executions.c.id.in_(doomed),
                        )
                    ).scalars()
                )
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    conn.execute(
                        delete(execution_logs).where(execution_logs.c.execution_id.in_(chunk))
                    )
                    conn.execute(delete(job_executions).where(job_executions.c.id.in_(chunk)))
            return len(ids)

        return await self._store.run(_prune)

    # -- statistics ---------------------------------------------------------------------------

    async def job_stats(self, job_id: int) -> dict[str, Any]:
        """A job's run statistics over its kept history."""

        def _stats() -> dict[str, Any]:
            with self._store.read() as conn:
                if conn.execute(select(jobs.c.id).where(jobs.c.id == job_id)).first() is None:
                    raise NotFound("job", job_id)
                return self._summary(conn, job_executions.c.job_id == job_id)

        return await self._store.run(_stats)

    async def summary(self, since: float | None = None) -> dict[str, Any]:
        """Executions of every job (started since ``since``): counts, success rate, means."""

        def _summary() -> dict[str, Any]:
            condition = job_executions.c.started_at >= since if since is not None else true()
            with self._store.read() as conn:
                return self._summary(conn, condition)

        return await self._store.run(_summary)

    @staticmethod
    def _summary(conn: Any, condition: Any) -> dict[str, Any]:
        by_status = {s.value: 0 for s in ExecutionStatus}
        for status, n in conn.execute(
            select(job_executions.c.status, func.count())
            .where(condition)
            .group_by(job_executions.c.status)
        ):
            by_status[status] = int(n)
        done = job_executions.c.status.in_(_DONE)
        row = conn.execute(
            select(
                func.avg(case((done, job_executions.c.duration_ms))),
                func.coalesce(func.sum(job_executions.c.items_crawled), 0),
                func.coalesce(func.sum(job_executions.c.items_indexed), 0),
                func.max(job_executions.c.started_at),
            ).where(condition)
        ).one()
        finished = by_status["completed"] + by_status["failed"]
        return {
            "total": sum(by_status.values()),
            "by_status": by_status,
            "success_rate": round(by_status["completed"] / finished, 4) if finished else None,
            "avg_duration_ms": None if row[0] is None else round(float(row[0]), 1),
            "items_crawled": int(row[1]),
            "items_indexed": int(row[2]),
            "last_started_at": row[3],
        }
