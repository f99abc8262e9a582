"""The publishing side: due jobs claimed in the store and published as execution messages.

With ``broker_url`` set, the leader's scheduler calls ``dispatch_due`` where it would start runs
itself, and the API's force-run and retry call ``dispatch`` for their job. A claim is the usual
compare-and-set (the job is running, its execution row open) under the holder
``queued:<instance>``; a worker takes it from there (``ExecutionHandover.take``). A claim whose
message the broker refused is undone, so the job stays due and is published again later.

At most ``max_queued`` executions wait in the broker: the backlog stays in the store, ordered
by due time, rather than in a queue that cannot be reordered or withdrawn, and a queued claim
is taken long before the stale-lock sweep would count it as lost.
"""

from __future__ import annotations

import logging

from harvestman.jobs.broker import (
    PRIORITY_MANUAL,
    PRIORITY_SCHEDULED,
    ExecutionMessage,
    ExecutionQueue,
)
from harvestman.jobs.errors import BrokerUnavailable
from harvestman.jobs.records import Claim
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.handover import queued_holder

log = logging.getLogger(__name__)


class Dispatcher:
    """Claims due jobs and publishes one message per execution."""

    def __init__(
        self, store: JobStore, queue: ExecutionQueue, *, instance_id: str, max_queued: int = 1000
    ) -> None:
        self.store = store
        self.queue = queue
        self.holder = queued_holder(instance_id)
        self.max_queued = max_queued
        self.published = 0

    async def dispatch_due(self) -> list[Claim]:
        """Publish due jobs, earliest first, while fewer than ``max_queued`` wait."""
        room = self.max_queued - await self.store.handover.queued()
        claims = await self.store.locks.claim_due(self.holder, room)
        return await self._publish(claims, PRIORITY_SCHEDULED)

    async def dispatch(self, job_id: int) -> Claim | None:
        """Publish job ``job_id`` now if it is due and free (force-run, retry); None if not."""
        claims = await self.store.locks.claim_due(self.holder, 1, only=[job_id])
        published = await self._publish(claims, PRIORITY_MANUAL)
        return published[0] if published else None

    async def _publish(self, claims: list[Claim], priority: int) -> list[Claim]:
        for i, claim in enumerate(claims):
            try:
                await self.queue.publish(
                    ExecutionMessage(claim.job.id, claim.execution.id), priority
                )
            except BrokerUnavailable:
                for unsent in claims[i:]:
                    await self.store.handover.unclaim(unsent)
                raise
            self.published += 1
            log.info(
                "job %d: execution %d published", claim.job.id, claim.execution.execution_number
            )
        return claims
