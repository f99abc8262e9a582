"""What a scheduler test stands on: a clock the test moves, a runner whose runs end at once, and
the service's scheduler built as serve builds it."""

from __future__ import annotations

import asyncio
from typing import Any

from harvestman.config import Settings
from harvestman.jobs.records import Execution, ExecutionResult, ExecutionStatus, Job, Source
from harvestman.jobs.scheduler import Runner, Scheduler
from harvestman.jobs.wiring import build_scheduler
from harvestman.store.jobs.db import JobStore
from storerows import NOW

HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


class IdleRunner:
    async def run(
        self, job: Job, source: Source, execution: Execution, stop: asyncio.Event
    ) -> ExecutionResult:
        return ExecutionResult(status=ExecutionStatus.COMPLETED)


def make_scheduler(
    store: JobStore, runner: Runner | None, *, settings: Settings | None = None, **parts: Any
) -> Scheduler:
    """``jobs.wiring``'s scheduler over ``store``, as serve builds it: keyword arguments that
    name a setting (``jobs_max_concurrent=2``) make the settings (without ``settings``), the
    others (``instance_id``, ``events``, ``log_capture``, ``dispatcher``) are its parts. Without
    ``settings`` it runs no data retention unless asked (``jobs_retention_interval``)."""
    # The retention is a test's own (test_jobs_retention): a loop here never runs it.
    values = {"jobs_retention_interval": None}
    values.update({k: parts.pop(k) for k in list(parts) if k in Settings.model_fields})
    assert settings is None or len(values) == 1, "settings or their values, not both"
    return build_scheduler(settings or Settings(**values), store, runner, **parts)  # type: ignore[arg-type]
