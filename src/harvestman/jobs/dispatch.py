"""The publishing side: due jobs claimed in the store and published as execution messages.

With ``broker_url`` set, the leader's scheduler calls ``dispatch_due`` where it would start runs
itself, and the API's force-run and retry call ``dispatch`` for their job. A claim is the usual
compare-and-set (the job is running, its execution row open) under the holder
``publishing:<instance>``; once the broker confirmed its message it becomes
``queued:<instance>`` (``ExecutionHandover.mark_published``), and a worker takes it from there
(``ExecutionHandover.take``). A claim whose message the broker refused is undone, so the job
stays due and is published again later.

What was published is recorded rather than published first and claimed on delivery: the
claim is what keeps the job from being published twice by the next poll (and bounds the
queue), and it must exist before the message does. So a dispatcher that dies between the two
leaves claims marked ``publishing:``: the leader publishes them again (``republish``) once they
are older than ``broker_publish_timeout`` (a live dispatcher has confirmed or undone each by
then), within one poll of its taking the lead. A ``queued:`` claim waits for a worker as long as
it takes; one waiting ``broker_republish_seconds`` is published again (a message lost with a
queue or a broker's disk), never failed. A duplicate message is harmless: the execution's
lock decides (``jobs.consumer`` drops a fresh message whose execution a live worker holds).

At most ``max_queued`` executions wait in the broker: the backlog stays in the store, ordered
by due time, rather than in a queue that cannot be reordered or withdrawn.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from harvestman.jobs.broker import (
    PRIORITY_MANUAL,
    PRIORITY_SCHEDULED,
    ExecutionMessage,
    ExecutionQueue,
)
from harvestman.jobs.errors import BrokerUnavailable
from harvestman.jobs.records import Claim
from harvestman.store.jobs.db import JobStore
from harvestman.store.jobs.handover import publishing_holder

log = logging.getLogger(__name__)


class Dispatcher:
    """Claims due jobs and publishes one message per execution."""

    def __init__(
        self,
        store: JobStore,
        queue: ExecutionQueue,
        *,
        instance_id: str,
        max_queued: int = 1000,
        republish_after: float = 300.0,
        orphaned_after: float | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.instance_id = instance_id
        self.holder = publishing_holder(instance_id)
        self.max_queued = max_queued
        self.republish_after = republish_after
        # A live dispatcher confirms or undoes a claim within its publish timeout.
        self.orphaned_after = queue.publish_timeout if orphaned_after is None else orphaned_after
        self.published = 0
        self.republished = 0

    async def dispatch_due(self) -> list[Claim]:
        """Publish again what lapsed or was orphaned, then due jobs, earliest first, while
        fewer than ``max_queued`` wait."""
        await self.republish()
        room = self.max_queued - await self.store.handover.queued()
        claims = await self.store.locks.claim_due(self.holder, room)
        return await self._publish(claims, by_hand=False)

    async def dispatch(self, job_id: int) -> Claim | None:
        """Publish job ``job_id`` now if it is due and free (force-run, retry); None if not."""
        claims = await self.store.locks.claim_due(self.holder, 1, only=[job_id])
        published = await self._publish(claims, by_hand=True)
        return published[0] if published else None

    async def republish(self) -> list[Claim]:
        """Publish the claims a dead dispatcher left unpublished, and those that waited in the
        queue past ``republish_after``; each is marked published again (its time restarts)."""
        claims = await self.store.handover.to_republish(
            self.instance_id,
            orphaned_after=self.orphaned_after,
            lapsed_after=self.republish_after,
            limit=self.max_queued,
        )
        sent: list[Claim] = []
        try:
            for claim in claims:
                await self._send(claim, PRIORITY_SCHEDULED)
                sent.append(claim)
        finally:  # what reached the broker is recorded, even when the broker went away
            await self.store.handover.mark_published(sent, self.instance_id)
        if sent:
            log.warning("published %d waiting executions again (no message known)", len(sent))
        self.republished += len(sent)
        return sent

    async def _send(self, claim: Claim, priority: int) -> None:
        await self.queue.publish(ExecutionMessage(claim.job.id, claim.execution.id), priority)
        log.info("job %d: execution %d published", claim.job.id, claim.execution.execution_number)

    async def _publish(self, claims: Sequence[Claim], *, by_hand: bool) -> list[Claim]:
        sent: list[Claim] = []
        try:
            for claim in claims:  # (the job as it was before the claim)
                manual = by_hand or claim.job.made_due_by_hand
                await self._send(claim, PRIORITY_MANUAL if manual else PRIORITY_SCHEDULED)
                sent.append(claim)
                self.published += 1
        except BrokerUnavailable:
            for unsent in claims[len(sent) :]:
                await self.store.handover.unclaim(unsent)
            raise
        finally:
            await self.store.handover.mark_published(sent, self.instance_id)
        return sent
