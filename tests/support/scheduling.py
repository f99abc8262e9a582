"""What a scheduler test stands on: a clock the test moves, and a runner whose runs end at once."""

from __future__ import annotations

import asyncio

from harvestman.jobs.records import Execution, ExecutionResult, ExecutionStatus, Job, Source
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
