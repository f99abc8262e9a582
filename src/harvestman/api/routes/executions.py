"""Executions of a job, and their log lines: stored, or streamed live (SSE)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Query, Request, Response
from sse_starlette import EventSourceResponse

from harvestman.api import paging
from harvestman.api.context import ApiContext, context_of
from harvestman.api.errors import ApiError
from harvestman.api.params import Cursor, Id, Limit, Offset, User
from harvestman.api.schemas import MAX_ID, ExecutionOut, LogLineOut, Page
from harvestman.jobs import Execution, LogLine

router = APIRouter(tags=["executions"])

ExecutionState = Literal["running", "completed", "failed", "cancelled"]


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

    async def fetch(after: int | str | None) -> tuple[list[Any], int | str | None, int | None]:
        page = await repository.list(
            job_id,
            status=status,
            after=None if after is None else int(after),
            limit=limit,
            offset=offset,
        )
        return [ExecutionOut.of(e) for e in page.items], page.next_after, page.total

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
    return ExecutionOut.of(await context_of(request).job_store.executions.get(execution_id))


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


@router.get("/api/v1/jobs/{job_id}/logs")
async def job_logs(
    request: Request,
    job_id: Id,
    _: User,
    execution_id: int | None = ExecutionQuery,
    after: int = Query(0, ge=0, le=10**9, description="lines after this seq"),
    limit: int = Query(1000, ge=1, le=10_000),
) -> dict[str, object]:
    """An execution's stored log lines (lines of a run in progress are stored every poll)."""
    ctx = context_of(request)
    execution = await _execution_of(ctx, job_id, execution_id)
    lines = await ctx.job_store.executions.logs(execution.id, after=after, limit=limit)
    return {
        "job_id": job_id,
        "execution_id": execution.id,
        "status": execution.status.value,
        "lines": [LogLineOut.model_validate(line, from_attributes=True) for line in lines],
    }


def _line_event(line: LogLine) -> dict[str, str]:
    body = LogLineOut.model_validate(line, from_attributes=True).model_dump()
    return {"event": "log", "id": str(line.seq), "data": json.dumps(body)}


@router.get("/api/v1/jobs/{job_id}/logs/stream")
async def stream_job_logs(
    request: Request, job_id: Id, _: User, execution_id: int | None = ExecutionQuery
) -> EventSourceResponse:
    """Server-sent events: the stored lines, then live lines while the run lasts here, then an
    ``end`` event. A run on another instance is followed by re-reading the store."""
    ctx = context_of(request)
    execution = await _execution_of(ctx, job_id, execution_id)

    async def events() -> AsyncIterator[dict[str, str]]:
        capture = ctx.scheduler.logs if ctx.scheduler is not None else None
        live: AsyncIterator[LogLine] | None = None
        first: asyncio.Future[LogLine] | None = None
        if capture is not None and capture.is_capturing(execution.id):
            # Subscribe before reading the store, so no line falls between the two.
            live = capture.follow(execution.id)
            first = asyncio.ensure_future(anext(live))
            await asyncio.sleep(0)
        seen = 0
        try:
            for line in await ctx.job_store.executions.logs(execution.id, limit=10_000):
                seen = line.seq
                yield _line_event(line)
            if first is not None and live is not None:
                with contextlib.suppress(StopAsyncIteration):
                    line = await first
                    while True:
                        if line.seq > seen:
                            seen = line.seq
                            yield _line_event(line)
                        line = await anext(live)
        finally:
            if first is not None:
                first.cancel()
        after = await ctx.job_store.executions.logs(execution.id, after=seen, limit=10_000)
        for line in after:
            yield _line_event(line)
        final = await ctx.job_store.executions.get(execution.id)
        yield {"event": "end", "data": json.dumps({"status": final.status.value})}

    return EventSourceResponse(events(), ping=15)
