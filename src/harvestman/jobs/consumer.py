"""The consuming side: ``harvestman worker`` runs the executions it receives from the broker.

Each message is settled from what the store says (``ExecutionHandover.take``):

- **taken** (queued) or **taken over** (its holder stopped renewing for
  ``broker_takeover_seconds``: killed, or cut off): run with the scheduler's own code path
  (``Scheduler.adopt``: the same ``CrawlRunner``, log capture, next step and ``finish``). A
  resumed execution crawls the source's namespace where the former holder left it: its
  completed pages are not fetched again, the URLs it had leased come back when the crawler
  finds it dead (``crawl.liveness``), and the crawler waits for them (``worker_mode``).
- **held** by a holder that still renews it (the message came back because that holder's
  connection dropped, not the holder): looked at again every ``broker_renew_interval`` until
  the holder ends it (then gone) or stops renewing (then taken over). A message delivered
  for the first time that finds its execution held is a duplicate (``Dispatcher.republish``:
  the holder took it from the other message, which stays with it): acked and dropped.
- **gone** (final, cancelled while queued, unknown): acked and dropped.

The ack comes once the execution is final in the store; if its result could not be written,
the message is requeued and the execution taken over later. While the store cannot be
reached a worker keeps the messages it has and waits (``jobs.outage``: one line when the
outage begins, one when it ends) instead of requeueing them at once, and it takes over no
lock it has not itself watched go unrenewed while the store answered: a worker that was only
waiting for the database keeps its runs. A worker that is stopped
(SIGTERM) hands its runs back unfinished (``ExecutionHandover.hand_back``: the lock returns to
``queued:``) and requeues their messages: another worker resumes each at once.

Every ``broker_renew_interval`` the worker renews the locks of its runs in one statement and
stops those whose job was cancelled (``Scheduler.poll`` with no slots of its own): a cancel
reaches a run on another machine within that interval. The store is polled rather than a
fanout channel followed: the renewal is needed anyway, and a cancel cannot be missed by a
worker that was reconnecting.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from harvestman.errors import HarvestmanError
from harvestman.jobs.broker import Delivery, ExecutionQueue
from harvestman.jobs.outage import Outage
from harvestman.jobs.outcome import HANDBACK
from harvestman.jobs.scheduler import Scheduler
from harvestman.store.jobs.handover import Verdict

if TYPE_CHECKING:
    from harvestman.config import Settings
    from harvestman.coord import Coordinator
    from harvestman.store import ServiceStore

log = logging.getLogger(__name__)


class ExecutionConsumer:
    """Consumes ``queue`` and runs its executions with ``scheduler`` (built with
    ``max_concurrent=0``: it claims nothing itself)."""

    def __init__(
        self,
        queue: ExecutionQueue,
        scheduler: Scheduler,
        *,
        renew_interval: float = 2.0,
        takeover_after: float = 30.0,
    ) -> None:
        self.queue = queue
        self.scheduler = scheduler
        self.store = scheduler.store
        self.holder = scheduler.instance_id
        self.renew_interval = renew_interval
        self.takeover_after = takeover_after
        self.counters = {"taken": 0, "taken_over": 0, "dropped": 0, "requeued": 0, "waited": 0}
        self._stopping = asyncio.Event()
        self.clock = scheduler.clock
        # One store, one outage: the scheduler's runs report into it too, so a worker says
        # once that the store went away and once that it came back.
        self.outage = scheduler.outage = Outage("worker: the job store", self.clock)

    def stop(self) -> None:
        """Stop consuming; runs in progress end as the scheduler's do when it stops."""
        self._stopping.set()

    async def run(self) -> None:
        """Consume and renew until ``stop``; then hand the runs in progress back to the queue
        unfinished (another worker resumes each at once) and requeue their messages."""
        self.scheduler.logs.install()
        handlers: set[asyncio.Task[Verdict]] = set()
        try:
            async with asyncio.TaskGroup() as group:
                renewing = group.create_task(self._renew())

                async def on_delivery(delivery: Delivery) -> None:
                    handler = group.create_task(self.handle(delivery))
                    handlers.add(handler)
                    handler.add_done_callback(handlers.discard)

                tag = await self.queue.consume(on_delivery)  # failing, it ends the group
                await self._stopping.wait()
                await self.queue.cancel(tag)
                self.scheduler.stop()
                await self.scheduler.stop_runs(HANDBACK)
                if handlers:  # settling, or leaving a live holder's message (within a renewal)
                    await asyncio.wait(handlers)
                renewing.cancel()
        finally:
            self.scheduler.logs.uninstall()

    async def _renew(self) -> None:
        while True:
            try:
                await self.scheduler.poll()
                if self.outage.is_down:  # a poll with no runs may not have reached the store
                    await self.store.ping()
                self.outage.recovered()
            except HarvestmanError as exc:  # the store is away: said once, waited out
                self.outage.failed(exc)
            await asyncio.sleep(self.renew_interval)

    async def handle(self, delivery: Delivery) -> Verdict:
        """Settle one message: run its execution, or drop it; the verdict it ended with.

        While the store cannot be reached the message is kept (unacked: with every slot
        waiting, the worker takes no more) and taken again once the renewal loop finds the
        store back. A lock held by another worker is taken over only once this consumer has
        watched it unrenewed for ``takeover_after`` while the store answered: after an outage
        every lock looks old, and each live holder renews as soon as the store is back."""
        message = delivery.message
        watched: tuple[float, float] | None = None  # the lock's renewal time, since when seen
        while True:
            if self._stopping.is_set():  # for another worker
                await delivery.requeue()
                return Verdict.HELD
            matured = watched is not None and self.clock() - watched[1] >= self.takeover_after
            try:
                handover = await self.store.handover.take(
                    message.job_id,
                    message.execution_id,
                    self.holder,
                    takeover_after=self.takeover_after if matured else math.inf,
                    if_renewed_at=watched[0] if watched is not None else None,
                )
            except HarvestmanError as exc:  # the store is away: wait for it, keep the message
                self.outage.failed(exc)
                self.counters["waited"] += 1
                watched = None  # what was watched says nothing across the outage
                await self.outage.wait(self._stopping)
                continue
            if handover.verdict is Verdict.GONE:
                self.counters["dropped"] += 1
                await delivery.ack()
                return handover.verdict
            if handover.verdict is Verdict.HELD and not delivery.redelivered:
                # A live holder took it from another message: this one is a duplicate (a
                # republished claim); that holder's own message stays with it until the end.
                self.counters["dropped"] += 1
                await delivery.ack()
                return Verdict.GONE
            if handover.verdict is Verdict.HELD:
                renewed = handover.renewed_at or 0.0
                if watched is None or watched[0] != renewed:
                    watched = (renewed, self.clock())
                await asyncio.sleep(self.renew_interval)
                continue
            assert handover.claim is not None
            execution = handover.claim.execution
            if handover.log_seq:  # lines a former holder stored: number ours after them
                self.scheduler.logs.continue_after(execution.id, handover.log_seq)
            if handover.verdict is Verdict.TAKEN_OVER:  # said in the execution's own log
                with self.scheduler.logs.capture(execution.id):
                    log.warning(
                        "job %d: execution %d taken over from %s (its lock was not renewed)",
                        message.job_id,
                        execution.execution_number,
                        handover.holder,
                    )
            self.counters[handover.verdict.value] += 1
            await self.scheduler.adopt(handover.claim)
            await self._settle(delivery)
            return handover.verdict

    async def _settle(self, delivery: Delivery) -> None:
        while True:
            try:
                final = await self.store.handover.is_final(delivery.message.execution_id)
                break
            except HarvestmanError as exc:  # wait for the store rather than guess
                self.outage.failed(exc)
                if self._stopping.is_set():
                    final = False
                    break
                await self.outage.wait(self._stopping)
        if final:
            await delivery.ack()
        else:  # its result is not in the store: someone takes it over and runs it again
            self.counters["requeued"] += 1
            await delivery.requeue()


@contextlib.asynccontextmanager
async def consumer_for(
    settings: Settings, store: ServiceStore, coordinator: Coordinator | None = None
) -> AsyncIterator[ExecutionConsumer]:
    """The consumer ``harvestman worker`` runs when ``broker_url`` is set: its own job store
    on ``store``'s connection pool (``store.jobs()``), its connection to the broker, and runs
    that wait for the URLs a former holder had leased (``worker_mode``) instead of ending
    without them. The runs share
    the worker's ``coordinator`` (its Redis): the host gate that keeps every host's delay
    across workers, also between an execution and the one that resumes it elsewhere."""
    from harvestman.crawl.crawler import Crawler
    from harvestman.jobs.runner import CrawlRunner
    from harvestman.jobs.wiring import worker_scheduler

    queue = ExecutionQueue(
        settings.broker_url,
        settings.broker_queue_prefix,
        prefetch=settings.broker_prefetch,
        publish_timeout=settings.broker_publish_timeout,
    )
    async with store.jobs() as job_store, queue:
        crawler = functools.partial(
            Crawler, worker_mode=True, exit_when_done=True, coordinator=coordinator
        )
        runner = CrawlRunner(settings, store, crawler_factory=crawler)
        scheduler = worker_scheduler(settings, job_store, runner)
        yield ExecutionConsumer(
            queue,
            scheduler,
            renew_interval=settings.broker_renew_interval,
            takeover_after=settings.broker_takeover_seconds,
        )
