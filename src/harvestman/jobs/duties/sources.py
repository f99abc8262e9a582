"""Source events (``jobs.events``) followed as they come: a source enabled or disabled through
another instance gets or loses its recurring job here at once (``Scheduler.source_changed``).
The reconciliation repairs what an event missed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harvestman.errors import HarvestmanError

if TYPE_CHECKING:
    from harvestman.jobs.events import Subscription
    from harvestman.jobs.scheduler import Scheduler

log = logging.getLogger(__name__)


class SourceFollower:
    """Follows ``scheduler.events`` (set at construction, or later by the API app): each run
    waits up to ``wait`` seconds for events and acts on them; without a subscription it tries
    to subscribe once per ``retry`` seconds. ``scheduler.listening`` is set while it follows."""

    name = "source events"
    leader_only = False

    def __init__(self, scheduler: Scheduler, *, retry: float, wait: float = 1.0) -> None:
        self.scheduler = scheduler
        self.retry = retry
        self.wait = wait
        self._subscription: Subscription | None = None

    @property
    def interval(self) -> float:
        return 0.0 if self._subscription is not None else self.retry

    async def run(self) -> int:
        if self._subscription is None:
            events = self.scheduler.events
            if events is None:  # nothing to follow (yet)
                return 0
            try:
                self._subscription = await events.subscribe()
            except HarvestmanError as exc:
                log.warning("scheduler: source events unavailable, retrying: %s", exc)
                return 0
            self.scheduler.listening.set()
        return await self.take(self._subscription)

    async def take(self, subscription: Subscription) -> int:
        """Act on the events that arrive within ``wait`` seconds (not this instance's own:
        the API acted on those already); how many."""
        scheduler = self.scheduler
        arrived = await subscription.get(self.wait)
        events = [e for e in arrived if e.origin != scheduler.instance_id]
        for event in events:
            log.info(
                "source %d %s: syncing its job",
                event.source_id,
                "enabled" if event.enabled else "disabled",
            )
            try:
                await scheduler.source_changed(event.source_id)
            except HarvestmanError as exc:  # the reconciliation repairs it later
                log.warning("source %d: could not sync its job: %s", event.source_id, exc)
            scheduler.counters["source_events"] += 1
        return len(events)

    async def close(self) -> None:
        self.scheduler.listening.clear()
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            await subscription.close()
