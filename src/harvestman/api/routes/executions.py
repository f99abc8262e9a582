"""Executions of a job, their live counters and chart, and their log lines: listed (searched,
filtered by level), downloaded, or followed (SSE) from the store."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from sse_starlette import EventSourceResponse

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.errors import ApiError
from harvestman.api.params import Cursor, Id, Limit, Offset, User
from harvestman.api.schemas import (
    MAX_ID,
    ExecutionOut,
    ExecutionProgressOut,
    LogLineOut,
    Page,
    ProgressPointOut,
)
from harvestman.jobs.errors import NotFound
from harvestman.jobs.records import Execution, ExecutionStatus, LogLine

router = APIRouter(tags=["executions"])

ExecutionState = Literal["running", "completed", "failed", "cancelled"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


async def _crawl_of(ctx: ApiContext, job_id: int) -> str | None:
    """The crawl job ``job_id`` crawls into (its source's); None when the job is gone."""
    try:
        job = await ctx.job_store.jobs.get(job_id)
    except NotFound:
        return None
    return (await ctx.job_store.sources.crawls([job.source_id])).get(job.source_id)


@router.get("/api/v1/jobs/{job_id}/executions", response_model=Page[ExecutionOut])
async def list_executions(
    request: Request,
    job_id: Id,
    _: User,
    status: ExecutionState | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
    cursor: Cursor = None,
) -> Response:
    """The job's executions, newest first (see ``Page``; the total is exact: at most the 100
    newest are kept)."""
    ctx = context_of(request)
    repository = ctx.job_store.executions
    crawl = await _crawl_of(ctx, job_id)

    async def fetch(after: int | str | None) -> tuple[list[Any], int | str | None, int | None]:
        page = await repository.list(
            job_id,
            status=status,
            after=None if after is None else int(after),
            limit=limit,
            offset=offset,
        )
        now = ctx.job_store.clock()
        items = [ExecutionOut.of(e, now, crawl) for e in page.items]
        return items, page.next_after, page.total

    return paging.PageResponse(
        await paging.paged(
            ctx.counts,
            ("executions", job_id, status),
            fetch=fetch,
            cursor=cursor,
            limit=limit,
            offset=offset,
            max_offset=ctx.settings.max_offset,
        )
    )


@router.get("/api/v1/executions/{execution_id}", response_model=ExecutionOut)
async def get_execution(request: Request, execution_id: Id, _: User) -> ExecutionOut:
    ctx = context_of(request)
    store = ctx.job_store
    execution = await store.executions.get(execution_id)
    return ExecutionOut.of(execution, store.clock(), await _crawl_of(ctx, execution.job_id))


@router.get("/api/v1/executions/{execution_id}/progress", response_model=ExecutionProgressOut)
async def execution_progress(request: Request, execution_id: Id, _: User) -> ExecutionProgressOut:
    """The execution's counters over time, for its chart (see ``ExecutionProgressOut``)."""
    repository = context_of(request).job_store.executions
    execution = await repository.get(execution_id)
    samples = await repository.progress(execution_id)
    return ExecutionProgressOut(
        execution_id=execution_id,
        status=execution.status.value,
        samples=[ProgressPointOut(**asdict(sample)) for sample in samples],
    )


async def _execution_of(ctx: ApiContext, job_id: int, execution_id: int | None) -> Execution:
    if execution_id is not None:
        execution = await ctx.job_store.executions.get(execution_id)
        if execution.job_id != job_id:
            raise ApiError(404, f"execution {execution_id} is not one of job {job_id}'s")
        return execution
    latest = await ctx.job_store.executions.latest(job_id)
    if latest is None:
        raise ApiError(404, f"job {job_id} has not run yet", details={"job_id": job_id})
    return latest


ExecutionQuery = Query(None, ge=1, le=MAX_ID, description="default: the latest execution")


PAGE = 1000  # lines per store read of a stream or a download


@router.get("/api/v1/jobs/{job_id}/logs", response_model=None)
async def job_logs(
    request: Request,
    job_id: Id,
    _: User,
    execution_id: int | None = ExecutionQuery,
    after: int = Query(0, ge=0, le=10**9, description="lines after this seq"),
    limit: int = Query(1000, ge=1, le=10_000),
    download: bool = Query(False, description="the run's whole log as a text file"),
    q: str | None = Query(
        None, min_length=1, max_length=200, description="lines whose message holds this text"
    ),
    level: LogLevel | None = Query(None, description="lines at this level or above"),
) -> dict[str, object] | Response:
    """An execution's stored log lines (a run in progress stores its new lines every
    ``jobs_log_flush_interval``, 1 s); any run kept, by ``execution_id``, the latest without.
    ``q`` keeps the lines whose message holds the text (any case), ``level`` those at that
    level or above. ``download=1``: every line of the run that passes them as text/plain, one
    ``time level logger: message`` line each, as an attachment."""
    ctx = context_of(request)
    execution = await _execution_of(ctx, job_id, execution_id)
    if download:
        name = f"job-{job_id}-run-{execution.execution_number}.log"
        return StreamingResponse(
            _log_text(ctx, execution.id, LineFilter(q, level)),
            media_type="text/plain; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )
    lines = await ctx.job_store.executions.logs(
        execution.id, after=after, limit=limit, text=q, min_level=level
    )
    return {
        "job_id": job_id,
        "execution_id": execution.id,
        "execution_number": execution.execution_number,
        "status": execution.status.value,
        "lines": [LogLineOut.model_validate(line, from_attributes=True) for line in lines],
        # Read on from here (with the same filters) while a page comes back full.
        "next_after": lines[-1].seq if len(lines) == limit else None,
    }


@dataclass(frozen=True, slots=True)
class LineFilter:
    text: str | None = None
    min_level: str | None = None


async def _stored_lines(
    ctx: ApiContext, execution_id: int, after: int, only: LineFilter = LineFilter()
) -> AsyncIterator[LogLine]:
    """The execution's stored lines after ``after``, read a page at a time."""
    while True:
        lines = await ctx.job_store.executions.logs(
            execution_id, after=after, limit=PAGE, text=only.text, min_level=only.min_level
        )
        for line in lines:
            yield line
        if len(lines) < PAGE:
            return
        after = lines[-1].seq


async def _log_text(ctx: ApiContext, execution_id: int, only: LineFilter) -> AsyncIterator[bytes]:
    async for line in _stored_lines(ctx, execution_id, 0, only):
        when = datetime.fromtimestamp(line.created_at, UTC).isoformat(timespec="milliseconds")
        yield f"{when} {line.level} {line.logger}: {line.message}\n".encode()


def _line_event(line: LogLine) -> dict[str, str]:
    body = LogLineOut.model_validate(line, from_attributes=True).model_dump()
    return {"event": "log", "id": f"{line.execution_id}-{line.seq}", "data": json.dumps(body)}


def resume_point(last_event_id: str | None) -> tuple[int | None, int]:
    """The execution and the last ``seq`` a client saw, from its ``Last-Event-ID``:
    ``"{execution_id}-{seq}"`` (what the stream sends) or a bare ``seq``.

    >>> resume_point("12-40"), resume_point("40"), resume_point(None), resume_point("x")
    ((12, 40), (None, 40), (None, 0), (None, 0))
    """
    if not last_event_id:
        return None, 0
    head, _, tail = last_event_id.strip().rpartition("-")
    if not tail.isdigit() or (head and not head.isdigit()):
        return None, 0  # not an id we sent: start from the first line
    return (int(head) if head else None), min(int(tail), 10**9)


LastEventId = Header(
    None, alias="Last-Event-ID", max_length=40, description="resume after this event"
)


@router.get("/api/v1/jobs/{job_id}/logs/stream")
async def stream_job_logs(
    request: Request,
    job_id: Id,
    _: User,
    execution_id: int | None = ExecutionQuery,
    last_event_id: str | None = LastEventId,
) -> EventSourceResponse:
    """Server-sent events: the execution's log lines, each once, in order (``id``:
    ``{execution_id}-{seq}``), then an ``end`` event once the execution is final and every
    line it stored was sent. Lines are read from the store, whichever instance or process
    runs the execution; a reconnect with ``Last-Event-ID`` resumes after that line (of that
    execution, even when a newer run began meanwhile)."""
    ctx = context_of(request)
    resumed, seen = resume_point(last_event_id)
    if execution_id is None and resumed is not None:
        execution_id = resumed
    elif resumed is not None and resumed != execution_id:
        seen = 0  # an id of another execution: this one from its start
    execution = await _execution_of(ctx, job_id, execution_id)
    poll = ctx.settings.log_poll_interval

    async def events() -> AsyncIterator[dict[str, str]]:
        nonlocal seen
        repository = ctx.job_store.executions
        while True:
            # The status first: lines are stored before the execution becomes final, so when
            # it was final here, the read below finds every line it will ever have.
            status = (await repository.get(execution.id)).status
            async for line in _stored_lines(ctx, execution.id, seen):
                seen = line.seq
                yield _line_event(line)
            if status is not ExecutionStatus.RUNNING:
                yield {"event": "end", "data": json.dumps({"status": status.value})}
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.shutdown.wait(), poll)
            if ctx.shutdown.is_set():
                return  # the client reconnects to another instance with Last-Event-ID

    return EventSourceResponse(events(), ping=15)
